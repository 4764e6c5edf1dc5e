"""Let guests run their own KVM guests (nested virtualization).

Seed 000 turns on kvm_intel ``nested=y`` and gives the level-1 guest
``<cpu mode='host-passthrough'/>`` so it sees VT-x; nested guests cost it
20-25% of compute (UnixBench). In Nova that is ``[libvirt] cpu_mode`` and a
flavor that requires a nested-capable host. PVM (kvm_pvm) is a third way,
seen on this project's own CI machine: nested guests work in software,
without VMX, so HW_CPU_X86_VMX does not describe it and the trait to
require is kvmtune's CUSTOM_KVMTUNE_NESTED. Under QEMU TCG (libvirt
virt_type qemu) the guest CPU is emulated: QEMU emulates AMD SVM with
nested paging (not VMX), so a TCG guest given ``svm`` can load kvm_amd and
run its own guest (tests/unit/tuning/tuners/test_nested.py). All of that
is x86: on arm64, POWER and s390x the profile is refused with the reason
(kvmtune.facts.arch.nested_refusal), never given x86's EPYC model and
svm/npt flags.
"""

from typing import Any

from kvmtune.facts import arch
from kvmtune.tuning.tuners import base

TRAITS = ('CUSTOM_KVMTUNE_NESTED', 'HW_CPU_X86_VMX', 'HW_CPU_X86_SVM')
VIRT_TYPES = ('auto', 'kvm', 'qemu')
# What a TCG guest needs to run kvm_amd: SVM and nested paging (NPT),
# both emulated by QEMU; Nova adds them with policy require
# (LibvirtDriver._prepare_cpu_flag).
TCG_FLAGS = ('svm', 'npt')
# The CPU flag each os-traits trait stands for.
TRAIT_FLAGS = {'HW_CPU_X86_VMX': 'vmx', 'HW_CPU_X86_SVM': 'svm'}


class Nested(base.Tuner):
    name = 'nested'
    description = 'Nested virtualization on, guests see the host CPU.'

    PARAMS = (
        base.Param('trait', default='CUSTOM_KVMTUNE_NESTED',
                   choices=TRAITS + ('none',),
                   help='Trait the flavor requires: kvmtune\'s (any '
                        'mechanism) or os-traits\' VMX/SVM (hardware only)'),
        base.Param('virt_type', default='auto', choices=VIRT_TYPES,
                   help='The compute\'s [libvirt] virt_type: kvm (VT-x/'
                        'AMD-V hosts) or qemu (TCG, emulated); auto: kvm '
                        'when the host has vmx/svm and a usable /dev/kvm, '
                        'as kvmtune cloud decides'),
        base.Param('cpu_mode', default='host-passthrough',
                   choices=('host-passthrough', 'host-model'),
                   help='[libvirt] cpu_mode on KVM hosts; guests need '
                        'vmx/svm in their CPU model to run KVM'),
        base.Param('cpu_model', default='EPYC',
                   help='[libvirt] cpu_models under TCG (virt_type qemu): '
                        'an AMD model, since QEMU emulates SVM, not VMX '
                        '(virsh cpu-models x86_64 lists them)'),
    )

    OWNED_EXTRA_SPECS = tuple(f'trait:{trait}' for trait in TRAITS)
    MODPROBE = {'kvm_intel': {'nested': '1'}, 'kvm_amd': {'nested': '1'}}
    NOTES = (
        'Nested guests are for test clouds: seed 000 measured 20-25% less '
        'compute than their level-1 host.',
    )

    def withheld(self) -> list[str]:
        refusal = arch.nested_refusal(self.facts)
        return [refusal] if refusal else []

    def virt_type(self) -> str:
        """kvm or qemu: the param, or with auto what kvmtune cloud's
        detect_virt_type picks (kvm only with vmx/svm and a /dev/kvm that
        is not PVM's; facts without a probe count as usable)."""
        virt_type: str = self.params['virt_type']
        if virt_type != 'auto':
            return virt_type
        usable = self.fact('virt.kvm_usable')
        if self.hardware_module() and usable is not False:
            return 'kvm'
        return 'qemu'

    NOVA_CONF_OPTIONS = (('libvirt', 'cpu_mode'), ('libvirt', 'cpu_models'),
                         ('libvirt', 'cpu_model_extra_flags'))

    def wanted_nova_conf(self) -> dict[tuple[str, str], str | list[str]]:
        """Under TCG a custom model with the flags (Nova's cpu_mode
        custom, the only mode that takes a named model: libvirt offers no
        host-passthrough to TCG guests); under KVM the host's CPU, with its
        vendor flag named for host-model. Nothing on an architecture
        kvmtune plans no nested virtualization for."""
        if self.withheld():
            return {}
        if self.virt_type() == 'qemu':
            return {('libvirt', 'cpu_mode'): 'custom',
                    ('libvirt', 'cpu_models'): self.params['cpu_model'],
                    ('libvirt', 'cpu_model_extra_flags'):
                        ','.join(TCG_FLAGS)}
        conf = {('libvirt', 'cpu_mode'): self.params['cpu_mode']}
        flag = {'kvm_intel': 'vmx', 'kvm_amd': 'svm'}.get(
            self.hardware_module())  # type: ignore[arg-type]
        if self.params['cpu_mode'] == 'host-model' and flag:
            conf[('libvirt', 'cpu_model_extra_flags')] = flag
        return conf

    def modprobe(self) -> dict[str, dict[str, Any]]:
        return {} if self.virt_type() == 'qemu' else super().modprobe()

    def extra_specs(self) -> dict[str, str]:
        trait = self.params['trait']
        if trait == 'none' or self.withheld():
            return {}
        return {f'trait:{trait}': 'required'}

    @base.check('nested-enabled')
    def _enabled(self) -> base.CheckOutcome:
        module = self.hardware_module()
        mechanism = self.fact('virt.nested_mechanism')
        refusal = arch.nested_refusal(self.facts)
        if refusal:
            return (base.FAIL, refusal, 'give nested guests an x86 host, '
                    'or plan this host without the nested tuner')
        if self.virt_type() == 'qemu':
            return (base.PASS, f'virt_type qemu (TCG): guests get the '
                    f'emulated {self.params["cpu_model"]} CPU with '
                    f'{" and ".join(TCG_FLAGS)} and run their guests '
                    f'through kvm_amd (QEMU emulates SVM, not VMX); '
                    f'emulated, not KVM speed', None)
        if mechanism == 'pvm':
            return (base.WARN, 'nested-capable by PVM (kvm_pvm, software) '
                    'without VMX: guests get no vmx flag and run their '
                    'guests through kvm_pvm', 'require '
                    'CUSTOM_KVMTUNE_NESTED (not HW_CPU_X86_VMX) and give '
                    'guests a kernel with kvm_pvm')
        if module is None:
            return (base.FAIL, 'no VT-x/AMD-V and no kvm_pvm: guests cannot '
                    'run KVM here', 'run on a host with vmx or svm')
        nested = self.fact('virt.nested')
        if nested:
            return (base.PASS, f'{module} nested=Y', None)
        if nested is None:
            return (base.WARN, f'{module} is not loaded: nested unknown',
                    f'modprobe {module}')
        return (base.FAIL, f'{module} nested is off',
                base.module_reload_fix(module, 'nested=1'))

    @base.check('nested-trait')
    def _trait(self) -> base.CheckOutcome:
        flag = TRAIT_FLAGS.get(self.params['trait'])
        if flag is None or self.withheld():
            return None
        if self.has_flag(flag) is None:
            return (base.WARN, f'the CPU\'s flags are unknown (cpuinfo '
                    f'unreadable): whether Nova reports '
                    f'{self.params["trait"]} cannot be told',
                    'capture the host again with kvmtune host capture '
                    '(/proc/cpuinfo must be readable)')
        if self.has_flag(flag):
            return (base.PASS, f'the CPU has {flag}: Nova reports '
                    f'{self.params["trait"]}', None)
        return (base.FAIL, f'the CPU has no {flag}: Nova never reports '
                f'{self.params["trait"]} for this host',
                'set trait: CUSTOM_KVMTUNE_NESTED in the profile')
