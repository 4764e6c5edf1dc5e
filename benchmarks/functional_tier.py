#!/usr/bin/env python3
"""What the functional tier costs: cloud up-time, services' memory, wall time.

    python benchmarks/functional_tier.py [--no-run] [-- PYTEST ARGS]

PYTEST ARGS replace the default target ``tests/functional``.

Reads the test cloud's recorded timings ($KVMTUNE_CLOUD_DIR/timings.json,
written by ``kvmtune cloud up``), sums the memory (PSS) of the processes
that cloud started, per service, from what ``kvmtune cloud status`` lists
(kvmtune.testcloud.api.status), then runs ``pytest tests/functional`` and
reports its wall time and outcome. With --no-run only the first two are
printed.
"""

import argparse
import collections
import json
import pathlib
import re
import subprocess
import sys
import time

from kvmtune.testcloud import api

REPO = pathlib.Path(__file__).resolve().parents[1]


def cloud_timings(layout):
    path = pathlib.Path(layout.timings)
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return {'error': f'{path}: {exc}'}


def _service(name, command):
    """Which service a process of `cloud status` belongs to (workers have
    no name there; their process title says it)."""
    if name:
        return name
    bracket = re.search(r'\[kvmtune-([\w-]+)\]', command)
    if bracket:
        return bracket.group(1)
    return command.split(':')[0].split()[0] if command else '?'


def services_memory(layout):
    """({service: [processes, PSS MiB]}, total line) from the cloud's
    status, which knows which processes the cloud started."""
    status = api.status(layout)
    if status is None:
        return {}, f'no cloud up in {layout.root}'
    found = collections.defaultdict(lambda: [0, 0.0])
    for proc in status['processes']:
        entry = found[_service(proc['name'], proc['cmdline'])]
        entry[0] += 1
        entry[1] += proc['pss_kb'] / 1024
    total = (f"{len(status['processes'])} processes, rss "
             f"{status['rss_kb'] / 1024:.0f} MiB, pss "
             f"{status['pss_kb'] / 1024:.0f} MiB")
    return dict(found), total


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

    layout = api.layout()
    print(f'cloud dir: {layout.root}')
    timings = cloud_timings(layout)
    print('cloud timings (recorded by `cloud up`):')
    for key, value in sorted(timings.items()):
        print(f'  {key}: {json.dumps(value)}')
    memory, total = services_memory(layout)
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
