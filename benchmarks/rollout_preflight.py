#!/usr/bin/env python3
"""rollout preflight over a fleet: 500 compute nodes, a batch of 10 hosts
with 20 guests each, placed first fit on the other 490; target <= 5 s.

The fleet is benchmarks/capacity_fleet.py's: the test cloud's recorded
compute node (tests/fixtures/capacity/testcloud-libvirt-pinned.json,
through tests/unit/capacity/replay.py) scaled to a 2-node, 80-thread
shape with 2 MiB and 1 GiB pages, replicated 500 times. The batch's
guests cycle through capacity_fleet's 10 flavors (pinned on small, large
and 1 GiB pages, thread policy require, emulator threads isolate, mixed,
shared NUMA, shared on 2 MiB pages, plain shared). Times
``kvmtune.rollout.preflight.fleet_fit`` on the snapshot (kvmtune's own
time: reading a real cloud adds Placement's latency per call), and says
how many guests found room and how many nodes they used.

  python benchmarks/rollout_preflight.py [-n 3] [--hosts 500] [--batch 10]
"""

import argparse
import os
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_S = 5.0
GUESTS_PER_HOST = 20


def snapshot(hosts, batch):
    from capacity_fleet import FLAVORS
    from capacity_fleet import flavors
    from capacity_fleet import scaled
    from capacity_fleet import shape
    from kvmtune.capacity import placement
    from kvmtune.rollout import nova
    from kvmtune.rollout import preflight
    from tests.unit.capacity.replay import load
    from tests.unit.capacity.replay import Replay

    recording = load('testcloud-libvirt-pinned.json')
    flavors(recording)
    facts, dedicated, shared = shape()
    scaled(recording, facts, dedicated, shared)
    nodes = placement.Reader(Replay(recording, hosts=hosts)).hosts()
    names = [n.name for n in nodes]
    services = {n: nova.Service(f'svc-{n}', n, 'enabled', 'up', None)
                for n in names}
    servers = {}
    for b in range(batch):
        guests = []
        for g in range(GUESTS_PER_HOST):
            vcpus, ram, specs = FLAVORS[g % len(FLAVORS)]
            guests.append(nova.Server(
                f'{b:03d}-{g:03d}', f'vm-{g}', 'ACTIVE', None, names[b],
                names[b], {'original_name': f'bench-{g % len(FLAVORS)}',
                           'vcpus': vcpus, 'ram': ram, 'disk': 1,
                           'ephemeral': 0, 'swap': 0,
                           'extra_specs': dict(specs)}))
        servers[names[b]] = guests
    return preflight.Snapshot(
        nodes=nodes, services=services, servers=servers,
        facts={n: facts for n in names},
        dedicated={n: set(dedicated) for n in names}), names[:batch]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('-n', type=int, default=3)
    parser.add_argument('--hosts', type=int, default=500)
    parser.add_argument('--batch', type=int, default=10)
    args = parser.parse_args()
    sys.path[:0] = [REPO, os.path.join(REPO, 'benchmarks')]
    from kvmtune.rollout import preflight

    times = []
    for _ in range(args.n):
        snap, batch = snapshot(args.hosts, args.batch)
        start = time.perf_counter()
        placed = preflight.fleet_fit(snap, batch)
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    fitted = [p for p in placed if p.target]
    print(f'preflight: {len(placed)} guests of a {args.batch}-host batch '
          f'on {args.hosts - args.batch} other nodes, median {median:.3f} s '
          f'(min {min(times):.3f}, max {max(times):.3f}, {args.n} runs; '
          f'target <= {TARGET_S:.0f} s: '
          f'{"met" if median <= TARGET_S else "MISSED"})')
    print(f'placed {len(fitted)}, refused {len(placed) - len(fitted)}, on '
          f'{len({p.target for p in fitted})} nodes')
    for p in placed:
        if not p.target:
            print(f'  refused {p.server} {p.flavor}: {p.why[:200]}')


if __name__ == '__main__':
    main()
