"""Pin guest vCPUs to host CPUs the host itself keeps off.

Seed 004 (the OpenStack KVM paper, section 2.2) pins vCPUs with virsh; in
Nova the same is a flavor with ``hw:cpu_policy=dedicated`` on a host whose
``[compute] cpu_dedicated_set`` holds the CPUs guests may own. The split is
TripleO's derived NFV rule: per NUMA node, the thread siblings of its first
core stay with the host (``cpu_shared_set``: emulator threads, host
processes); every other online CPU is dedicated, and the kernel keeps its
own tasks off them with ``isolcpus``.
"""

from kvmtune.errors import InputError
from kvmtune.facts.cpulist import format_cpulist
from kvmtune.tuners import base


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
        # land unpinned (FIELD-NOTES).
        ('workarounds', 'disable_fallback_pcpu_query'): 'true',
        ('filter_scheduler', 'enabled_filters'): base.NUMA_FILTERS,
    }
    KERNEL_ARGS = (base.FromHost('isolcpus_arg'),)

    @classmethod
    def parse_params(cls, given, source=None):
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

    def mixed_mask(self):
        return self.params['dedicated_mask']

    # -- host-derived values ---------------------------------------------

    def _online(self):
        return set(self.fact('cpu.online', []))

    def host_cpus(self):
        """Per NUMA node, the first online core's thread siblings."""
        online = self._online()
        siblings = self.fact('cpu.thread_siblings', [])
        kept = set()
        for node in self.numa_nodes():
            cpus = sorted(set(node.get('cpus', [])) & online)
            if not cpus:
                continue
            first = cpus[0]
            group = next((g for g in siblings if first in g), [first])
            kept.update(set(group) & set(cpus))
        return kept

    def guest_cpus(self):
        return self._online() - self.host_cpus()

    def shared_set(self):
        return format_cpulist(self.host_cpus()) or None

    def dedicated_set(self):
        return format_cpulist(self.guest_cpus()) or None

    def isolcpus_arg(self):
        if not self.params['isolcpus'] or not self.guest_cpus():
            return None
        return 'isolcpus=' + format_cpulist(self.guest_cpus())

    # -- checks ----------------------------------------------------------

    @base.check('numa-topology')
    def _numa_topology(self):
        if self.fact('numa.nodes'):
            return (base.PASS, f'{len(self.fact("numa.nodes"))} NUMA '
                    'node(s) in /sys: Nova can model pinned guests', None)
        return (base.FAIL, 'no NUMA topology read from /sys; Nova pins '
                'only on hosts that report one',
                'run kvmtune on the compute host itself (a kernel with '
                'CONFIG_NUMA, /sys/devices/system/node present)')

    @base.check('dedicated-cpus')
    def _dedicated_cpus(self):
        host, guest = self.host_cpus(), self.guest_cpus()
        if guest:
            return (base.PASS, f'{len(guest)} CPU(s) for pinned guests '
                    f'({format_cpulist(guest)}), {len(host)} kept by the '
                    f'host ({format_cpulist(host)})', None)
        return (base.FAIL, f'no CPU is left for pinned guests: the host '
                f'keeps all {len(host)} online CPU(s)',
                'use a host with more than one core per NUMA node')

    @base.check('isolcpus')
    def _isolcpus(self):
        wanted = self.guest_cpus()
        if not self.params['isolcpus'] or not wanted:
            return None
        running = set(self.fact('kernel.args.isolcpus', []))
        if running == wanted:
            return (base.PASS, 'the running kernel isolates exactly '
                    f'the dedicated CPUs ({format_cpulist(wanted)})', None)
        now = format_cpulist(running) or 'none'
        return (base.WARN, f'the running kernel isolates {now}, the plan '
                f'dedicates {format_cpulist(wanted)}',
                base.KERNEL_ARGS_FIX.format(
                    args='isolcpus=' + format_cpulist(wanted)))

    @base.check('smt-thread-policy')
    def _thread_policy(self):
        threads = self.fact('cpu.threads_per_core', 1)
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
