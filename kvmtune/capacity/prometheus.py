"""capacity's counts as a node_exporter textfile (kvmtune.textfile writes it).

Per compute node, ``hostname`` is the Nova service host of the node (not
its hypervisor name, which can differ), as openstack-exporter's
``openstack_nova_agent_state{hostname}``:

``kvmtune_capacity_free_instances{hostname,flavor_name}``
    instances of the flavor that still fit on the node (left out when the
    count could not be made);
``kvmtune_capacity_cloud_free_instances{flavor_name}``
    the same for the whole cloud (a node not counted adds 0);
``kvmtune_capacity_limited_by{hostname,flavor_name,limit} 1``
    what runs out first (PCPU, MEMORY_MB, trait:..., hugepages, ...);
``kvmtune_capacity_unknown{hostname,flavor_name}`` 0 or 1
    1 when the count could not be made (the reason is in capacity's
    output);
``kvmtune_last_run_timestamp_seconds`` and
``kvmtune_last_success_timestamp_seconds`` ``{command="capacity"}``
    when capacity last ran, and last made every count (cloud-wide: no
    hostname).

Kept for one release (releasenotes), as StackHPC's os-capacity names them
(https://github.com/stackhpc/os-capacity, os_capacity/prometheus.py and
its README.rst) with its ``hypervisor`` label:
``openstack_free_capacity_hypervisor_by_flavor``,
``openstack_free_capacity_by_flavor_total`` (a gauge, whose ``_total`` the
naming guide keeps for counters), ``kvmtune_capacity_limit``,
``kvmtune_capacity_partial`` and
``kvmtune_capacity_last_run_timestamp_seconds``.
"""

import time
from typing import TYPE_CHECKING

from kvmtune import textfile

if TYPE_CHECKING:
    from kvmtune.capacity import Capacity

COMMAND = 'capacity'
FREE = 'kvmtune_capacity_free_instances'
CLOUD_FREE = 'kvmtune_capacity_cloud_free_instances'
LIMITED_BY = 'kvmtune_capacity_limited_by'
UNKNOWN = 'kvmtune_capacity_unknown'
# the old names, written for one release more (release note
# prometheus-names-hostname-7c2e9a41d0b35f86.yaml)
BY_HOST = 'openstack_free_capacity_hypervisor_by_flavor'
TOTAL = 'openstack_free_capacity_by_flavor_total'
LIMIT = 'kvmtune_capacity_limit'
PARTIAL = 'kvmtune_capacity_partial'
LAST_RUN = 'kvmtune_capacity_last_run_timestamp_seconds'


def _deprecated(name: str, new: str) -> textfile.Family:
    return textfile.Family(name, f'Deprecated: use {new} (removed in the '
                           'next release).')


def families(result: 'Capacity',
             now: float | None = None) -> list[textfile.Family]:
    """The families for ``result``: new names, then the old ones."""
    now = time.time() if now is None else now
    free = textfile.Family(FREE, 'Instances of the flavor that still fit '
                           'on the compute node (kvmtune capacity).')
    cloud = textfile.Family(CLOUD_FREE, 'Instances of the flavor that '
                            'still fit in the cloud (nodes not counted '
                            'add 0).')
    limited = textfile.Family(LIMITED_BY, '1 for what runs out first for '
                              'the flavor on the compute node.')
    unknown = textfile.Family(UNKNOWN, '1 when the count could not be made '
                              '(the reason is in kvmtune capacity\'s '
                              'output).')
    by_host, total = _deprecated(BY_HOST, FREE), _deprecated(TOTAL,
                                                             CLOUD_FREE)
    limit, partial = (_deprecated(LIMIT, LIMITED_BY),
                      _deprecated(PARTIAL, UNKNOWN))
    for fit in result.fits:
        hostname = fit.service_host or fit.host
        if fit.count is not None:
            free.add(fit.count, hostname=hostname, flavor_name=fit.flavor)
            by_host.add(fit.count, hypervisor=fit.host,
                        flavor_name=fit.flavor)
        if fit.limit:
            limited.add(1, hostname=hostname, flavor_name=fit.flavor,
                        limit=fit.limit)
            limit.add(1, hypervisor=fit.host, flavor_name=fit.flavor,
                      limit=fit.limit)
        unknown.add(1 if fit.count is None else 0, hostname=hostname,
                    flavor_name=fit.flavor)
        partial.add(1 if fit.count is None else 0, hypervisor=fit.host,
                    flavor_name=fit.flavor)
    for flavor, (count, _) in sorted(result.by_flavor().items()):
        cloud.add(count, flavor_name=flavor)
        total.add(count, flavor_name=flavor)
    last = _deprecated(LAST_RUN, f'{textfile.LAST_RUN}{{command="capacity"}}')
    last.add(now)
    return [free, cloud, limited, unknown,
            by_host, total, limit, partial, last]


def render(result: 'Capacity', now: float | None = None) -> str:
    """The textfile for ``result``, as a first run writes it."""
    now = time.time() if now is None else now
    return textfile.render(families(result, now) + textfile.timestamps(
        COMMAND, {'': not result.partial}, now, {}))


def write(path: str, result: 'Capacity', now: float | None = None) -> None:
    """Write the textfile atomically, as its one writer."""
    now = time.time() if now is None else now
    textfile.write(path, COMMAND, families(result, now),
                   {'': not result.partial}, now=now)
