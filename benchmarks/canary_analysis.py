#!/usr/bin/env python3
"""The canary gate's analysis over a fleet: 1,000 hosts x 2 metrics x 30
values per host and moment, target <= 10 s.

Each host's records are made, filled and judged as the rollout's measure
step does (kvmtune.rollout.measure_record: begin, add per VM and repeat,
judge), with seeded lognormal samples (canary +8 %, the control flat,
both 10 % slower after: a drift), 2,000 bootstrap resamples per record
(kvmtune.rollout.canary.DEFAULT_RESAMPLES). Then the report's rows and
page (kvmtune.report.canary_page) for the largest fleet. Prints the
time at 100, 300 and 1,000 hosts (it should grow linearly: one
analysis per record), wall clock and this process's CPU time (on a
machine other jobs load, the CPU time is the analysis' own cost), and
the verdicts, so a wrong result is seen.

Pure Python (kvmtune has no numpy on a compute host): each resample's
median is drawn from its exact distribution (kvmtune.stats.median_table)
instead of resampling 30 values and sorting them.

  python benchmarks/canary_analysis.py [--hosts 100 300 1000] [-n 3]
"""

import argparse
import collections
import math
import os
import random
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
TARGET_S = 10.0
TARGET_HOSTS = 1000


def _values(rng, median, n, sigma=0.04):
    return [(f'vm{i % 10}', i // 10, median * math.exp(rng.gauss(0, sigma)))
            for i in range(n)]


def fleet_samples(hosts, n):
    """{host: {(workload, metric): {(side, moment): values}}}, made
    before the clock starts."""
    rng = random.Random(48)
    out = {}
    for h in range(hosts):
        per = {}
        for workload, metric, base in (('fio-randread', 'iops', 52000.0),
                                       ('iperf3', 'gbit_s', 9.4)):
            per[(workload, metric)] = {
                ('canary', 'before'): _values(rng, base, n),
                ('canary', 'after'): _values(rng, base * 1.08 * 0.9, n),
                ('control', 'before'): _values(rng, base, n),
                ('control', 'after'): _values(rng, base * 0.9, n)}
        out[f'compute-{h:04d}'] = per
    return out


def analyse(samples, measure):
    from kvmtune.rollout import measure_record as mr

    data = mr.empty()
    for host, per in samples.items():
        for (workload, metric), groups in per.items():
            record = mr.begin(data, host, 'control-0', workload, metric,
                              measure, provider='kvmtune bench',
                              plan_hash='sha256:p', facts_hash='sha256:f')
            for (side, moment), values in groups.items():
                mr.add(record, side, moment, values)
            mr.judge(record)
    return data


def main():
    from kvmtune.report import canary_page
    from kvmtune import stats
    from kvmtune.tuning import measure as measure_mod

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--hosts', type=int, nargs='+',
                        default=[100, 300, TARGET_HOSTS])
    parser.add_argument('--samples', type=int, default=30)
    parser.add_argument('-n', type=int, default=3,
                        help='runs per fleet size (the median is shown)')
    args = parser.parse_args()
    measure = measure_mod.parse(
        {'workloads': ['fio-randread', 'iperf3'],
         'band': {'iops': '>= -5%', 'gbit_s': '>= -5%'},
         'samples': args.samples}, 'benchmark')
    stats.median_table(args.samples)   # once per size, cached
    times = {}
    data = None
    for hosts in args.hosts:
        samples = fleet_samples(hosts, args.samples)
        runs, cpu = [], []
        for _ in range(args.n):
            start, start_cpu = time.perf_counter(), time.process_time()
            data = analyse(samples, measure)
            runs.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        times[hosts] = statistics.median(runs)
        verdicts = collections.Counter(
            r['verdict'] for e in data['hosts'].values()
            for r in e['metrics'].values())
        print(f'{hosts:5d} hosts x 2 metrics x {args.samples} values a side:'
              f' {times[hosts]:6.2f} s (median of {args.n}; CPU '
              f'{statistics.median(cpu):.2f} s; '
              f'{times[hosts] / (2 * hosts) * 1000:.2f} ms a record) '
              f'verdicts {dict(sorted(verdicts.items()))}')
    first, last = args.hosts[0], args.hosts[-1]
    if last != first:
        growth = times[last] / times[first]
        print(f'growth {first} -> {last} hosts: x{growth:.1f}'
              f' for x{last / first:.1f} hosts')
    if TARGET_HOSTS in times:
        t = times[TARGET_HOSTS]
        print(f'{TARGET_HOSTS} hosts: {t:.2f} s (target <= {TARGET_S:.0f} s:'
              f' {"met" if t <= TARGET_S else "MISSED"})')
    start = time.perf_counter()
    rows = canary_page.rows(data)
    page = canary_page.html_page(data, 'benchmark')
    print(f'report of {last} hosts: {len(rows)} rows, page '
          f'{len(page) / 1e6:.1f} MB in {time.perf_counter() - start:.2f} s')


if __name__ == '__main__':
    main()
