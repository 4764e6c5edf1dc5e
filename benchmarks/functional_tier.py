#!/usr/bin/env python3
"""What the functional tier costs: cloud up-time, services' memory, wall time.

    python benchmarks/functional_tier.py [--no-run] [-- PYTEST ARGS]

Reads the test cloud's recorded timings ($KVMTUNE_CLOUD_DIR/timings.json,
written by ``tests/functional/cloud/cloud up``), sums the memory (PSS) of
the processes that cloud started (they carry KVMTUNE_CLOUD_OWNER in their
environment), then runs ``pytest tests/functional`` and reports its wall
time and outcome. With --no-run only the first two are printed.
"""

import argparse
import collections
import json
import os
import pathlib
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
CLOUD_DIR = pathlib.Path(os.environ.get('KVMTUNE_CLOUD_DIR',
                                        '/var/lib/kvmtune-cloud'))
OWNER_ENV = b'KVMTUNE_CLOUD_OWNER='


def cloud_timings():
    path = CLOUD_DIR / 'timings.json'
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return {'error': f'{path}: {exc}'}


def _owner(pid):
    try:
        with open(f'/proc/{pid}/environ', 'rb') as f:
            for item in f.read().split(b'\0'):
                if item.startswith(OWNER_ENV):
                    return item[len(OWNER_ENV):].decode()
    except OSError:
        pass
    return None


def _pss_kb(pid):
    try:
        with open(f'/proc/{pid}/smaps_rollup') as f:
            for line in f:
                if line.startswith('Pss:'):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _service(pid):
    """A short name for what the process runs (gunicorn app, binary)."""
    try:
        with open(f'/proc/{pid}/cmdline', 'rb') as f:
            argv = [a.decode(errors='replace')
                    for a in f.read().split(b'\0') if a]
    except OSError:
        return '?'
    for arg in argv:
        if arg.startswith('kvmtune_wsgi:') or arg.endswith(':application'):
            return 'gunicorn ' + arg.split(':')[0]
    words = [os.path.basename(a) for a in argv[:3]]
    for word in words:
        if word.startswith(('nova-', 'glance-', 'keystone', 'placement',
                            'libvirtd', 'virtlogd', 'privsep', 'mariadbd',
                            'beam', 'qemu')):
            return word
    return ' '.join(words)[:40]


def services_memory():
    """{service: (processes, PSS KiB)} of the cloud's processes."""
    root = str(CLOUD_DIR)
    found = collections.defaultdict(lambda: [0, 0])
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            owner = _owner(entry)
            if owner and os.path.realpath(owner) == os.path.realpath(root):
                row = found[_service(entry)]
                row[0] += 1
                row[1] += _pss_kb(entry)
    return dict(found)


def run_tier(pytest_args):
    argv = [sys.executable, '-m', 'pytest', '-q', 'tests/functional',
            *pytest_args]
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
    memory = services_memory()
    total = sum(kb for _, kb in memory.values())
    print(f'services memory (PSS): {total / 1024:.0f} MiB in '
          f'{sum(n for n, _ in memory.values())} processes')
    for name, (count, kb) in sorted(memory.items(), key=lambda i: -i[1][1]):
        print(f'  {name:<32} {count:>3} procs {kb / 1024:>8.1f} MiB')
    if args.no_run:
        return 0
    wall, rc, summary = run_tier(args.pytest_args)
    print(f'functional tier: {wall:.1f} s wall, pytest exit {rc}: {summary}')
    return rc


if __name__ == '__main__':
    sys.exit(main())
