"""Test cloud footprint: time to `kvmtune cloud up` and the services' memory.

Runs ``kvmtune cloud up`` (kvmtune.testcloud.api.up, with ``--run``;
otherwise reads the timings the last ``up`` recorded), then sums RSS and
PSS over every
process the cloud started, and compares with the targets: up within 90 s,
all services within 2 GB of PSS. PSS, not RSS, is what the cloud takes from
the machine: gunicorn masters and workers, the privsep daemons and the
Neutron processes share their Python and library pages, which RSS counts
once per process (with Neutron, RSS is ~2.06 GB where PSS is ~1.5 GB).
MariaDB and RabbitMQ are shared system services and are reported apart,
not counted.

With ``--computes N`` (doc/testcloud.md, "More computes"), each extra
nova-compute (the NUMA fake driver under its own host name) is measured
apart: the VmRSS of its process and of its children, summed, against the
target of at most 150 MB more per extra compute (MB here as elsewhere in
this file: MiB, 1024 KiB; the decimal figure is printed beside it).

  python benchmarks/cloud_up.py [--run [--compute fake|libvirt]
                                [--computes N]] [--json]
"""

import argparse
import json
import os
import sys

from kvmtune.testcloud import api
from kvmtune.testcloud import procs

UP_TARGET_S = 90
MEMORY_TARGET_MB = 2048
EXTRA_COMPUTE_TARGET_MB = 150


def _system_services():
    """RSS/PSS of MariaDB and RabbitMQ (not started by the cloud)."""
    totals = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        line = procs.cmdline(int(entry))
        name = ('mariadb' if line.startswith('/usr/sbin/mariadbd') else
                'rabbitmq' if 'beam.smp' in line and 'rabbit' in line
                else None)
        if name:
            rss, pss = procs.memory_kb(int(entry))
            totals[name] = (totals.get(name, (0, 0))[0] + rss,
                            totals.get(name, (0, 0))[1] + pss)
    return totals


def measure(layout):
    with open(layout.timings) as f:
        timings = json.load(f)
    rss = pss = 0
    pids = procs.owned_pids(layout)
    for pid in pids:
        r, p = procs.memory_kb(pid)
        rss += r
        pss += p
    state = procs.load_state(layout)
    extras = []
    for entry in procs.computes_of(state, layout)[1:]:
        pid = state.get('services', {}).get(entry['service'])
        rss_kb = procs.tree_rss_kb(pid) if pid else 0
        extras.append({'host': entry['host'], 'pid': pid,
                       'shape': os.path.basename(entry.get('facts_source')
                                                 or entry['facts']),
                       'rss_mb': round(rss_kb / 1024, 1),
                       'rss_decimal_mb': round(rss_kb * 1024 / 1e6, 1)})
    return {
        'mode': timings['mode'], 'up_seconds': timings['up_seconds'],
        'extra_computes': extras,
        'phases': timings['phases'], 'processes': len(pids),
        'rss_mb': round(rss / 1024), 'pss_mb': round(pss / 1024),
        'system_services_mb': {n: {'rss': round(r / 1024),
                                   'pss': round(p / 1024)}
                               for n, (r, p) in _system_services().items()},
        'targets': {'up_seconds': UP_TARGET_S, 'memory_mb': MEMORY_TARGET_MB,
                    'extra_compute_rss_mb': EXTRA_COMPUTE_TARGET_MB},
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--run', action='store_true',
                        help='run `cloud up` first (the cloud must be down)')
    parser.add_argument('--compute', choices=('fake', 'libvirt'),
                        default='fake')
    parser.add_argument('--computes', type=int, default=1,
                        help='with --run: nova-computes to start')
    parser.add_argument('--json', action='store_true')
    args = parser.parse_args()
    layout = api.layout()
    if args.run:
        api.up(compute=args.compute, layout=layout, say=print,
               computes=args.computes)
    if not procs.owned_pids(layout):
        print('cloud_up: no test cloud is running in %s' % layout.root,
              file=sys.stderr)
        return 2
    result = measure(layout)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    ok_time = result['up_seconds'] <= UP_TARGET_S
    ok_mem = result['pss_mb'] <= MEMORY_TARGET_MB
    print('test cloud (%s compute%s): %d processes'
          % (result['mode'], ', %d computes' % (
              1 + len(result['extra_computes']))
              if result['extra_computes'] else '', result['processes']))
    print('  up time      %6.1f s   target <= %d s     %s' % (
        result['up_seconds'], UP_TARGET_S, 'ok' if ok_time else 'OVER'))
    print('  services PSS %6d MB  target <= %d MB  %s (RSS %d MB)' % (
        result['pss_mb'], MEMORY_TARGET_MB, 'ok' if ok_mem else 'OVER',
        result['rss_mb']))
    ok_extra = True
    for extra in result['extra_computes']:
        ok = extra['rss_mb'] <= EXTRA_COMPUTE_TARGET_MB
        ok_extra = ok_extra and ok
        print('  %s (%s) nova-compute RSS %5.1f MB (%.1f decimal MB)  '
              'target <= %d MB  %s' % (
                  extra['host'], extra['shape'], extra['rss_mb'],
                  extra['rss_decimal_mb'], EXTRA_COMPUTE_TARGET_MB,
                  'ok' if ok else 'OVER'))
    for name, mem in sorted(result['system_services_mb'].items()):
        print('  shared %-8s RSS %d MB (not counted)' % (name, mem['rss']))
    return 0 if ok_time and ok_mem and ok_extra else 1


if __name__ == '__main__':
    sys.exit(main())
