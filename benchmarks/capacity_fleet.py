#!/usr/bin/env python3
"""capacity over a fleet: 500 compute nodes x 10 flavors, target <= 5 s.

Replicates the compute node of the test cloud's recorded answers
(tests/fixtures/capacity/testcloud-libvirt-pinned.json, through
tests/unit/capacity/replay.py) 500 times, and times
``kvmtune.capacity.compute`` (kvmtune's own time: the replay answers at
once, a real Placement adds its latency per call). Prints the API calls
too, for 250 and 500 nodes: they grow with nodes, not nodes x flavors
(tests/unit/capacity/test_placement.py pins it).

Each node is large enough that every flavor fits (a shared NUMA flavor's
count once never returned: tests/unit/capacity/test_numa.py pins it): the
shape of the test cloud's second compute (kvmtune/testcloud/files/hosts/
intel-2s-smt-ept-1g.json: 2 nodes x 20 cores x 2 threads, 1 GiB pages)
with 4096 x 2 MiB pages per node added (stated: the capture has none), the
first core of each node as cpu_shared_set and every other CPU dedicated,
and the recorded node's Placement inventory scaled to it (PCPU 76, VCPU 4
at 16.0, its memory). The 10 flavors: pinned on small, large and 1 GiB
pages (1 and 2 NUMA nodes), thread policy require, emulator threads
isolate on 2 nodes, mixed, shared with hw:numa_nodes=1 and =2, shared on
2 MiB pages, and a plain shared one.

  python benchmarks/capacity_fleet.py [-n 3] [--hosts 500]
"""

import argparse
import copy
import json
import os
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_S = 5.0
SHAPE = os.path.join(REPO, 'kvmtune', 'testcloud', 'files', 'hosts',
                     'intel-2s-smt-ept-1g.json')
FLAVORS = [
    (2, 2048, {'hw:cpu_policy': 'dedicated'}),
    (4, 4096, {'hw:cpu_policy': 'dedicated', 'hw:mem_page_size': 'large'}),
    (8, 8192, {'hw:cpu_policy': 'dedicated', 'hw:mem_page_size': '1GB',
               'hw:numa_nodes': '2'}),
    (4, 4096, {'hw:cpu_policy': 'dedicated',
               'hw:cpu_thread_policy': 'require'}),
    (4, 4096, {'hw:cpu_policy': 'dedicated', 'hw:numa_nodes': '2',
               'hw:emulator_threads_policy': 'isolate'}),
    (4, 4096, {'hw:cpu_policy': 'mixed', 'hw:cpu_dedicated_mask': '^0'}),
    (2, 2048, {'hw:numa_nodes': '1'}),
    (4, 4096, {'hw:numa_nodes': '2'}),
    (2, 2048, {'hw:mem_page_size': '2MB'}),
    (1, 1024, {}),
]


def shape():
    """(facts, dedicated CPUs, shared CPUs) of each simulated node."""
    with open(SHAPE) as f:
        facts = json.load(f)
    for node in facts['numa']['nodes']:
        for pool in node['hugepages']:
            if pool['size_kb'] == 2048:
                pool['total'] = pool['free'] = 4096
    siblings = {c: set(g) for g in facts['cpu']['thread_siblings']
                for c in g}
    shared = set()
    for node in facts['numa']['nodes']:
        shared |= siblings[min(node['cpus'])]
    return facts, set(facts['cpu']['online']) - shared, shared


def scaled(recording, facts, dedicated, shared):
    """The recorded node's Placement answers, for the simulated shape."""
    for key, body in recording.items():
        if key.endswith('/inventories'):
            inv = body['inventories']
            memory = sum(n['memory_mb'] for n in facts['numa']['nodes'])
            inv['PCPU'].update(total=len(dedicated),
                               max_unit=len(dedicated))
            inv['VCPU'] = dict(inv['PCPU'], total=len(shared),
                               max_unit=len(shared), allocation_ratio=16.0)
            inv['MEMORY_MB'].update(total=memory, max_unit=memory,
                                    reserved=4096, allocation_ratio=1.0)
            inv['DISK_GB'].update(total=10000, max_unit=10000)
        elif key.endswith('/traits'):
            body['traits'] = sorted(set(body['traits'])
                                    | {'HW_CPU_HYPERTHREADING'})


def flavors(recording):
    key = 'compute /flavors/detail?is_public=none'
    base = recording[key]['flavors'][0]
    made = []
    for i, (vcpus, ram, specs) in enumerate(FLAVORS):
        flavor = copy.deepcopy(base)
        flavor.update(name=f'bench-{i}', vcpus=vcpus, ram=ram, disk=1)
        flavor['extra_specs'] = dict(specs)
        made.append(flavor)
    recording[key] = {'flavors': made}
    return [f['name'] for f in made]


def run(hosts, names, recording, facts, dedicated, shared):
    from kvmtune import capacity
    from kvmtune.facts.cpulist import format_cpulist
    from kvmtune.tuning import plan as plans
    from tests.unit.capacity.replay import Replay

    tuned = [plans.Plan(profile='bench', facts_source='bench', nova_conf={
        'compute': {'cpu_dedicated_set': format_cpulist(dedicated),
                    'cpu_shared_set': format_cpulist(shared)}})]
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
    facts, dedicated, shared = shape()
    scaled(recording, facts, dedicated, shared)
    node = (recording, facts, dedicated, shared)
    times = []
    for _ in range(args.n):
        seconds, calls, result = run(args.hosts, names, *node)
        times.append(seconds)
    _, half_calls, _ = run(args.hosts // 2, names, *node)
    _, one_flavor_calls, _ = run(args.hosts, names[:1], *node)
    median = statistics.median(times)
    print(f'capacity: {args.hosts} nodes x {len(names)} flavors = '
          f'{len(result.fits)} counts, median {median:.3f} s (min '
          f'{min(times):.3f}, max {max(times):.3f}, {args.n} runs; target '
          f'<= {TARGET_S:.0f} s: {"met" if median <= TARGET_S else "MISSED"})')
    print(f'API calls: {calls} for {args.hosts} nodes x {len(names)} '
          f'flavors, {one_flavor_calls} for {args.hosts} x 1 flavor, '
          f'{half_calls} for {args.hosts // 2} x {len(names)}')
    print(f'totals: {dict(sorted(result.by_flavor().items()))}')
    per_node = {}
    for fit in result.fits:
        per_node.setdefault(fit.flavor, set()).add((fit.count, fit.limit))
    for i, name in enumerate(names):
        print(f'  {name} {FLAVORS[i][0]} vCPU {FLAVORS[i][1]} MB '
              f'{FLAVORS[i][2]}: per node {sorted(per_node[name], key=str)}')
    unfit = [n for n in names if not result.by_flavor()[n][0]]
    if unfit or result.partial:
        print(f'NOT every flavor fits somewhere: {unfit}; partial: '
              f'{result.partial}')


if __name__ == '__main__':
    main()
