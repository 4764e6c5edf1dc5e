#!/usr/bin/env python3
"""kvmtune rollout --check over 500 simulated hosts, target <= 10 s.

Each host is a real capture tree with Debian 12's boot files
(tests/hosttrees.py, real/20em64t-hybrid-1p6c2t+2ca4co1t), copied once
per host, named in one INI inventory as ``kvmtune_root=DIR
ansible_connection=local``. Times the whole command as an operator runs
it (one ansible-inventory call, then every host planned here) and the
planning alone. Without a cloud no API call is made (the cloud checks
are listed as skipped): the API calls are 0 for every fleet size.

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
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == '__main__':
    main()
