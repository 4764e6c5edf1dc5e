#!/usr/bin/env python3
"""How long ``kvmtune host inspect`` takes, over a bare interpreter start.

Operators run ``host inspect`` on every compute host, so its cost is start-up
plus reading /proc and /sys. This runs it and ``python -c pass`` (the floor
any Python command pays) N times each, alternating, and prints the median and
mean of both and their difference. Target: under 0.3 s over the floor.

By default it inspects the largest real capture in
tests/fixtures/hosts/real (the one with the most CPU directories: 256
CPUs in 64 NUMA nodes); ``--live`` inspects this host instead. It also
prints how long ``kvmtune.facts.gather`` alone takes on that tree (median,
in this process), which is the part the topology readers cost.

  python benchmarks/inspect_time.py [-n 20] [--kvmtune PATH]
                                    [--root DIR | --live]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time


REAL = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))), 'tests', 'fixtures', 'hosts', 'real')
TARGET_S = 0.3


def largest_capture():
    """The real capture with the most cpuN directories."""
    def cpus(name):
        path = os.path.join(REAL, name, 'sys/devices/system/cpu')
        return sum(1 for entry in os.listdir(path)
                   if entry.startswith('cpu') and entry[3:].isdigit())
    names = [name for name in os.listdir(REAL)
             if os.path.isdir(os.path.join(REAL, name, 'sys'))]
    return os.path.join(REAL, max(sorted(names), key=cpus))


def gather_median(root, runs):
    from kvmtune import facts
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        facts.gather(root, probe_kvm=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


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
    where = parser.add_mutually_exclusive_group()
    where.add_argument('--root', help='the captured tree to inspect '
                                      '(default: the largest real capture)')
    where.add_argument('--live', action='store_true',
                       help='inspect this host')
    args = parser.parse_args()
    if not args.live and not args.root:
        args.root = largest_capture()
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
    if args.root:
        print(f'  {"facts.gather alone, in process":<40} median '
              f'{gather_median(args.root, args.n) * 1000:7.1f} ms')
    over = cmd_med - floor_med
    print(f'target: under {TARGET_S * 1000:.0f} ms over the floor on '
          f'{args.root or "this host"}: '
          f'{"met" if over < TARGET_S else "NOT met"}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
