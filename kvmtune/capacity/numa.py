"""How many guests of one NUMA request a host's nodes still hold.

Nova's scheduler and resource tracker place guests one at a time: the
NUMATopologyFilter fits one (nova/virt/hardware.py
``numa_fit_instance_to_host``), the claim records what it uses
(``numa_usage_from_instance_numa``), and the next guest is fitted on what
is left. Which CPUs a guest gets decides what the next one can get, so the
count is that loop, run here on kvmtune's own model of those rules (read
from Nova 34's nova/virt/hardware.py and nova/objects/numa.py,
https://opendev.org/openstack/nova):

- host nodes are tried in Nova's order (more free memory first, then
  fewer shared vCPUs in use, or more free dedicated CPUs, for pinned
  guests) when the host has more nodes than the guest, and every ordered
  choice of distinct nodes for the guest's nodes, first fit wins;
- a guest node's memory comes from pages of the requested size (``small``:
  the smallest; ``large``: the largest huge page size with room, then the
  next; ``any``: any, largest first; a size in KiB: that pool), or, with
  no page size, from the smallest pages: free ones for a pinned guest,
  their total for a shared one; the size a node chose is what the guest
  node asks of the next host node tried for the same guest;
- pinned vCPUs (dedicated, and the dedicated part of mixed) need free
  dedicated CPUs, packed onto cores as Nova does: cores with the most
  free sibling threads first (``prefer``), only cores with at least two
  free threads (``require``), one thread of a wholly free core, whose
  siblings are then used up too (``isolate``, refused on a node with
  shared CPUs and hyperthreads); emulator threads ``isolate``: one more
  CPU, on the host node of guest node 0;
- shared vCPUs (shared, and the rest of mixed) need the node to have at
  least that many shared CPUs (none on a CPU-less node), and with the
  filter's limits: shared vCPUs in use at most the node's shared CPUs x
  ``cpu_allocation_ratio``, memory in use at most the node's memory x
  ``ram_allocation_ratio``.

Every fit counts its steps; past ``MAX_STEPS`` the count stops and is
partial (a guest of many nodes on a host of many nodes has more orders to
try than a count can afford), never a hang.

Not modelled: PCI and vPMEM affinity, network NUMA affinity,
``[compute] packing_host_numa_cells_allocation_strategy=True`` (pack),
``reserved_huge_pages``.
"""

from collections.abc import Iterable
import itertools
from typing import Any
from typing import TYPE_CHECKING

from kvmtune.capacity.cells import Node

if TYPE_CHECKING:
    from kvmtune.capacity.request import NumaRequest

# The work one count may do: a step is one guest node tried on one host
# node, or one order of host nodes tried. A pinned guest node on a large
# node is tens of microseconds: the bound is seconds, not minutes.
MAX_STEPS = 200_000


class Bounded(Exception):
    """The count would take more than MAX_STEPS steps."""


class _Guest:
    """One guest node being fitted: its needs and the page size it asks
    (the size a host node chose, once one did)."""

    def __init__(self, pcpus: int, vcpus: int, memory_mb: int,
                 page: int | float | str | None) -> None:
        self.pcpus, self.vcpus, self.memory_mb = pcpus, vcpus, memory_mb
        self.page = page
        # Nova's InstanceNUMACell.id: the guest node's index, overwritten
        # with the id of each host node it is packed onto or fits on
        self.id: int = 0
        self.pinned: tuple[list[int], set[int]] = ([], set())


def _page_for(node: Node, guest: _Guest, pinned: bool
              ) -> tuple[bool, int | float | None, str]:
    """(fits, the page size chosen, why not): Nova's
    _numa_cell_supports_pagesize_request / can_fit_pagesize."""
    memory_kb = guest.memory_mb * 1024
    sizes = sorted(node.pages, reverse=True)
    page = guest.page
    if page is None:
        smallest = sizes[-1]
        total, used = node.pages[smallest]
        room = (total - used if pinned else total) * smallest
        if memory_kb <= room and memory_kb % smallest == 0:
            return True, None, ''
        return False, None, 'pages:small'
    if page == 'small':
        wanted = sizes[-1:]
    elif page == 'large':
        wanted = sizes[:-1]
    elif page == 'any':
        wanted = sizes
    elif isinstance(page, (int, float)):
        wanted = [page]
    else:
        wanted = []
    for size in wanted:
        if size not in node.pages:
            break
        total, used = node.pages[size]
        if memory_kb <= (total - used) * size and memory_kb % size == 0:
            return True, size, ''
    label = f'{page} KiB' if isinstance(page, (int, float)) else page
    return False, None, f'pages:{label}'


def _pinning(threads: int, cores: list[list[int]], need: int
             ) -> list[int] | None:
    """Nova's _get_pinning: ``threads`` CPUs of each core, in order."""
    if threads * len(cores) < need:
        return None
    return list(itertools.chain(*(core[:threads] for core in cores)))[:need]


def _reserved(cores: list[list[int]], pinning: list[int] | None,
              reserve: int, whole_cores: bool) -> set[int] | None:
    """Nova's _get_reserved: the emulator threads' CPU(s), from the free
    threads the pinning left (whole cores: from cores it left alone)."""
    if not pinning:
        return None
    if not reserve:
        return None
    taken = set(pinning)
    if whole_cores:
        left = [core for core in cores if not taken & set(core)]
    else:
        left = [[c for c in core if c not in taken] for core in cores]
    return set(list(itertools.chain(*left))[:reserve]) or None


def _pack(node: Node, need: int, policy: str | None, reserve: int
          ) -> tuple[list[int], set[int]] | None:
    """(pinned CPUs, emulator CPUs) on the node, or None: Nova's
    _pack_instance_onto_cores."""
    free = node.free_pcpus
    threads_per_core = max((len(core) for core in node.siblings),
                           default=1) or 1
    by_threads: dict[int, list[list[int]]] = {}
    for core in node.siblings:
        available = sorted(core & free)
        for count in range(1, len(available) + 1):
            by_threads.setdefault(count, []).append(available)
    pinning: list[int] | None = None
    reserved: set[int] | None = None
    if policy == 'isolate':
        if threads_per_core not in by_threads:
            return None
        if threads_per_core != 1 and node.pcpus != node.shared:
            # with cpu_dedicated_set, isolate on hyperthreads is Nova's
            # bug 1889633: refused here (the scheduler forbids the trait)
            return None
        pinning = _pinning(1, by_threads[threads_per_core], need)
        reserved = _reserved(by_threads.get(1, []), pinning, reserve, True)
        if not pinning or (reserve and not reserved):
            return None
    else:
        if policy == 'require' and threads_per_core <= 1:
            return None
        for threads in sorted(by_threads, reverse=True):
            if policy == 'require' and threads <= 1:
                continue
            pinning = _pinning(threads, by_threads[threads], need)
            reserved = _reserved(by_threads.get(1, []), pinning, reserve,
                                 False)
            if pinning is None or (reserve and not reserved):
                continue
            break
        if policy != 'require' and not pinning:
            singles = [[c] for core in by_threads.get(1, []) for c in core]
            pinning = _pinning(1, singles, need)
            reserved = _reserved(singles, pinning, reserve, False)
    if pinning is None or (reserve and not reserved):
        return None
    return pinning, reserved or set()


def _fit_node(node: Node, guest: _Guest, request: 'NumaRequest',
              reserve: int, limits: tuple[float, float] | None
              ) -> str | None:
    """Why the guest node does not fit on the host node, or None (then
    guest.page / guest.pinned say how): Nova's _numa_fit_instance_cell.
    """
    pinned_policy = request.policy in ('dedicated', 'mixed')
    fits, size, why = _page_for(node, guest, pinned_policy)
    if not fits:
        return why
    if size is not None:
        # Nova writes the size chosen into the guest node before it looks
        # at CPUs: the next host node tried is asked for that size
        guest.page = size
    if pinned_policy and guest.pcpus + reserve > len(node.pcpus):
        return NEVER + 'numa:PCPU'
    if request.policy in ('shared', 'mixed') and \
            guest.vcpus > len(node.shared):
        return NEVER + 'numa:VCPU'
    if pinned_policy:
        if guest.pcpus + reserve > len(node.free_pcpus):
            return 'numa:PCPU'
        packed = _pack(node, guest.pcpus, request.thread_policy, reserve)
        if packed is None:
            return ('numa:PCPU' if request.thread_policy in
                    (None, 'prefer') else
                    f'numa:PCPU ({request.thread_policy} threads)')
        # written into the guest node before the limits are checked
        guest.pinned = packed
        guest.id = node.id
    if request.policy in ('shared', 'mixed') and limits:
        cpu_ratio, ram_ratio = limits
        if node.cpu_used + guest.vcpus > len(node.shared) * cpu_ratio:
            return 'numa:VCPU'
        if node.memory_used + guest.memory_mb > node.memory_mb * ram_ratio:
            return 'numa:MEMORY_MB'
    guest.id = node.id
    return None


# A reason a host node could never hold the guest node, however empty
# (too few dedicated or shared CPUs at all): the limit shown is the first
# other reason, so a memory-only node does not hide what ran out.
NEVER = 'never:'


def _worse(why: str, reason: str) -> str:
    if not why or (why.startswith(NEVER) and not reason.startswith(NEVER)):
        return reason
    return why


class _Counter:
    def __init__(self, budget: int) -> None:
        self.steps = 0
        self.budget = budget

    def step(self) -> None:
        self.steps += 1
        if self.steps > self.budget:
            raise Bounded()


def _fit_one(nodes: list[Node], request: 'NumaRequest',
             limits: tuple[float, float] | None, counter: _Counter
             ) -> tuple[list[tuple[Node, _Guest]] | None, str]:
    """Where one more guest goes ([(host node, guest node)]), or None and
    why not: Nova's numa_fit_instance_to_host (spread)."""
    guests = [_Guest(p, v, m, request.page_kb) for p, v, m in request.cells]
    for index, guest in enumerate(guests):
        guest.id = index
    if len(nodes) < len(guests):
        return None, 'numa:nodes'
    order = list(nodes)
    if len(nodes) > len(guests):
        order.sort(key=lambda n: n.memory_mb - n.memory_used, reverse=True)
        if request.policy == 'shared':
            order.sort(key=lambda n: n.cpu_used)
        else:
            order.sort(key=lambda n: len(n.free_pcpus), reverse=True)
    failed: dict[tuple[int, int], str] = {}
    fitted: set[tuple[int, int]] = set()
    why = ''
    for chosen in itertools.permutations(order, len(guests)):
        counter.step()
        placed: list[tuple[Node, _Guest]] = []
        for node, guest in zip(chosen, guests):
            # Nova keys its caches by (host node, the guest node's id at
            # the time), and a fit overwrites that id with the host
            # node's: a guest node can take another one's cached "fits"
            # (tests/unit/capacity/test_numa.py NOVA_BUGS, fit-cache-id)
            pair = (node.id, guest.id)
            if pair in failed:
                why = _worse(why, failed[pair])
                break
            if pair in fitted:
                guest.id = node.id
            else:
                counter.step()
                reason = _fit_node(node, guest, request,
                                   1 if request.isolate and not placed
                                   else 0, limits)
                if reason:
                    failed[pair] = reason
                    why = _worse(why, reason)
                    break
                fitted.add(pair)
            placed.append((node, guest))
        if len(placed) == len(guests):
            return placed, ''
    return None, why.replace(NEVER, '') or 'numa:nodes'


def _claim(placed: list[tuple[Node, _Guest]], request: 'NumaRequest'
           ) -> str | None:
    """Record one guest's use (Nova's numa_usage_from_instance_numa), or
    say why Nova's claim would fail."""
    for node, guest in placed:
        size = guest.page if isinstance(guest.page, (int, float)) \
            else min(node.pages)
        if size in node.pages:
            node.pages[size][1] += int(guest.memory_mb * 1024 // size)
        node.memory_used += guest.memory_mb
        node.cpu_used += guest.vcpus
        if request.policy == 'shared':
            continue
        cpus = set(guest.pinned[0]) | guest.pinned[1]
        if request.thread_policy == 'isolate':
            cpus |= {c for core in node.siblings if core & cpus
                     for c in core}
        if not cpus <= node.pcpus or cpus & node.pinned:
            # Nova reuses a guest node's pinning from another host node
            # it tried (numa_fit_instance_to_host's fit_cache): its claim
            # then raises CPUPinningUnknown / CPUPinningInvalid
            return ('Nova\'s claim would fail: the pinning its fit chose '
                    'is not on this host node')
        node.pinned |= cpus
    return None


def _signature(nodes: list[Node]) -> tuple[Any, ...]:
    """Everything of the nodes a count depends on."""
    return tuple((n.id, n.pcpus, n.shared, tuple(n.siblings), n.memory_mb,
                  tuple(sorted((k, tuple(v)) for k, v in n.pages.items())),
                  frozenset(n.pinned), n.memory_used, n.cpu_used)
                 for n in nodes)


# Counts already made: a fleet has many nodes of one shape and use, and
# the same nodes and request always count the same.
_COUNTS: dict[tuple[Any, ...], tuple[int | None, str]] = {}
_COUNTS_MAX = 4096


def fit(nodes: Iterable[Node], request: 'NumaRequest',
        limits: tuple[float, float] | None = None,
        max_steps: int = MAX_STEPS) -> tuple[int | None, str]:
    """(how many more guests fit, the limit); see _count."""
    given = list(nodes)
    key = (_signature(given), request, limits, max_steps)
    if key not in _COUNTS:
        if len(_COUNTS) >= _COUNTS_MAX:
            _COUNTS.clear()
        _COUNTS[key] = _count(given, request, limits, max_steps)
    return _COUNTS[key]


def _count(nodes: list[Node], request: 'NumaRequest',
           limits: tuple[float, float] | None,
           max_steps: int) -> tuple[int | None, str]:
    """(how many more guests fit, the limit) for a NumaRequest, or
    (None, why) when the count cannot be made within ``max_steps``.

    :param limits: (cpu_allocation_ratio, ram_allocation_ratio) as the
        NUMATopologyFilter passes them (the node's Placement ratios of
        VCPU and MEMORY_MB); None: no limits (shared guests then only
        need enough shared CPUs and small pages per node)

    The limit is ``pages:<size>`` when the pages run out first,
    ``numa:PCPU`` (pinned CPUs, or cores with free threads), ``numa:VCPU``
    or ``numa:MEMORY_MB`` (the filter's limits for shared vCPUs), or
    ``numa:nodes`` (fewer host nodes than guest nodes).
    """
    work = [node.copy() for node in nodes]
    if limits is None and request.policy != 'dedicated':
        # Nova checks shared vCPUs and memory against the node's total,
        # not its use, when no limits are given: no count ends
        return None, ('shared vCPUs have no limit without the '
                      'filter\'s allocation ratios')
    counter = _Counter(max_steps)
    count = 0
    try:
        while True:
            placed, why = _fit_one(work, request, limits, counter)
            if placed is None:
                return count, why
            problem = _claim(placed, request)
            if problem:
                return None, f'{count} fit, then: {problem}'
            count += 1
    except Bounded:
        return None, (f'at least {count}: the count stopped at its bound '
                      f'of {max_steps} fit steps ({request.nodes} guest '
                      f'node(s) on {len(work)} host nodes)')


def place(nodes: list[Node], request: 'NumaRequest',
          limits: tuple[float, float] | None = None,
          max_steps: int = MAX_STEPS) -> str | None:
    """Fit one guest on ``nodes`` and claim what it uses there (the nodes
    change), or say why not (the limit, as ``fit`` names it)."""
    try:
        placed, why = _fit_one(nodes, request, limits, _Counter(max_steps))
    except Bounded:
        return f'the fit stopped at its bound of {max_steps} steps'
    if placed is None:
        return why
    return _claim(placed, request)
