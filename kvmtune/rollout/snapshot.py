"""The rollout's shared types, below its judges: what the preflight reads
from the cloud once (``Snapshot``), a batch it refuses (``Refused``) and a
server's flavor as Nova's scheduler asks for it (``flavor_of``,
``request_of``). kvmtune.rollout.preflight, .density and .inplace judge on
them and import this module, not each other in a circle.
"""

from collections.abc import Mapping
import dataclasses
from typing import Any
from typing import TYPE_CHECKING

from kvmtune.capacity import request as requests
from kvmtune.errors import KvmtuneError
from kvmtune.rollout import nova
from kvmtune.tuning import flavor_topology

if TYPE_CHECKING:
    from kvmtune.capacity.placement import Host


class Refused(KvmtuneError):
    """The batch cannot be taken out (or changed in place): nothing was
    touched."""


@dataclasses.dataclass
class Snapshot:
    """What preflight reads from the cloud, once.

    nodes        every compute node (kvmtune.capacity.placement.Host)
    services     {service host: nova.Service}
    servers      {batch service host: [nova.Server]}
    topologies   {server id: GET /servers/{id}/topology} (NUMA guests)
    residents    {node name: [(server, topology)]} of the other nodes,
                 for their NUMA use (kvmtune.capacity.cells)
    facts        {node or host name: facts}; dedicated: {name: CPUs}
                 (HOST.conf beside them, kvmtune.capacity.nodefacts)
    """
    nodes: list['Host']
    services: dict[str, nova.Service]
    servers: dict[str, list[nova.Server]]
    topologies: dict[str, Any] = dataclasses.field(default_factory=dict)
    residents: dict[str, list[tuple[Any, Any]]] = dataclasses.field(
        default_factory=dict)
    facts: dict[str, Any] = dataclasses.field(default_factory=dict)
    dedicated: dict[str, set[int]] = dataclasses.field(default_factory=dict)

    # (nodes, {service host or name: first such node}) for node()
    _index: tuple[list['Host'], dict[str, 'Host']] | None = \
        dataclasses.field(default=None, init=False, repr=False,
                          compare=False)

    def node(self, host: str) -> 'Host | None':
        """The first node whose service host or name is ``host``, by an
        index of ``nodes`` made at the first call: one scan of the nodes
        a snapshot, not one a host (hosts squared at --check with a
        cloud)."""
        if self._index is None or self._index[0] is not self.nodes:
            index: dict[str, 'Host'] = {}
            for node in self.nodes:
                index.setdefault(node.service_host, node)
                index.setdefault(node.name, node)
            self._index = (self.nodes, index)
        return self._index[1].get(host)

    def of(self, table: Mapping[str, Any], node: 'Host') -> Any:
        found = table.get(node.name)
        return found if found is not None else table.get(node.service_host)


def flavor_of(server: nova.Server) -> dict[str, Any]:
    """The server's embedded flavor (compute API 2.47+) in the shape of a
    flavor (kvmtune.capacity.request.from_flavor)."""
    embedded = server.flavor
    return {'name': server.flavor_name, 'vcpus': embedded.get('vcpus', 0),
            'ram': embedded.get('ram', 0), 'disk': embedded.get('disk', 0),
            'OS-FLV-EXT-DATA:ephemeral': embedded.get('ephemeral', 0),
            'swap': embedded.get('swap') or 0,
            'extra_specs': dict(embedded.get('extra_specs') or {})}


def request_of(server: nova.Server) -> requests.Request:
    try:
        return requests.from_flavor(flavor_of(server))
    except (flavor_topology.Refused, requests.Unsupported) as exc:
        raise Refused(f'cannot count its flavor {server.flavor_name}: '
                      f'{exc}', source=f'server {server.id}',
                      fix='move this server by hand, then run the '
                          'preflight again') from None
