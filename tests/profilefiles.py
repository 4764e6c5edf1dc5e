"""Profile files for the tests of kvmtune.tuning.profiles and the
``kvmtune profile`` commands: the profiles kvmtune ships, a valid
profile, and a writer of any text as a profile file."""

import textwrap

SHIPPED = ['baseline', 'cpu-pinning', 'hugepages', 'io-tuned',
           'nested-host', 'net-tuned', 'pinned-hugepages',
           'pinned-hugepages-ept']

GOOD = """\
    description: test profile
    source: doc/sources.md [S4]
    tuners:
      - name: cpu_pinning
        params: {thread_policy: isolate}
      - ept
    """


def write(tmp_path, name, text):
    """``text`` (dedented) as the file ``name`` in ``tmp_path``; its path."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)
