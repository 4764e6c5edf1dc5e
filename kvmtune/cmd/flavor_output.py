"""Output the flavor commands share (apply, diff, remove).

Not a sub-command: kvmtune.cli lists its commands by module name.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvmtune.openstack.flavors import SpecDiff


def print_diff(diff: 'SpecDiff') -> None:
    """One indented line per extra-spec change: + added, ~ changed,
    - removed (kvmtune.openstack.flavors.SpecDiff.lines)."""
    for line in diff.lines():
        print(f'  {line}')
