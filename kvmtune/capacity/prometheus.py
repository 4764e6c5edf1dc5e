"""capacity's counts as a node_exporter textfile, named as os-capacity's.

StackHPC's os-capacity exporter names its gauges
``openstack_free_capacity_hypervisor_by_flavor{hypervisor,flavor_name}``
and ``openstack_free_capacity_by_flavor_total{flavor_name}``
(os_capacity/prometheus.py; ../shared/ANCHORS-VERIFY-CAPACITY.md section
8): kvmtune writes the same names, so dashboards built on one read the
other, plus what os-capacity has not: the limit of each count and whether
a count is partial. Written atomically (kvmtune.fileio); no sample
timestamps (the textfile collector refuses them).
"""

import time
from typing import TYPE_CHECKING

from kvmtune import fileio
from kvmtune.verify.prometheus import labels

if TYPE_CHECKING:
    from kvmtune.capacity import Capacity

BY_HOST = 'openstack_free_capacity_hypervisor_by_flavor'
TOTAL = 'openstack_free_capacity_by_flavor_total'
LIMIT = 'kvmtune_capacity_limit'
PARTIAL = 'kvmtune_capacity_partial'
LAST_RUN = 'kvmtune_capacity_last_run_timestamp_seconds'


def render(result: 'Capacity', now: float | None = None) -> str:
    now = time.time() if now is None else now
    lines = [f'# HELP {BY_HOST} Instances of the flavor that still fit on '
             'the hypervisor (kvmtune capacity).',
             f'# TYPE {BY_HOST} gauge']
    for fit in result.fits:
        if fit.count is not None:
            lines.append(BY_HOST + labels(
                hypervisor=fit.host, flavor_name=fit.flavor) +
                f' {fit.count}')
    lines += [f'# HELP {TOTAL} Instances of the flavor that still fit in '
              'the cloud (partial ones counted as 0).',
              f'# TYPE {TOTAL} gauge']
    for flavor, (count, _) in sorted(result.by_flavor().items()):
        lines.append(TOTAL + labels(flavor_name=flavor) + f' {count}')
    lines += [f'# HELP {LIMIT} 1 for what runs out first for the flavor '
              'on the hypervisor.',
              f'# TYPE {LIMIT} gauge']
    for fit in result.fits:
        if fit.limit:
            lines.append(LIMIT + labels(
                hypervisor=fit.host, flavor_name=fit.flavor,
                limit=fit.limit) + ' 1')
    lines += [f'# HELP {PARTIAL} 1 when the count could not be made '
              '(the reason is in kvmtune capacity\'s output).',
              f'# TYPE {PARTIAL} gauge']
    for fit in result.fits:
        lines.append(PARTIAL + labels(hypervisor=fit.host,
                                      flavor_name=fit.flavor) +
                     f' {1 if fit.count is None else 0}')
    lines += [f'# HELP {LAST_RUN} When kvmtune capacity last ran.',
              f'# TYPE {LAST_RUN} gauge', f'{LAST_RUN} {now:.3f}']
    return '\n'.join(lines) + '\n'


def write(path: str, result: 'Capacity', now: float | None = None) -> None:
    fileio.write_atomic(path, render(result, now=now), mode=0o644,
                        source=path,
                        fix='give --prometheus a file in a directory you '
                            'can write (the textfile collector\'s)')
