"""In-place mode's preflight: for a rollout that keeps the guests on their
host (reboot in place), the plan's new CPU sets and page pools still hold
them, by Nova's rules at nova-compute start
(nova/compute/manager.py ``_validate_pinning_configuration``): pinned
guests need a ``cpu_dedicated_set`` holding their pinned CPUs (Nova only
warns when it does not: the guest then shares CPUs another guest may
get), unpinned ones a ``cpu_shared_set`` when the dedicated set is set; a
guest's huge pages need the pool of their size on their node to keep at
least their number. Judged with the rest of the preflight by
kvmtune.rollout.preflight.judge.
"""

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any
from typing import TYPE_CHECKING

from kvmtune.rollout import nova
from kvmtune.rollout.snapshot import Refused

if TYPE_CHECKING:
    from kvmtune.tuning.plan import Plan


def planned_set(plan: 'Plan', option: str) -> set[int] | None:
    from kvmtune.facts.cpulist import parse_cpu_spec

    value = plan.nova_conf.get('compute', {}).get(option)
    return None if value is None else set(parse_cpu_spec(str(value)))


def in_place(host: str, servers: Sequence[nova.Server],
             topologies: Mapping[str, Any], plan: 'Plan') -> list[Refused]:
    """Why the plan's CPU sets and pools would not hold the guests that
    stay on ``host`` (empty: they hold)."""
    from kvmtune.facts.cpulist import format_cpulist

    dedicated = planned_set(plan, 'cpu_dedicated_set')
    shared = planned_set(plan, 'cpu_shared_set')
    pools = {(p['node'], p['size_kb']): p['count'] for p in plan.hugepages}
    found: list[Refused] = []
    held: dict[tuple[int, int], int] = {}

    def refuse(server: nova.Server, what: str) -> None:
        found.append(Refused(
            f'server {server.id} ({server.name}, flavor '
            f'{server.flavor_name}): {what}', source=f'host {host}',
            key='in-place', fix='drain this host instead of changing it in '
                                'place; nothing was touched'))

    for server in servers:
        topology = topologies.get(server.id) or {}
        pinned: set[int] = set()
        for cell in topology.get('nodes') or ():
            pinned |= {int(c) for c in (cell.get('cpu_pinning') or
                                        {}).values()}
            size = topology.get('pagesize_kb')
            if size:
                key = (int(cell.get('host_node', 0)), int(size))
                held[key] = held.get(key, 0) + \
                    int(cell.get('memory_mb', 0)) * 1024 // int(size)
        if pinned and not dedicated:
            refuse(server, 'pinned, and the plan sets no '
                   'cpu_dedicated_set (nova-compute refuses to start)')
        elif dedicated is not None and not pinned <= dedicated:
            outside = sorted(pinned - dedicated)
            refuse(server, f'pinned to CPUs {outside} outside the new '
                   f'cpu_dedicated_set {format_cpulist(dedicated)} (Nova '
                   'only warns: another guest may get them)')
        elif not pinned and dedicated and not shared:
            refuse(server, 'unpinned, and the plan sets a '
                   'cpu_dedicated_set but no cpu_shared_set (nova-compute '
                   'refuses to start)')
    for (node, size), pages in sorted(held.items()):
        if (node, size) in pools and pools[node, size] < pages:
            found.append(Refused(
                f'its guests hold {pages} pages of {size} KiB on NUMA node '
                f'{node}; the plan leaves {pools[node, size]}',
                source=f'host {host}', key='in-place',
                fix='drain this host instead of changing it in place; '
                    'nothing was touched'))
    return found
