"""How many guests of one NUMA request a host's nodes still hold.

kvmtune's model of what Nova's NUMA filter and resource tracker do
(nova/virt/hardware.py ``numa_fit_instance_to_host``, repeated with
``numa_usage_from_instance_numa``; ../shared/ANCHORS-VERIFY-CAPACITY.md
section 7), on the host's facts (``kvmtune host inspect``), its
``[compute] cpu_dedicated_set`` and the NUMA topology of the servers
already there (Nova's ``GET /servers/{id}/topology``):

- each guest NUMA node needs its pinned CPUs (``hw:cpu_policy=dedicated``)
  from the dedicated CPUs of one host node (thread policy ``isolate``:
  none on a host with hyperthreads, as Nova refuses it there), one more on
  its first node for emulator threads ``isolate``;
- and its memory from that node's pages of the requested size: a size in
  KiB (the memory must be a multiple of it), ``large`` (the largest huge
  page size that still fits, then the next), ``any`` (any size, small
  pages last) or small pages (node memory less its huge page pools);
- a guest of N nodes needs N different host nodes.

Not modelled: shared-CPU limits per node (cpu_allocation_ratio), PCI and
vPMEM affinity, ``[compute] packing_host_numa_cells_allocation_strategy``
(it orders nodes, the count does not change), ``reserved_huge_pages``.
"""

import dataclasses
from collections.abc import Iterable
from collections.abc import Mapping
from typing import TYPE_CHECKING
from typing import Any

if TYPE_CHECKING:
    from kvmtune.capacity.request import NumaRequest

SMALL_KB = 4


@dataclasses.dataclass
class Node:
    """One host NUMA node's free resources for guests."""
    id: int
    pcpus: set[int]       # dedicated CPUs not pinned by a guest
    # [set of sibling CPUs] among the dedicated ones
    cores: list[frozenset[int]]
    pages: dict[int, int]  # {size_kb: free pages}; SMALL_KB: small pages
    smt: bool = False     # a core of the node has more than one thread


def host_nodes(facts: Mapping[str, Any], dedicated: Iterable[int],
               servers: Iterable[tuple[Any, Any]]) -> list[Node]:
    """The nodes of a host with what its servers already use.

    :param facts: kvmtune facts (numa nodes with cpus, memory_mb, pools)
    :param dedicated: the host's cpu_dedicated_set (a set of CPUs)
    :param servers: [(server, topology or None)] on this host
    """
    siblings: dict[int, frozenset[int]] = {}
    for group in (facts.get('cpu') or {}).get('thread_siblings') or ():
        for cpu in group:
            siblings[cpu] = frozenset(group)
    nodes: dict[int, Node] = {}
    for node in facts['numa']['nodes']:
        cpus = set(node.get('cpus') or ()) & set(dedicated)
        cores: list[frozenset[int]] = []
        for cpu in sorted(cpus):
            core = siblings.get(cpu, frozenset({cpu})) & cpus
            if core and core not in cores:
                cores.append(core)
        pages: dict[int, int] = {}
        huge_kb = 0
        for pool in node.get('hugepages') or ():
            pages[pool['size_kb']] = pool.get('total') or 0
            huge_kb += pool['size_kb'] * (pool.get('total') or 0)
        memory_kb = (node.get('memory_mb') or 0) * 1024
        pages[SMALL_KB] = max(memory_kb - huge_kb, 0) // SMALL_KB
        nodes[node['id']] = Node(node['id'], cpus, cores, pages,
                                 smt=any(len(core) > 1 for core in cores))
    for server, topology in servers:
        for guest_node in (topology or {}).get('nodes') or ():
            node = nodes.get(guest_node.get('host_node'))
            if node is None:
                continue
            node.pcpus -= set((guest_node.get('cpu_pinning') or {})
                              .values())
            size = (topology.get('pagesize_kb') or SMALL_KB)
            used = guest_node.get('memory_mb', 0) * 1024 // size
            node.pages[size] = max(node.pages.get(size, 0) - used, 0)
    for node in nodes.values():
        node.cores = [core for core in node.cores if core <= node.pcpus]
    return [nodes[k] for k in sorted(nodes)]


def _page_order(node: Node, page_kb: int | str | None) -> list[Any]:
    """Page sizes a guest node may take on this node, in Nova's order."""
    huge = sorted((s for s in node.pages if s != SMALL_KB), reverse=True)
    if page_kb in (None, 'small'):
        return [SMALL_KB]
    if page_kb == 'large':
        return huge
    if page_kb == 'any':
        return huge + [SMALL_KB]
    return [page_kb]


def _pages_fit(node: Node, memory_mb: int, page_kb: int | str | None) -> int:
    """Guest nodes of memory_mb this node's pages still hold."""
    total = 0
    for size in _page_order(node, page_kb):
        if (memory_mb * 1024) % size:
            continue
        total += node.pages.get(size, 0) // (memory_mb * 1024 // size)
    return total


def _cpus_fit(node: Node, request: 'NumaRequest', first: bool) -> int | None:
    need = request.pcpus + (1 if request.isolate and first else 0)
    if not need:
        return None
    if request.thread_policy == 'isolate':
        # With cpu_dedicated_set, Nova refuses isolate on a host with
        # hyperthreads (nova/virt/hardware.py _pack_instance_onto_cores,
        # bug 1889633; the scheduler forbids HW_CPU_HYPERTHREADING too);
        # without them, a vCPU per core is a vCPU per CPU.
        return 0 if node.smt else len(node.cores) // need
    return len(node.pcpus) // need


def node_units(nodes: Iterable[Node], request: 'NumaRequest'
               ) -> dict[int, tuple[int | None, int]]:
    """{node id: (guest nodes it holds by CPUs or None, by pages)}."""
    return {node.id: (_cpus_fit(node, request, True),
                      _pages_fit(node, request.memory_mb,
                                 request.page_kb))
            for node in nodes}


def _spread(units: Iterable[int], k: int) -> int:
    """Instances of k guest nodes, each on k different host nodes: the
    largest t with sum(min(units_n, t)) >= k * t."""
    units = list(units)
    # sum(min(u, t)) - k * t is concave in t and 0 at t = 0, so the t
    # that hold form one range [0, best]: a binary search over it, at most
    # log2(sum / k) steps whatever the units (a node without pinned CPUs
    # has "unlimited" CPU units).
    low, high = 0, sum(units) // max(k, 1)
    while low < high:
        mid = (low + high + 1) // 2
        if sum(min(u, mid) for u in units) >= k * mid:
            low = mid
        else:
            high = mid - 1
    return low


def fit(nodes: Iterable[Node], request: 'NumaRequest') -> tuple[int, str]:
    """(how many more guests fit, the limit) for a NumaRequest.

    The limit is ``pages:<size> KiB`` when the pages run out first,
    ``numa:PCPU`` when the free dedicated CPUs are split across nodes
    so that no node holds a guest node's share, None when neither binds.
    """
    units = node_units(nodes, request)
    both = [min(c if c is not None else p, p) for c, p in units.values()]
    count = _spread(both, request.nodes)
    by_cpus = _spread([c if c is not None else 1 << 30
                       for c, _ in units.values()], request.nodes)
    by_pages = _spread([p for _, p in units.values()], request.nodes)
    if by_pages <= by_cpus and by_pages == count:
        size = request.page_kb
        label = f'{size} KiB' if isinstance(size, int) else \
            f'{size or "small"}'
        return count, f'pages:{label}'
    return count, 'numa:PCPU'
