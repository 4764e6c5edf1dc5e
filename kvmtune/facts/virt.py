"""KVM: the device, its modules' parameters, nested guests and EPT/NPT."""

from collections.abc import Mapping
from collections.abc import Sequence
import fcntl
import os
from typing import Literal

from kvmtune.facts.hostfs import HostFiles
from kvmtune.facts.types import KvmProbe
from kvmtune.facts.types import Mechanism
from kvmtune.facts.types import ModuleParams
from kvmtune.facts.types import VirtFacts

Modules = Mapping[str, ModuleParams]
Flags = Sequence[str] | None

KVM_DEVICE = '/dev/kvm'
MODULES = ('kvm', 'kvm_intel', 'kvm_amd', 'kvm_pvm')
# include/uapi/linux/kvm.h: _IO(KVMIO, 0x00) and _IO(KVMIO, 0x01).
KVM_GET_API_VERSION = 0xAE00
KVM_CREATE_VM = 0xAE01
KVM_API_VERSION = 12
# Module (when loaded) and CPU flag of each hardware mechanism.
HARDWARE: tuple[tuple[Literal['vmx', 'svm'], str, str], ...] = (
    ('vmx', 'kvm_intel', 'ept'), ('svm', 'kvm_amd', 'npt'))
# What a guest's clock sources or sysfs say about its hypervisor.
CLOCKSOURCES = '/sys/devices/system/clocksource/clocksource0/' \
               'available_clocksource'
HYPERVISOR_TYPE = '/sys/hypervisor/type'
CLOCKSOURCE_VENDORS = (('kvm-clock', 'KVM'), ('xen', 'Xen'),
                       ('hyperv_clocksource', 'Microsoft'))
TRUE_VALUES = ('Y', 'y', '1')
FALSE_VALUES = ('N', 'n', '0')


def probe_kvm(device: str = KVM_DEVICE) -> KvmProbe:
    """Create (and drop) a VM on ``device``: what QEMU would do first.

    Returns {'usable': bool, 'api_version': int|None, 'error': str|None}.
    """
    result: KvmProbe = {'usable': False, 'api_version': None, 'error': None}
    step = f'open {device}'
    try:
        fd = os.open(device, os.O_RDWR | os.O_CLOEXEC)
    except OSError as exc:
        result['error'] = f'{step}: {exc.strerror}'
        return result
    try:
        step = 'KVM_GET_API_VERSION'
        result['api_version'] = fcntl.ioctl(fd, KVM_GET_API_VERSION, 0)
        if result['api_version'] != KVM_API_VERSION:
            result['error'] = (f'KVM API version {result["api_version"]}, '
                               f'expected {KVM_API_VERSION}')
            return result
        step = 'KVM_CREATE_VM'
        os.close(fcntl.ioctl(fd, KVM_CREATE_VM, 0))
        result['usable'] = True
    except OSError as exc:
        result['error'] = f'{step}: {exc.strerror}'
    finally:
        os.close(fd)
    return result


def module_params(files: HostFiles, name: str) -> ModuleParams:
    """A module's parameters ({} when it has none), None if not loaded."""
    path = f'/sys/module/{name}'
    if not files.exists(path):
        return None
    params = {}
    for param in files.listdir(f'{path}/parameters'):
        value = files.read_value(f'{path}/parameters/{param}')
        if value is not None:       # some are write-only
            params[param] = value
    return params


def _flag(value: str | None) -> bool | None:
    if value in TRUE_VALUES:
        return True
    if value in FALSE_VALUES:
        return False
    return None


def _hardware(modules: Modules, flags: Flags
              ) -> list[tuple[Literal['vmx', 'svm'], dict[str, str], str]]:
    """The vendor modules that drive this CPU (a kernel may build in both,
    so a module counts only when the CPU has its flag)."""
    # Unknown flags (cpuinfo unreadable): a loaded vendor module still
    # says which extension the CPU has (kvm_intel loads only with vmx).
    return [(name, params, param)
            for name, module, param in HARDWARE
            if (params := modules[module]) is not None
            and (flags is None or name in flags)]


def nested(modules: Modules, flags: Flags) -> tuple[bool | None, Mechanism]:
    """(nested, nested_mechanism) per doc/design.md section 1."""
    known_off = False
    for name, params, _ in _hardware(modules, flags):
        state = _flag(params.get('nested'))
        if state:
            return True, name
        known_off = known_off or state is False
    if modules['kvm_pvm'] is not None:
        return True, 'pvm'
    return (False if known_off else None), None


def mechanism(modules: Modules, flags: Flags) -> Mechanism:
    """How /dev/kvm runs guests: hardware module first, then PVM."""
    for name, _, _ in _hardware(modules, flags):
        return name
    if modules['kvm_pvm'] is not None:
        return 'pvm'
    return None


def ept(modules: Modules, flags: Flags) -> bool | None:
    """EPT (Intel) or NPT (AMD) as the vendor module's parameter says.

    With no vendor module: false when the CPU lacks both flags (no module
    could turn it on; PVM shadows guest page tables), else unknown.
    """
    for _, params, param in _hardware(modules, flags):
        return _flag(params.get(param))
    if flags is not None and not {'ept', 'npt'} & set(flags):
        return False
    return None


def hypervisor_vendor(files: HostFiles, flags: Flags) -> str | None:
    """Who runs this host when it is itself a guest (lscpu's answer)."""
    if flags is None or 'hypervisor' not in flags:
        return None
    if (files.read_value(HYPERVISOR_TYPE) or '').lower() == 'xen':
        return 'Xen'
    clocksources = (files.read_value(CLOCKSOURCES) or '').split()
    for prefix, vendor in CLOCKSOURCE_VENDORS:
        if any(cs.startswith(prefix) for cs in clocksources):
            return vendor
    return None


def gather(files: HostFiles, flags: Flags,
           kvm_probe: KvmProbe | None) -> VirtFacts:
    modules = {name: module_params(files, name) for name in MODULES}
    is_nested, nested_by = nested(modules, flags)
    return {
        'kvm_device': files.exists(KVM_DEVICE),
        'kvm_usable': None if kvm_probe is None else kvm_probe['usable'],
        'kvm_error': None if kvm_probe is None else kvm_probe['error'],
        'modules': modules,
        'mechanism': mechanism(modules, flags),
        'nested': is_nested,
        'nested_mechanism': nested_by,
        'ept': ept(modules, flags),
        'is_guest': None if flags is None else 'hypervisor' in flags,
        'hypervisor_vendor': hypervisor_vendor(files, flags),
    }
