"""Output the flavor commands share (apply, diff, remove).

Not a sub-command: kvmtune.cli lists its commands by module name.
"""


def print_diff(diff):
    """One indented line per extra-spec change: + added, ~ changed,
    - removed (kvmtune.cloud.flavors.SpecDiff.lines)."""
    for line in diff.lines():
        print(f'  {line}')
