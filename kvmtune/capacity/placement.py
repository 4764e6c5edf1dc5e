"""What Nova and Placement say about each compute node, read once.

Per cloud: Nova's hypervisor list (``GET /os-hypervisors/detail``: the
nodes, their service host and provider UUID), its aggregates
(``GET /os-aggregates``) and, for the NUMA fit only, the servers on each
host with their topology. Per compute node: Placement's inventories,
usages and traits, three calls. So the calls grow with hosts (and, for the
NUMA fit, with the pinned or huge-page servers), never with hosts x
flavors: every flavor is counted from the same reads.
"""

import dataclasses
from typing import Any

from kvmtune.errors import CloudError


@dataclasses.dataclass
class Host:
    """One compute node as the scheduler sees it.

    inventories  {class: {total, reserved, allocation_ratio, min_unit,
                 max_unit, step_size}} (Placement's own shape)
    usages       {class: used}
    traits       frozenset of trait names
    aggregates   [Nova aggregate name] the node's service host is in
    error        why the node could not be read (a partial answer)
    """
    name: str
    service_host: str
    uuid: str
    inventories: dict[str, dict[str, Any]] = dataclasses.field(
        default_factory=dict)
    usages: dict[str, int] = dataclasses.field(default_factory=dict)
    traits: frozenset[str] = frozenset()
    aggregates: list[str] = dataclasses.field(default_factory=list)
    error: str | None = None


class Reader:
    """The reads capacity makes; counts its API calls."""

    def __init__(self, cloud: Any) -> None:
        self.cloud = cloud
        self.calls = 0

    def _compute(self, path: str) -> Any:
        self.calls += 1
        return self.cloud.compute('GET', path)

    def _placement(self, path: str) -> Any:
        self.calls += 1
        return self.cloud.placement('GET', path)

    def flavors(self) -> Any:
        """Every flavor with its extra specs, read now in one GET (Nova
        lists the specs with the flavor from 2.61): a
        :class:`kvmtune.openstack.flavors.Flavors` to pick from."""
        from kvmtune.openstack import flavors as cloud_flavors
        listing = cloud_flavors.Flavors(self.cloud)
        self.calls += 1
        listing.all()
        return listing

    def hosts(self) -> list[Host]:
        """Every compute node with its Placement view (errors per node
        are kept on the node: the answer is partial, not lost)."""
        nodes = self._compute('/os-hypervisors/detail')['hypervisors']
        aggregates = self._compute('/os-aggregates')['aggregates']
        by_host: dict[str, list[str]] = {}
        for aggregate in aggregates:
            for member in aggregate.get('hosts') or ():
                by_host.setdefault(member, []).append(aggregate['name'])
        found = []
        for node in sorted(nodes, key=lambda n: n['hypervisor_hostname']):
            service = (node.get('service') or {}).get('host') or \
                node['hypervisor_hostname']
            host = Host(name=node['hypervisor_hostname'],
                        service_host=service, uuid=node['id'],
                        aggregates=sorted(by_host.get(service, ())))
            try:
                self.read(host)
            except CloudError as exc:
                # Credentials that cannot read Placement are no partial
                # answer: nothing could be read.
                if getattr(exc, 'http_status', None) in (401, 403):
                    raise
                host.error = exc.line()
            if not host.error and not host.inventories:
                host.error = ('no inventory in Placement (nova-compute has '
                              'not reported this node yet)')
            found.append(host)
        return found

    def read(self, host: Host) -> None:
        base = f'/resource_providers/{host.uuid}'
        host.inventories = self._placement(base + '/inventories')[
            'inventories']
        host.usages = self._placement(base + '/usages')['usages']
        host.traits = frozenset(self._placement(base + '/traits')['traits'])

    def servers(self, host: Host) -> list[tuple[Any, Any]]:
        """The servers on one compute node, each with its flavor's extra
        specs and its NUMA topology when it has one (admin, 2.78)."""
        from urllib.parse import urlencode
        query = urlencode({'all_tenants': 1, 'host': host.service_host,
                           'node': host.name})
        servers = self._compute(f'/servers/detail?{query}')['servers']
        found = []
        for server in servers:
            if server.get('status') in ('DELETED', 'SHELVED_OFFLOADED'):
                continue
            specs = (server.get('flavor') or {}).get('extra_specs') or {}
            topology = None
            if specs.get('hw:cpu_policy') in ('dedicated', 'mixed') or \
                    specs.get('hw:mem_page_size') or \
                    specs.get('hw:numa_nodes'):
                topology = self._compute(
                    f'/servers/{server["id"]}/topology')
            found.append((server, topology))
        return found
