#!/usr/bin/env python3
"""How long ``kvmtune host inspect`` takes, over a bare interpreter start.

Operators run ``host inspect`` on every compute host, so its cost is start-up
plus reading /proc and /sys. This runs it and ``python -c pass`` (the floor
any Python command pays) N times each, alternating, and prints the median and
mean of both and their difference. Target: under 0.3 s over the floor.

  python benchmarks/inspect_time.py [-n 20] [--kvmtune PATH] [--root DIR]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time


def timed(argv):
    start = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f'{" ".join(argv)} failed ({proc.returncode}): '
                 f'{proc.stderr.strip()}')
    return elapsed


def default_kvmtune():
    """The console script beside this interpreter, else on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), 'kvmtune')
    return beside if os.path.exists(beside) else shutil.which('kvmtune')


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('-n', type=int, default=20, help='runs of each')
    parser.add_argument('--kvmtune', default=default_kvmtune(),
                        help='the kvmtune console script to time')
    parser.add_argument('--root', help='inspect a captured tree instead')
    args = parser.parse_args()
    if not args.kvmtune:
        sys.exit('no kvmtune console script found; give --kvmtune PATH')
    inspect = [args.kvmtune, 'host', 'inspect', '--format', 'json']
    if args.root:
        inspect += ['--root', args.root]
    floor = [sys.executable, '-c', 'pass']
    results = {'python -c pass': [], ' '.join(inspect[1:]): []}
    for _ in range(args.n):
        results['python -c pass'].append(timed(floor))
        results[' '.join(inspect[1:])].append(timed(inspect))
    print(f'{args.n} runs each, {sys.executable} ({sys.version.split()[0]})')
    stats = {}
    for name, times in results.items():
        stats[name] = (statistics.median(times), statistics.mean(times))
        print(f'  {name:<40} median {stats[name][0] * 1000:7.1f} ms  '
              f'mean {stats[name][1] * 1000:7.1f} ms')
    (floor_med, floor_mean), (cmd_med, cmd_mean) = stats.values()
    print(f'  {"difference (kvmtune - floor)":<40} median '
          f'{(cmd_med - floor_med) * 1000:7.1f} ms  mean '
          f'{(cmd_mean - floor_mean) * 1000:7.1f} ms')
    return 0


if __name__ == '__main__':
    sys.exit(main())
