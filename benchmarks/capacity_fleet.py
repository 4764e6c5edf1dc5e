#!/usr/bin/env python3
"""capacity over a fleet: 500 compute nodes x 10 flavors, target <= 5 s.

Replicates the compute node of the test cloud's recorded answers
(tests/fixtures/capacity/testcloud-libvirt-pinned.json, through
tests/unit/capacity/replay.py) 500 times, with 10 flavors (pinned and
shared, 1 to 8 vCPUs, some on huge pages), gives every node the recorded
host's facts, and times ``kvmtune.capacity.compute`` (kvmtune's own time:
the replay answers at once, a real Placement adds its latency per call).
Prints the API calls too, for 250 and 500 nodes: they grow with nodes, not
nodes x flavors (issue 21).

  python benchmarks/capacity_fleet.py [-n 3] [--hosts 500]
"""

import argparse
import copy
import os
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_S = 5.0


def flavors(recording):
    key = 'compute /flavors/detail?is_public=none'
    base = recording[key]['flavors'][0]
    made = []
    for i, vcpus in enumerate((1, 2, 4, 8, 1, 2, 4, 8, 2, 4)):
        flavor = copy.deepcopy(base)
        flavor.update(name=f'bench-{i}', vcpus=vcpus, ram=512 * vcpus)
        flavor['extra_specs'] = (
            {} if i >= 8 else
            {'hw:cpu_policy': 'dedicated',
             **({'hw:mem_page_size': 'large'} if i >= 4 else {})})
        made.append(flavor)
    recording[key] = {'flavors': made}
    return [f['name'] for f in made]


def run(hosts, names, recording, facts):
    from kvmtune import capacity
    from kvmtune.tuning import plan as plans
    from tests.unit.capacity.replay import Replay

    tuned = [plans.Plan(profile='bench', facts_source='bench', nova_conf={
        'compute': {'cpu_dedicated_set': '1', 'cpu_shared_set': '0'}})]
    cloud = Replay(recording, hosts=hosts)
    by_host = {f'compute-{i:04d}': facts for i in range(hosts)}
    start = time.perf_counter()
    result = capacity.compute(cloud, names, facts_by_host=by_host,
                              plans_for=lambda f: tuned)
    return time.perf_counter() - start, cloud.calls, result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('-n', type=int, default=3)
    parser.add_argument('--hosts', type=int, default=500)
    args = parser.parse_args()
    sys.path.insert(0, REPO)
    from tests.unit.capacity.replay import load

    recording = load('testcloud-libvirt-pinned.json')
    names = flavors(recording)
    facts = load('vm.json')
    times = []
    for _ in range(args.n):
        seconds, calls, result = run(args.hosts, names, recording, facts)
        times.append(seconds)
    _, half_calls, _ = run(args.hosts // 2, names, recording, facts)
    _, one_flavor_calls, _ = run(args.hosts, names[:1], recording, facts)
    median = statistics.median(times)
    print(f'capacity: {args.hosts} nodes x {len(names)} flavors = '
          f'{len(result.fits)} counts, median {median:.3f} s (min '
          f'{min(times):.3f}, max {max(times):.3f}, {args.n} runs; target '
          f'<= {TARGET_S:.0f} s: {"met" if median <= TARGET_S else "MISSED"})')
    print(f'API calls: {calls} for {args.hosts} nodes x {len(names)} '
          f'flavors, {one_flavor_calls} for {args.hosts} x 1 flavor, '
          f'{half_calls} for {args.hosts // 2} x {len(names)}')
    print(f'totals: {dict(sorted(result.by_flavor().items()))}')


if __name__ == '__main__':
    main()
