"""Keep two-dimensional paging (Intel EPT, AMD NPT) on, and require it.

Seed 004 (section 2.3) turns EPT on with vCPU pinning: 3-5% more compute,
7-10% more disk I/O. KVM uses EPT/NPT whenever the CPU has it and the
kvm_intel ``ept`` / kvm_amd ``npt`` parameter is on (the default); this
tuner writes the parameter down so no later modprobe.d file turns it off,
and has the flavor require ``CUSTOM_KVMTUNE_EPT``, which ``kvmtune host
tag`` sets on hosts where it is on (os-traits has no EPT trait). EPT and
NPT are x86's: on another architecture the tuner is refused with the
reason (kvmtune.facts.arch.ept_refusal).
"""

from kvmtune.facts import arch
from kvmtune.tuning import traits
from kvmtune.tuning.tuners import base

# Module parameter and /proc/cpuinfo flag, by kvm module.
PAGING = {'kvm_intel': ('ept', 'ept'), 'kvm_amd': ('npt', 'npt')}
# The key `host tag` answers: the trait it sets from the same facts.
TRAIT_KEY = 'trait:' + traits.EPT


class Ept(base.Tuner):
    name = 'ept'
    description = 'EPT/NPT on, and flavors that require it.'

    PARAMS = (
        base.Param('require_trait', type=bool, default=True,
                   help='Add trait:CUSTOM_KVMTUNE_EPT=required to the '
                        'flavor'),
    )

    OWNED_EXTRA_SPECS = (TRAIT_KEY,)
    EXTRA_SPECS = {TRAIT_KEY: base.FromHost('trait_value')}
    MODPROBE = {'kvm_intel': {'ept': '1'}, 'kvm_amd': {'npt': '1'}}
    NOTES = (
        'trait:CUSTOM_KVMTUNE_EPT=required schedules only onto hosts '
        'tagged by `kvmtune host tag`.',
    )

    def withheld(self) -> list[str]:
        refusal = arch.ept_refusal(self.facts)
        return [refusal] if refusal else []

    def trait_value(self) -> str | None:
        if self.withheld():
            return None
        return 'required' if self.params['require_trait'] else None

    @base.check('ept-enabled')
    def _enabled(self) -> base.CheckOutcome:
        module = self.hardware_module()
        refusal = arch.ept_refusal(self.facts)
        if refusal:
            return (base.FAIL, refusal, 'plan this host without the ept '
                    'tuner (a profile without it)')
        if module is None:
            how = self.fact('virt.mechanism') or 'no KVM'
            return (base.FAIL, f'no VT-x/AMD-V in this CPU (KVM here: '
                    f'{how}): no EPT/NPT, guests use shadow or software '
                    'paging', 'run on a host whose CPU (or whose hypervisor) '
                    'exposes vmx+ept or svm+npt')
        param, flag = PAGING[module]
        if self.has_flag(flag) is None:
            return (base.WARN, f'the CPU\'s flags are unknown (cpuinfo '
                    f'unreadable): {flag} cannot be checked',
                    'capture the host again with kvmtune host capture '
                    '(/proc/cpuinfo must be readable)')
        if not self.has_flag(flag):
            return (base.FAIL, f'the CPU has no {flag} flag: {module} '
                    'cannot use two-dimensional paging',
                    'use a CPU with EPT/NPT (any server CPU since 2010)')
        enabled = self.fact('virt.ept')
        if enabled:
            return (base.PASS, f'{module} {param}=Y', None)
        if enabled is None:
            return (base.WARN, f'{module} is not loaded: {param} unknown',
                    f'modprobe {module}')
        return (base.FAIL, f'{module} {param} is off',
                base.module_reload_fix(module, f'{param}=1'))
