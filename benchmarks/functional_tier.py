#!/usr/bin/env python3
"""What the functional tier costs: cloud up-time, services' memory, wall time.

    python benchmarks/functional_tier.py [--no-run] [-- PYTEST ARGS]

PYTEST ARGS replace the default target ``tests/functional``.

Reads the test cloud's recorded timings ($KVMTUNE_CLOUD_DIR/timings.json,
written by ``tests/functional/cloud/cloud up``), sums the memory (PSS) of
the processes that cloud started, per service, as ``cloud status`` lists
them, then runs ``pytest tests/functional`` and reports its wall
time and outcome. With --no-run only the first two are printed.
"""

import argparse
import collections
import json
import os
import pathlib
import re
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
CLOUD_DIR = pathlib.Path(os.environ.get('KVMTUNE_CLOUD_DIR',
                                        '/var/lib/kvmtune-cloud'))
CLOUD = REPO / 'tests' / 'functional' / 'cloud' / 'cloud'


def cloud_timings():
    path = CLOUD_DIR / 'timings.json'
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return {'error': f'{path}: {exc}'}


_STATUS_ROW = re.compile(r'^\s+(\d+) (.{15}) rss\s+([\d.]+) MiB pss\s+'
                         r'([\d.]+) MiB\s+(.*)$')
_STATUS_TOTAL = re.compile(r'^total: (\d+) processes, rss (\d+) MiB, '
                           r'pss (\d+) MiB')


def _service(name, command):
    """Which service a row of `cloud status` belongs to (workers have no
    name there; their process title says it)."""
    if name:
        return name
    bracket = re.search(r'\[kvmtune-([\w-]+)\]', command)
    if bracket:
        return bracket.group(1)
    return command.split(':')[0].split()[0] if command else '?'


def services_memory():
    """({service: [processes, PSS MiB]}, total line) from `cloud status`,
    which knows which processes the cloud started."""
    done = subprocess.run([str(CLOUD), 'status'], capture_output=True,
                          text=True, timeout=120)
    found = collections.defaultdict(lambda: [0, 0.0])
    total = None
    for line in done.stdout.splitlines():
        row = _STATUS_ROW.match(line)
        if row:
            entry = found[_service(row.group(2).strip(), row.group(5))]
            entry[0] += 1
            entry[1] += float(row.group(4))
        elif _STATUS_TOTAL.match(line):
            total = line.strip()
    return dict(found), total or done.stdout.strip()[-200:]


def run_tier(pytest_args):
    # Arguments replace the default target (e.g. one file of the tier).
    argv = [sys.executable, '-m', 'pytest', '-q', '-p', 'no:warnings',
            *(pytest_args or ['tests/functional'])]
    start = time.monotonic()
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
    wall = time.monotonic() - start
    summary = (done.stdout.strip().splitlines() or ['(no output)'])[-1]
    return wall, done.returncode, summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--no-run', action='store_true',
                        help='Do not run the tier, only the cloud figures.')
    parser.add_argument('pytest_args', nargs='*')
    args = parser.parse_args()

    print(f'cloud dir: {CLOUD_DIR}')
    timings = cloud_timings()
    print('cloud timings (recorded by `cloud up`):')
    for key, value in sorted(timings.items()):
        print(f'  {key}: {json.dumps(value)}')
    memory, total = services_memory()
    print(f'services memory (`cloud status`): {total}')
    for name, (count, mib) in sorted(memory.items(), key=lambda i: -i[1][1]):
        print(f'  {name:<18} {count:>3} processes {mib:>8.0f} MiB PSS')
    if args.no_run:
        return 0
    wall, rc, summary = run_tier(args.pytest_args)
    target = ' '.join(args.pytest_args) or 'tests/functional'
    print(f'functional tier ({target}): {wall:.1f} s wall, pytest exit '
          f'{rc}: {summary}')
    return rc


if __name__ == '__main__':
    sys.exit(main())
