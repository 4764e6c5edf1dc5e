"""Back guest RAM with huge pages reserved at boot.

Seed 003 names huge pages among the three things that closed the gap to
Hyper-V (with LVM volumes and an I/O thread); seed 004's EPT gain grows with
them, since a 2-level walk over large pages needs fewer TLB entries. Nova
gives a guest huge pages with ``hw:mem_page_size`` and counts them per host
NUMA node, so the host needs a pool made at boot (on x86, 1G pages only
with the CPU's ``pdpe1gb`` flag) and NUMATopologyFilter. Which page sizes
the host has, and whether Nova places huge-page guests on its architecture
at all, kvmtune.facts.arch decides: on x86 ``pdpe1gb`` says 1G, elsewhere
the kernel's own pool directories do (an arm64 1G pool is 1G without any
x86 flag; s390x has only 1M pages and no NUMA topology in Nova, so the
profile is refused there).

Sizing (TripleO's derived NFV parameters: openstack/tripleo-ansible,
roles/tripleo_derived_parameters, host_mem_default): the host keeps
``reserved_host_memory_mb`` of small pages, 4096 MB as TripleO does, scaled
down to an eighth of RAM on hosts under 32 GB and never below Nova's 512
MB default; ``memory_percent`` of the rest becomes the pool. A pool already
made keeps its size unless ``memory_percent`` is given.
"""


from kvmtune.facts import arch
from kvmtune.facts.types import NumaNode
from kvmtune import pagesize
from kvmtune.tuning.plan import HugepageRequest
from kvmtune.tuning.tuners import base

HOST_RESERVED_MB = 4096     # TripleO's reserved host memory
NOVA_RESERVED_MB = 512      # Nova's reserved_host_memory_mb default
DEFAULT_PERCENT = 50
PAGE_KB = {'1G': 1024 * 1024, '2M': 2048}


def page_size_kb(text: str) -> int | None:
    """hw:mem_page_size -> KiB (kvmtune.pagesize.kib), or None for
    small/large/any (Nova's unit-less sizes are KiB)."""
    try:
        return pagesize.kib(text)
    except ValueError:
        return None


class Hugepages(base.Tuner):
    name = 'hugepages'
    description = 'Guest RAM on huge pages from a boot-time pool.'

    PARAMS = (
        base.Param('page_size', default='large', spec='hw:mem_page_size',
                   help='hw:mem_page_size: small, large, any, 2MB, 1GB...'),
        base.Param('host_page_size', default='auto',
                   choices=('auto', '1G', '2M'),
                   help='Pool page size; auto is 1G when the host offers '
                        'it (x86: pdpe1gb), else 2M'),
        base.Param('memory_percent', type=int, min=1, max=90,
                   help='Share of RAM after reserved_host_memory_mb that '
                        'goes to the pool (default: keep a pool that has '
                        'pages, else 50)'),
        base.Param('host_reserved_pages', type=int, default=1, min=0,
                   help='Pages per NUMA node Nova keeps from guests '
                        '([DEFAULT] reserved_huge_pages) for the host\'s '
                        'own users, such as OVS with a userspace datapath; '
                        '0 gives every page to guests'),
        base.Param('reserved_host_memory_mb', type=int, min=0,
                   help='Small-page memory for the host (default: 4096, '
                        'or RAM/8 under 32 GB, at least 512)'),
    )

    OWNED_EXTRA_SPECS = ('hw:mem_page_size',)
    EXTRA_SPECS = {'hw:mem_page_size': '{page_size}'}
    NOVA_CONF = {
        ('DEFAULT', 'reserved_host_memory_mb'):
            base.FromHost('host_memory_mb'),
        ('DEFAULT', 'reserved_huge_pages'): base.FromHost('reserved_pages'),
        ('filter_scheduler', 'enabled_filters'):
            base.FromRelease('numa_filters'),
    }
    KERNEL_ARGS = (base.FromHost('pool_args'),)
    NOTES = (
        'hw:mem_page_size gives the guest a NUMA topology: it needs '
        'NUMATopologyFilter and fits in one host node unless hw:numa_nodes '
        'says otherwise.',
    )

    # -- host-derived values ---------------------------------------------

    def pool_size(self) -> str:
        """'1G' or '2M': the host pool the plan makes. On x86 (or facts
        without an architecture) 1G with pdpe1gb; elsewhere 1G when the
        kernel offers 1G pages (kvmtune.facts.arch.page_sizes_kb)."""
        wanted: str = self.params['host_page_size']
        if wanted != 'auto':
            return wanted
        if self._x86():
            return '1G' if self.fact('cpu.pdpe1gb') else '2M'
        return '1G' if arch.offers_size(self.facts, PAGE_KB['1G']) else '2M'

    def _x86(self) -> bool:
        return arch.of(self.facts) in (arch.X86, None)

    def _arch_refusal(self) -> str | None:
        """Why this architecture gets no pool of the plan's size, or None:
        Nova places no huge-page guest there, or its kernel does not offer
        the size (or which sizes it offers cannot be told)."""
        refusal = arch.nova_numa_refusal(self.facts,
                                         'hw:mem_page_size (huge pages)')
        if refusal or self._x86():
            return refusal
        sizes = arch.page_sizes_kb(self.facts)
        where = f'the {arch.name(self.facts)} kernel'
        if sizes is None:
            return (f'the huge page pool is withheld: the page sizes '
                    f'{where} offers are unknown (no '
                    '/sys/kernel/mm/hugepages/hugepages-*kB)')
        if PAGE_KB[self.pool_size()] not in sizes:
            return (f'the huge page pool is withheld: {where} offers '
                    f'{arch.sizes_text(sizes)} pages, not '
                    f'{self.pool_size()}')
        return None

    def numa_nodes(self) -> list[NumaNode]:
        """The nodes guest memory can come from: those with CPUs.

        Nova fits each guest NUMA cell, vCPUs and memory together, into
        one host cell (nova/virt/hardware.py, numa_fit_instance_to_host),
        so pages on a memory-only node (GPU or CXL memory) never reach a
        guest: the plan reserves none there (doc/facts.md)."""
        nodes = super().numa_nodes()
        with_cpus = [node for node in nodes if node.get('cpus') != []]
        return with_cpus or nodes

    def _unknown_pools(self) -> list[int]:
        """Ids of nodes whose pool of the plan's size has no known size."""
        size_kb = PAGE_KB[self.pool_size()]
        return [node['id'] for node in self.numa_nodes()
                if any(pool.get('size_kb') == size_kb
                       and pool.get('total') is None
                       for pool in node.get('hugepages', []))]

    def _unsized(self) -> str | None:
        """Why the pool cannot be sized from this host's memory, or None.

        A pool that has pages keeps its size unless memory_percent is given;
        otherwise its size comes from MemTotal. Without MemTotal (many public
        captures lack /proc/meminfo), or with too little memory, that size
        would be 0: a plan must not put hugepages=0 on a kernel command line
        nor advise it as the fix (tests/unit/test_hostile.py)."""
        if self.params['memory_percent'] is None and sum(
                self._pool_pages().values()):  # type: ignore[arg-type]
            return None
        total = self.fact('memory.total_mb')
        if total is None:
            return (f'the {self.pool_size()} huge page pool is withheld: '
                    'the host\'s memory size is unknown (no MemTotal in '
                    '/proc/meminfo), so the pool cannot be sized')
        if self.pool_pages() == 0:
            return (f'the {self.pool_size()} huge page pool is withheld: '
                    f'{total} MB of memory leaves no room for it after '
                    f'{self.host_memory_mb()} MB kept for the host')
        return None

    def withheld(self) -> list[str]:
        refusal = self._arch_refusal()
        if refusal:
            return [refusal]
        unknown = self._unknown_pools()
        if unknown:
            return [f'the huge page pool is withheld: nr_hugepages of the '
                    f'{self.pool_size()} pool is unknown on node(s) '
                    f'{", ".join(map(str, unknown))}']
        unsized = self._unsized()
        return [unsized] if unsized else []

    def _pool_pages(self) -> dict[int, int]:
        """{node id: pages of the pool size} as the host has them now
        (a pool of unknown size counts 0; withheld() says so)."""
        size_kb = PAGE_KB[self.pool_size()]
        return {node['id']: sum(pool.get('total') or 0
                                for pool in node.get('hugepages', [])
                                if pool.get('size_kb') == size_kb)
                for node in self.numa_nodes()}

    def host_memory_mb(self) -> int:
        reserved: int | None = self.params['reserved_host_memory_mb']
        if reserved is not None:
            return reserved
        total: int = self.fact('memory.total_mb', 0)
        return min(HOST_RESERVED_MB, max(NOVA_RESERVED_MB, total // 8))

    def pool_pages(self) -> int:
        """Total pages the boot-time pool should hold."""
        now = sum(self._pool_pages().values())
        percent = self.params['memory_percent']
        if percent is None and now:
            return now
        percent = percent or DEFAULT_PERCENT
        usable_mb: int = (self.fact('memory.total_mb', 0)
                          - self.host_memory_mb())
        page_mb = PAGE_KB[self.pool_size()] // 1024
        return max(0, usable_mb * percent // 100 // page_mb)

    def hugepage_pools(self) -> list[HugepageRequest]:
        """[{'node', 'size_kb', 'count'}]: the pool per NUMA node (the
        plan's ``hugepages`` key, set by kvmtune.tuning.pages.apply). A pool
        that has pages keeps its nodes' counts unless memory_percent is given;
        a new one is pool_pages() spread evenly over the nodes."""
        if self.withheld():
            return []
        size_kb = PAGE_KB[self.pool_size()]
        now = self._pool_pages()
        if self.params['memory_percent'] is None and sum(
                now.values()):  # type: ignore[arg-type]
            counts = now
        else:
            nodes = [node['id'] for node in self.numa_nodes()]
            total = self.pool_pages()
            share, extra = divmod(total, len(nodes))
            counts = {node: share + (1 if index < extra else 0)
                      for index, node in enumerate(nodes)}
        return [HugepageRequest(node=node, size_kb=size_kb, count=count)
                for node, count in sorted(counts.items())]

    def pool_args(self) -> list[str] | None:
        if self.withheld():
            return None
        size = self.pool_size()
        count = str(self.pool_pages())
        if len(self.numa_nodes()) < len(super().numa_nodes()):
            # Memory-only nodes: a plain count would spread pages onto
            # them too; the kernel's per-node form (Documentation/
            # admin-guide/kernel-parameters.txt, hugepages=) names the
            # nodes with CPUs only.
            nodes = [node['id'] for node in self.numa_nodes()]
            share, extra = divmod(self.pool_pages(), len(nodes))
            count = ','.join(f'{node}:{share + (index < extra)}'
                             for index, node in enumerate(nodes))
        return [f'default_hugepagesz={size}', f'hugepagesz={size}',
                f'hugepages={count}']

    def reserved_pages(self) -> list[str] | None:
        count = self.params['host_reserved_pages']
        if not count or self._arch_refusal():
            return None
        size = self.pool_size() + 'B'
        return [f'node:{node["id"]},size:{size},count:{count}'
                for node in self.numa_nodes()]

    # -- checks ----------------------------------------------------------

    @base.check('pdpe1gb')
    def _pdpe1gb(self) -> base.CheckOutcome:
        if not self._x86():
            return None     # an x86 flag: page-sizes says it elsewhere
        has_flag = bool(self.fact('cpu.pdpe1gb'))
        if has_flag:
            return (base.PASS, 'the CPU has pdpe1gb: 1G pages possible', None)
        if self.params['host_page_size'] == '1G':
            return (base.FAIL, 'the CPU lacks pdpe1gb: 1G pages are '
                    'impossible here', 'set host_page_size: 2M (or auto) '
                    'in the profile and use 2M pages')
        return (base.PASS, 'the CPU lacks pdpe1gb: the pool uses 2M pages',
                None)

    @base.check('page-sizes')
    def _page_sizes(self) -> base.CheckOutcome:
        if self._x86():
            return None     # pdpe1gb says it
        refusal = self._arch_refusal()
        if refusal:
            return (base.FAIL, refusal, 'plan this host without the '
                    'hugepages tuner (a profile without it)'
                    if arch.nova_numa_refusal(self.facts, '') else
                    'capture the host again with kvmtune host capture '
                    '(/sys/kernel/mm/hugepages must be readable), or set '
                    'host_page_size to a size the kernel offers')
        sizes = arch.page_sizes_kb(self.facts) or []
        return (base.PASS, f'the {arch.name(self.facts)} kernel offers '
                f'{arch.sizes_text(sizes)} pages: the pool uses '
                f'{self.pool_size()}', None)

    @base.check('guest-page-size')
    def _guest_page_size(self) -> base.CheckOutcome:
        wanted_kb = page_size_kb(self.params['page_size'])
        pool_kb = PAGE_KB[self.pool_size()]
        if wanted_kb is None:
            return None
        if wanted_kb == pool_kb:
            return (base.PASS, f'guests ask for {self.pool_size()} pages, '
                    'the pool has that size', None)
        return (base.FAIL, f'guests ask for {wanted_kb} KiB pages, the pool '
                f'holds {pool_kb} KiB pages',
                'set page_size: large (or the pool size) in the profile')

    @base.check('hugepage-pool')
    def _pool(self) -> base.CheckOutcome:
        size = self.pool_size()
        if self._arch_refusal():
            return None     # page-sizes says why
        if self._unknown_pools():
            return (base.FAIL, self.withheld()[0],
                    'capture the host again with kvmtune host capture '
                    '(nr_hugepages must be readable)')
        unsized = self._unsized()
        if unsized:
            return (base.FAIL, unsized,
                    'capture the host again with kvmtune host capture '
                    '(MemTotal must be readable), or give host_page_size '
                    'and reserve the pool by hand: a pool with pages keeps '
                    'its size'
                    if self.fact('memory.total_mb') is None else
                    'lower reserved_host_memory_mb, or use a host with '
                    'more memory')
        pages = self._pool_pages()
        if sum(pages.values()):
            spread = ', '.join(f'node {node}: {count}'
                               for node, count in pages.items())
            return (base.PASS, f'{sum(pages.values())} {size} pages '
                    f'({spread})', None)
        return (base.FAIL, f'no {size} huge pages on this host: guests with '
                f'hw:mem_page_size={self.params["page_size"]} cannot start',
                self.kernel_args_fix(
                    self.pool_args()))  # type: ignore[arg-type]  # sized

    @base.check('host-reserved-pages')
    def _host_reserved(self) -> base.CheckOutcome:
        count = self.params['host_reserved_pages']
        pages = self._pool_pages()
        if not count or not sum(pages.values()):
            return None
        short = [str(node) for node, have in pages.items() if have <= count]
        if short:
            return (base.WARN, f'reserving {count} page(s) per node leaves '
                    f'none for guests on node(s) {", ".join(short)}',
                    'grow the pool or lower host_reserved_pages')
        return (base.PASS, f'{count} page(s) per node kept for the host, '
                'the rest for guests', None)
