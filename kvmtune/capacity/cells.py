"""A host's NUMA nodes as Nova's scheduler sees them, with their use.

Nova's host NUMA topology (a NUMACell per node: nova/virt/libvirt/
driver.py ``_get_host_numa_topology``, as kvmtune's NUMA fake driver
kvmtune/testcloud/files/kvmtune_numa_fake.py reports it), made from the
host's facts (``kvmtune host inspect``) and its CPU sets: per node its
``cpu_dedicated_set`` CPUs (pcpuset), its ``cpu_shared_set`` CPUs
(cpuset), its cores among both, its memory and page pools (small pages:
the memory the huge page pools leave); then what the servers already
there use, from Nova's ``GET /servers/{id}/topology``.
kvmtune.capacity.numa counts on them.
"""

from collections.abc import Iterable
from collections.abc import Mapping
import dataclasses
from typing import Any

SMALL_KB = 4


@dataclasses.dataclass
class Node:
    """One host NUMA node as Nova's NUMACell sees it, with its usage."""
    id: int
    pcpus: frozenset[int]     # cpu_dedicated_set CPUs of the node
    shared: frozenset[int]    # cpu_shared_set CPUs of the node
    siblings: list[frozenset[int]]  # cores among both, in Nova's order
    memory_mb: int
    pages: dict[int | float, list[int]]  # {size KiB: [total, used]}
    pinned: set[int] = dataclasses.field(default_factory=set)
    memory_used: int = 0
    cpu_used: int = 0         # shared vCPUs of the guests on the node

    @property
    def free_pcpus(self) -> set[int]:
        return set(self.pcpus) - self.pinned

    def copy(self) -> 'Node':
        return dataclasses.replace(
            self, pinned=set(self.pinned),
            pages={k: list(v) for k, v in self.pages.items()})


def _siblings(groups: Mapping[int, frozenset[int]], cpus: set[int]
              ) -> list[frozenset[int]]:
    """The node's cores among ``cpus``, ordered by their first CPU (as
    kvmtune's NUMA fake driver reports them: kvmtune/testcloud/files/
    kvmtune_numa_fake.py), a CPU without siblings its own core."""
    cores = {groups.get(c, frozenset({c})) & cpus for c in cpus}
    return sorted(cores, key=min)


def host_nodes(facts: Mapping[str, Any], dedicated: Iterable[int],
               servers: Iterable[tuple[Any, Any]],
               shared: Iterable[int] | None = None) -> list[Node]:
    """The nodes of a host with what its servers already use.

    :param facts: kvmtune facts (numa nodes with cpus, memory_mb, pools)
    :param dedicated: the host's cpu_dedicated_set (a set of CPUs)
    :param servers: [(server, topology or None)] on this host (the
        server with its flavor's extra specs, Nova's GET
        /servers/{id}/topology)
    :param shared: the host's cpu_shared_set; None: every online CPU not
        dedicated
    """
    dedicated = set(dedicated)
    online = set((facts.get('cpu') or {}).get('online') or ()) or {
        c for n in facts['numa']['nodes'] for c in n.get('cpus') or ()}
    shared = set(shared) if shared is not None else online - dedicated
    groups = {c: frozenset(g) for g in
              (facts.get('cpu') or {}).get('thread_siblings') or ()
              for c in g}
    nodes: dict[int, Node] = {}
    for node in facts['numa']['nodes']:
        cpus = set(node.get('cpus') or ())
        pages: dict[int | float, list[int]] = {}
        huge_kb = 0
        for pool in node.get('hugepages') or ():
            if pool.get('total'):
                pages[pool['size_kb']] = [pool['total'], 0]
                huge_kb += pool['size_kb'] * pool['total']
        memory_mb = node.get('memory_mb') or 0
        pages[SMALL_KB] = [max(memory_mb * 1024 - huge_kb, 0) // SMALL_KB, 0]
        nodes[node['id']] = Node(
            node['id'], frozenset(cpus & dedicated), frozenset(cpus & shared),
            _siblings(groups, cpus & (dedicated | shared)), memory_mb, pages)
    for server, topology in servers:
        _add_server(nodes, server, topology)
    return [nodes[k] for k in sorted(nodes)]


def _add_server(nodes: dict[int, Node], server: Any, topology: Any) -> None:
    """A server's use of its host nodes, from its topology (and, for what
    the topology does not show, its flavor's extra specs)."""
    specs = ((server or {}).get('flavor') or {}).get('extra_specs') or {}
    isolate_threads = specs.get('hw:cpu_thread_policy') == 'isolate'
    emulator = specs.get('hw:emulator_threads_policy') == 'isolate'
    size = (topology or {}).get('pagesize_kb')
    for index, guest_node in enumerate((topology or {}).get('nodes') or ()):
        node = nodes.get(guest_node.get('host_node'))
        if node is None:
            continue
        pinned = set((guest_node.get('cpu_pinning') or {}).values())
        vcpus = len(guest_node.get('vcpu_set') or ())
        if index == 0 and emulator:
            # the API does not show the emulator threads' CPU: one more
            # free dedicated CPU of this node, as Nova picked it
            spare = sorted(node.free_pcpus - pinned)
            pinned |= set(spare[:1])
        if isolate_threads:
            pinned |= {c for core in node.siblings if core & pinned
                       for c in core}
        node.pinned |= pinned & node.pcpus
        node.cpu_used += max(vcpus - len(guest_node.get('cpu_pinning')
                                         or {}), 0)
        memory = guest_node.get('memory_mb', 0)
        node.memory_used += memory
        page = size if size in node.pages else min(node.pages)
        node.pages[page][1] += memory * 1024 // int(page)
