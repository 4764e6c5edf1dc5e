#!/usr/bin/env python3
"""kvmtune rollout --check over 500 simulated hosts, target <= 10 s.

Each host is a real capture tree with Debian 12's boot files
(tests/hosttrees.py, real/20em64t-hybrid-1p6c2t+2ca4co1t), copied once
per host, named in one INI inventory as ``kvmtune_root=DIR
ansible_connection=local``.

1. Without a cloud: the whole command as an operator runs it (one
   ansible-inventory call, then every host planned here); no API call.
2. With a cloud (the preflight of every batch): kvmtune.rollout.check's
   plan() in this process, on a model of Nova's API
   (tests/unit/rollout/fakenova.py, one guest per host) with the test
   cloud's recorded Placement and hypervisor answers replicated per host
   (tests/unit/capacity/replay.py, as benchmarks/capacity_fleet.py),
   for half the hosts and all of them: the API calls must grow with the
   hosts, not hosts times batches. The model answers at once: a real
   cloud adds its latency per call.

  python benchmarks/rollout_check.py [--hosts 500] [--profile P]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
TARGET_S = 10.0
FLEET_BIN = os.path.join(os.environ.get('KVMTUNE_CONSUMERS',
                                        '/opt/kvmtune-consumers'),
                         'fleet-venv', 'bin')


def _with_cloud(roots, profile):
    from kvmtune.openstack import connection
    from kvmtune.rollout import check
    from kvmtune.rollout import inventory
    from tests.unit.capacity.replay import load
    from tests.unit.capacity.replay import Replay
    from tests.unit.rollout.fakenova import FakeNova
    from tests.unit.rollout.fakenova import server

    names = [f'compute-{n:04d}' for n in range(len(roots))]

    class Cloud(FakeNova):
        """The model's services and servers; hypervisors, aggregates,
        flavors and Placement from the recording, one node per host."""

        def __init__(self):
            super().__init__(names, [
                server(f'{n:08d}-0000-4000-8000-000000000000', name)
                for n, name in enumerate(names)])
            self.replay = Replay(load('testcloud-libvirt-pinned.json'),
                                 hosts=len(names))
            self.calls = 0

        def compute(self, method, path, body=None):
            self.calls += 1
            if method == 'GET' and path.startswith(
                    ('/os-hypervisors', '/os-aggregates', '/flavors')):
                return self.replay.compute(method, path)
            return super().compute(method, path, body)

        def placement(self, method, path, body=None):
            self.calls += 1
            return self.replay.placement(method, path, body)

    cloud = Cloud()
    connection.Cloud.connect = classmethod(lambda cls, name: cloud)
    hosts = [inventory.Host(name, {'kvmtune_root': root,
                                   'ansible_connection': 'local'})
             for name, root in zip(names, roots)]
    started = time.monotonic()
    found = check.plan(hosts, profile, path='inventory', batch=25,
                       cloud='model')
    elapsed = time.monotonic() - started
    print(f'--check with the cloud\'s preflight, {len(hosts)} hosts: '
          f'{elapsed:.2f} s in process (target <= {TARGET_S} s), '
          f'{cloud.calls} API calls ({cloud.calls / len(hosts):.1f} per '
          f'host), {len(found.reports)} batches judged, '
          f'{len(found.refused)} refused; writes to the cloud: '
          f'{len(cloud.writes)}')


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--hosts', type=int, default=500)
    parser.add_argument('--profile', default='pinned-hugepages')
    args = parser.parse_args()
    from tests import hosttrees

    base = tempfile.mkdtemp(prefix='kvmtune-rollout-bench-')
    try:
        first = hosttrees.make(os.path.join(base, 'h0'), 'debian-12')
        lines = ['[computes]']
        for n in range(args.hosts):
            root = first if n == 0 else shutil.copytree(
                first, os.path.join(base, f'h{n}'), symlinks=True)
            lines.append(f'compute-{n} kvmtune_root={root} '
                         'ansible_connection=local')
        inv = os.path.join(base, 'hosts.ini')
        with open(inv, 'w') as f:
            f.write('\n'.join(lines) + '\n')
        env = {**os.environ, 'PATH': f'{FLEET_BIN}:{os.environ["PATH"]}',
               'PYTHONPATH': REPO, 'ANSIBLE_HOME': os.path.join(base, 'a')}
        started = time.monotonic()
        listed = subprocess.run(
            [os.path.join(FLEET_BIN, 'ansible-inventory'), '-i', inv,
             '--list'], capture_output=True, text=True, env=env)
        inventory_s = time.monotonic() - started
        if listed.returncode != 0:
            sys.exit(listed.stderr)
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, '-m', 'kvmtune.cli', 'rollout', '--check',
             '--inventory', inv, '--profile', args.profile, '--batch', '25',
             '-f', 'json'], capture_output=True, text=True, env=env)
        elapsed = time.monotonic() - started
        if done.returncode != 0:
            sys.exit(done.stderr)
        doc = json.loads(done.stdout)
        print(f'rollout --check, {args.hosts} hosts ({args.profile}, '
              f'batches of 25): {elapsed:.2f} s (target <= {TARGET_S} s), '
              f'{elapsed / args.hosts * 1000:.1f} ms/host; '
              f"{doc['summary']}; {len(doc['batches'])} batches; of it "
              f'ansible-inventory alone: {inventory_s:.2f} s; cloud API '
              'calls: 0 (no --os-cloud: '
              f"{len(doc['preflight']['cloud_checks_skipped'])} cloud checks "
              'skipped)')
        print('within target' if elapsed <= TARGET_S else 'OVER TARGET')
        roots = [first] + [os.path.join(base, f'h{n}')
                           for n in range(1, args.hosts)]
        for count in (args.hosts // 2, args.hosts):
            _with_cloud(roots[:count], args.profile)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == '__main__':
    main()
