"""Pin guest vCPUs to host CPUs the host itself keeps off.

Seed 004 (the OpenStack KVM paper, section 2.2) pins vCPUs with virsh; in
Nova the same is a flavor with ``hw:cpu_policy=dedicated`` on a host whose
``[compute] cpu_dedicated_set`` holds the CPUs guests may own. The split is
TripleO's derived NFV rule: per NUMA node, the thread siblings of its first
core stay with the host (``cpu_shared_set``: emulator threads, host
processes); every other online CPU is dedicated, and the kernel keeps its
own tasks off them with ``isolcpus``.
"""

from typing import Any
from typing import cast

from kvmtune.errors import InputError
from kvmtune.facts import arch
from kvmtune.facts import cmdline
from kvmtune.facts.cpulist import format_cpulist
from kvmtune.tuning.tuners import base


class CpuPinning(base.Tuner):
    name = 'cpu_pinning'
    description = 'Dedicated host CPUs for guest vCPUs (hw:cpu_policy).'

    PARAMS = (
        base.Param('policy', default='dedicated', spec='hw:cpu_policy',
                   help='hw:cpu_policy: dedicated, shared or mixed'),
        base.Param('thread_policy', default='prefer',
                   spec='hw:cpu_thread_policy',
                   help='hw:cpu_thread_policy: prefer, isolate or require'),
        base.Param('emulator_threads_policy', default='share',
                   spec='hw:emulator_threads_policy',
                   help='hw:emulator_threads_policy: share (on '
                        'cpu_shared_set) or isolate (a core per guest)'),
        base.Param('dedicated_mask', spec='hw:cpu_dedicated_mask',
                   help='hw:cpu_dedicated_mask, needed by policy mixed: '
                        'the guest CPUs to pin, e.g. ^0 (all but vCPU 0)'),
        base.Param('isolcpus', type=bool, default=True,
                   help='Add isolcpus=<dedicated CPUs> to the kernel '
                        'arguments'),
    )

    OWNED_EXTRA_SPECS = ('hw:cpu_policy', 'hw:cpu_thread_policy',
                         'hw:emulator_threads_policy',
                         'hw:cpu_dedicated_mask')
    EXTRA_SPECS = {
        'hw:cpu_policy': '{policy}',
        'hw:cpu_thread_policy': '{thread_policy}',
        'hw:emulator_threads_policy': '{emulator_threads_policy}',
        'hw:cpu_dedicated_mask': base.FromHost('mixed_mask'),
    }
    NOVA_CONF = {
        ('compute', 'cpu_shared_set'): base.FromHost('shared_set'),
        ('compute', 'cpu_dedicated_set'): base.FromHost('dedicated_set'),
        # Else Placement falls back from PCPU to VCPU and pinned flavors
        # land unpinned (Nova's [workarounds] disable_fallback_pcpu_query,
        # https://docs.openstack.org/nova/latest/configuration/config.html).
        ('workarounds', 'disable_fallback_pcpu_query'): 'true',
        ('filter_scheduler', 'enabled_filters'):
            base.FromRelease('numa_filters'),
    }
    # A Nova without the option has no fallback query left to disable
    # (nova/scheduler/manager.py reads it only to make that query).
    OPTIONAL_NOVA_CONF = {
        ('workarounds', 'disable_fallback_pcpu_query'):
            'without it that Nova makes no fallback VCPU query',
    }
    KERNEL_ARGS = (base.FromHost('isolcpus_arg'),)

    @classmethod
    def parse_params(cls, given: Any,
                     source: str | None = None) -> dict[str, Any]:
        values = super().parse_params(given, source)
        # Nova refuses a mixed flavor without a mask, and a mask without
        # mixed (nova/virt/hardware.py).
        if (values['policy'] == 'mixed') != bool(values['dedicated_mask']):
            raise InputError(
                'dedicated_mask goes with policy mixed, and only with it',
                source=source, key=f'{cls.name}.params.dedicated_mask',
                fix='give both (policy: mixed, dedicated_mask: ^0) or '
                    'neither')
        return values

    def mixed_mask(self) -> str | None:
        mask: str | None = self.params['dedicated_mask']
        return mask

    # -- host-derived values ---------------------------------------------

    def _online(self) -> set[int]:
        return set(self.fact('cpu.online', []))

    def split(self) -> tuple[set[int] | None, set[int] | None, str | None]:
        """(host CPUs, guest CPUs, None), or (None, None, reason) when the
        facts cannot support a split that leaves the host its CPUs.

        Per NUMA node with CPUs, the first online core's thread siblings
        stay with the host. The result is checked against the invariants
        (doc/facts.md, "Plan safety") before any value is derived from it.
        """
        if not hasattr(self, '_split'):
            self._split = self._make_split()
        return self._split

    def _make_split(self
                    ) -> tuple[set[int] | None, set[int] | None, str | None]:
        online = self._online()
        reason = arch.nova_numa_refusal(
            self.facts, 'CPU pinning (hw:cpu_policy)') or \
            self._missing_facts(online)
        if reason:
            return None, None, reason
        siblings = self.fact('cpu.thread_siblings')
        kept: set[int] = set()
        for node in self.numa_nodes():
            # _missing_facts refused a node whose cpus are None
            cpus = sorted(set(node['cpus']) & online)  # type: ignore[arg-type]
            if not cpus:
                continue        # a memory-only node
            group = next(g for g in siblings if cpus[0] in g)
            kept.update(set(group) & set(cpus))
        guest = online - kept
        reason = self.unsafe(online, kept, guest,
                             guest if self.params['isolcpus'] else set())
        if reason:
            return None, None, reason
        return kept, guest, None

    def _missing_facts(self, online: set[int]) -> str | None:
        """Why the facts cannot place the host's CPUs, or None."""
        if not online:
            return 'the facts list no online CPU'
        nodes = self.numa_nodes()
        unknown = [str(n['id']) for n in nodes if n.get('cpus') is None]
        if unknown:
            return (f'the CPUs of NUMA node(s) {", ".join(unknown)} are '
                    'unknown (no cpulist, cpumap or cpuN links)')
        placed: set[int] = set()
        for node in nodes:
            placed.update(node['cpus'])  # type: ignore[arg-type]  # above
        if online - placed:
            return (f'online CPU(s) {format_cpulist(online - placed)} are '
                    'in no NUMA node, so the CPUs the host keeps per node '
                    'cannot be chosen')
        siblings = self.fact('cpu.thread_siblings')
        if siblings is None:
            return ('the thread siblings are unknown (the kernel lists '
                    'none), so a host core cannot be kept whole')
        grouped: set[int] = set()
        for group in siblings:
            grouped.update(group)
        if online - grouped:
            return (f'online CPU(s) {format_cpulist(online - grouped)} '
                    'are in no thread sibling group')
        return None

    def unsafe(self, online: set[int], host: set[int], guest: set[int],
               isolated: set[int]) -> str | None:
        """Why a split is unsafe, or None: the invariants every plan keeps.

        The host keeps at least one CPU, and one in every NUMA node that
        has CPUs; no CPU is both kept and dedicated; no CPU is isolated
        unless dedicated; nothing outside the online CPUs is used."""
        if not host:
            return 'the split leaves the host no CPU'
        if host & guest:
            return (f'CPU(s) {format_cpulist(host & guest)} would be both '
                    'kept by the host and dedicated')
        if isolated - guest:
            return (f'CPU(s) {format_cpulist(isolated - guest)} would be '
                    'isolated without being dedicated')
        if (host | guest) - online:
            return (f'CPU(s) {format_cpulist((host | guest) - online)} '
                    'are not online')
        for node in self.numa_nodes():
            cpus = set(node.get('cpus') or []) & online
            if cpus and not cpus & host:
                return (f'every online CPU of NUMA node {node["id"]} '
                        f'({format_cpulist(cpus)}) would be dedicated')
        return None

    def host_cpus(self) -> set[int] | None:
        """The CPUs the host keeps, or None when withheld."""
        return self.split()[0]

    def guest_cpus(self) -> set[int] | None:
        """The CPUs dedicated to guests, or None when withheld."""
        return self.split()[1]

    def withheld(self) -> list[str]:
        """Reasons the values this tuner derives from the host are left
        out of the plan (kvmtune.tuning.plan: ``plan`` and ``nova-conf apply``
        exit 2 on them)."""
        reason = self.split()[2]
        if reason is None:
            return []
        return [f'cpu_shared_set, cpu_dedicated_set and isolcpus withheld: '
                f'{reason}']

    def shared_set(self) -> str | None:
        return format_cpulist(self.host_cpus() or ()) or None

    def dedicated_set(self) -> str | None:
        return format_cpulist(self.guest_cpus() or ()) or None

    def isolcpus_arg(self) -> str | None:
        guest = self.guest_cpus()
        if not self.params['isolcpus'] or not guest:
            return None
        return 'isolcpus=' + format_cpulist(guest)

    # -- checks ----------------------------------------------------------

    @base.check('numa-topology')
    def _numa_topology(self) -> base.CheckOutcome:
        refusal = arch.nova_numa_refusal(self.facts,
                                         'CPU pinning (hw:cpu_policy)')
        if refusal:
            return (base.FAIL, refusal, 'plan this host without the '
                    'cpu_pinning tuner (a profile without it)')
        if self.fact('numa.nodes'):
            return (base.PASS, f'{len(self.fact("numa.nodes"))} NUMA '
                    'node(s) in /sys: Nova can model pinned guests', None)
        return (base.FAIL, 'no NUMA topology read from /sys; Nova pins '
                'only on hosts that report one',
                'run kvmtune on the compute host itself (a kernel with '
                'CONFIG_NUMA, /sys/devices/system/node present)')

    @base.check('dedicated-cpus')
    def _dedicated_cpus(self) -> base.CheckOutcome:
        # host and guest are sets whenever reason is None
        host, guest, reason = cast(tuple[set[int], set[int], str | None],
                                   self.split())
        if reason:
            return (base.FAIL, f'no CPU split: {reason}; cpu_shared_set, '
                    'cpu_dedicated_set and isolcpus are withheld',
                    'set [compute] cpu_shared_set and cpu_dedicated_set '
                    'in nova.conf by hand from the host\'s real topology '
                    '(lscpu -e), or leave cpu_pinning out of the profile '
                    'for this host; never from this plan')
        if guest:
            return (base.PASS, f'{len(guest)} CPU(s) for pinned guests '
                    f'({format_cpulist(guest)}), {len(host)} kept by the '
                    f'host ({format_cpulist(host)})', None)
        return (base.FAIL, f'no CPU is left for pinned guests: the host '
                f'keeps all {len(host)} online CPU(s)',
                'use a host with more than one core per NUMA node')

    @base.check('isolcpus')
    def _isolcpus(self) -> base.CheckOutcome:
        wanted = self.guest_cpus()
        arg = self.isolcpus_arg()
        if arg is None or not wanted:
            return None
        # judged as the kernel keeps the booted line (kvmtune.facts.
        # cmdline): the plan's CPUs isolated from the scheduler domains,
        # the operator's other flags allowed
        item, = cmdline.judge([arg], cmdline.read(
            self.fact('kernel.cmdline', '')))
        if item.ok:
            return (base.PASS, 'the running kernel isolates exactly '
                    f'the dedicated CPUs ({format_cpulist(wanted)})', None)
        running = self.fact('kernel.args.isolcpus', [])
        now = format_cpulist(running) or 'none'
        return (base.WARN, f'the running kernel isolates {now}, the plan '
                f'dedicates {format_cpulist(wanted)}',
                self.kernel_args_fix([arg]))

    @base.check('smt-thread-policy')
    def _thread_policy(self) -> base.CheckOutcome:
        threads = self.fact('cpu.threads_per_core')
        if threads is None:
            return (base.WARN, 'threads per core unknown: '
                    f'hw:cpu_thread_policy={self.params["thread_policy"]} '
                    'cannot be checked against SMT', None)
        policy = self.params['thread_policy']
        if policy == 'require' and threads < 2:
            return (base.FAIL, 'hw:cpu_thread_policy=require needs SMT; '
                    'this host has 1 thread per core',
                    'set thread_policy: prefer (or isolate) in the profile')
        if policy == 'isolate' and threads > 1:
            return (base.WARN, f'hw:cpu_thread_policy=isolate: each vCPU '
                    f'takes a whole core, its {threads - 1} sibling(s) '
                    'stay idle', 'set thread_policy: prefer to use them')
        return (base.PASS, f'hw:cpu_thread_policy={policy} fits '
                f'{threads} thread(s) per core', None)
