"""What this host's architecture offers: the one place that decides it.

The architecture comes from the shape of /proc/cpuinfo, which each
architecture's kernel prints its own way (its ``show_cpuinfo``):

- ``x86_64``: a ``flags`` line (arch/x86/kernel/cpu/proc.c);
- ``aarch64``: ``CPU architecture: 8`` and ``Features``
  (arch/arm64/kernel/cpuinfo.c);
- ``ppc64``: ``cpu`` and a ``revision`` with the ``pvr``
  (arch/powerpc/kernel/setup-common.c);
- ``s390x``: ``vendor_id : IBM/S390`` (arch/s390/kernel/processor.c);
- ``riscv64``: ``isa : rv64...`` (arch/riscv/kernel/cpu.c);
- ``ia64``: ``arch : IA-64``.

None when cpuinfo is unreadable or of none of these shapes; a facts
document written before kvmtune read the architecture has no ``cpu.arch``
(None too). Where the architecture is None, the tuners keep the x86 rules
they always had (a CPU flag decides), as such documents came from x86.

What each architecture offers:

- huge page sizes (``page_sizes_kb``): the pools the host's kernel made a
  directory for, /sys/kernel/mm/hugepages/hugepages-<size>kB
  (Documentation/admin-guide/mm/hugetlbpage.rst: one per size the kernel
  supports, pages or not). s390x offers 1M only; arm64 with 4k granule
  64K, 2M, 32M and 1G; POWER9 radix 2M and 1G. On x86 2M is always there
  and 1G with the ``pdpe1gb`` flag (arch/x86/mm/hugetlbpage.c
  registers the 1G size only with X86_FEATURE_GBPAGES), so a capture
  without that directory still answers. ``pdpe1gb`` is an x86 flag: it
  says nothing on arm64.
- a NUMA topology in Nova (``NOVA_NUMA``): Nova's libvirt driver reports
  one only on i686, x86_64, aarch64, ppc64 and ppc64le
  (nova/virt/libvirt/driver.py, LibvirtDriver._has_numa_support, Nova
  34.0.0). Without it ``hw:mem_page_size`` and ``hw:cpu_policy=dedicated``
  guests fit nowhere (nova/virt/hardware.py, numa_fit_instance_to_host
  needs the host's cells).
- hardware nested virtualization kvmtune plans (``NESTED``): x86 only,
  kvm_intel/kvm_amd ``nested`` and QEMU's emulated SVM under TCG. arm64
  needs FEAT_NV2 in the CPU and ``kvm-arm.mode=nested`` on the kernel
  command line (Documentation/admin-guide/kernel-parameters.txt), and no
  /proc/cpuinfo field shows FEAT_NV2; POWER's is kvm_hv ``nested``
  (POWER9 and later), s390x's kvm ``nested``: kvmtune plans none of them
  and says so (``nested_refusal``).
- two-dimensional paging as a switch (EPT/NPT): x86 only; arm64's stage-2
  translation, POWER's radix/HPT guests and s390x's SIE have no
  parameter to turn it on and no trait kvmtune sets (``ept_refusal``).
"""

from collections.abc import Mapping
from collections.abc import Sequence
import re
from typing import Any

from kvmtune import pagesize

X86 = 'x86_64'
ARM64 = 'aarch64'
PPC64 = 'ppc64'
S390X = 's390x'
RISCV64 = 'riscv64'
IA64 = 'ia64'
ARCHES = (X86, ARM64, PPC64, S390X, RISCV64, IA64)

# Architectures Nova's libvirt driver reports a NUMA topology for
# (LibvirtDriver._has_numa_support; ppc64 stands for ppc64 and ppc64le).
NOVA_NUMA = frozenset({X86, ARM64, PPC64})
# Architectures whose nested virtualization kvmtune plans.
NESTED = frozenset({X86})
# x86's page sizes: 2M always, 1G with pdpe1gb (arch/x86/mm/hugetlbpage.c).
X86_2M_KB = 2048
X86_1G_KB = 1024 * 1024

_S390 = re.compile(r'^vendor_id\s*:\s*IBM/S390', re.M)
_NESTED_HOW = {
    ARM64: ('nested virtualization on arm64 needs FEAT_NV2 in the CPU and '
            'kvm-arm.mode=nested on the kernel command line (Linux '
            'kernel-parameters.txt); /proc/cpuinfo does not show FEAT_NV2, '
            'so kvmtune cannot tell that guests could run KVM here, and '
            'Nova offers only cpu_mode host-passthrough on aarch64'),
    PPC64: ('nested virtualization on POWER is kvm_hv\'s nested parameter '
            '(POWER9 and later, radix MMU)'),
    S390X: 'nested virtualization on s390x is the kvm module\'s nested '
           'parameter',
}


def detect(stanza: Mapping[str, str], text: str = '') -> str | None:
    """The architecture whose kernel prints a cpuinfo like ``text``, whose
    first ``processor`` stanza is ``stanza``, or None. s390x prints its
    ``vendor_id`` once, before the CPUs, in no ``processor`` stanza."""
    if _S390.search(text) or stanza.get('vendor_id', '').startswith(
            'IBM/S390'):
        return S390X
    if 'flags' in stanza:
        return X86
    if stanza.get('CPU architecture', '').strip() == '8' \
            and 'Features' in stanza:
        return ARM64
    if 'pvr' in stanza.get('revision', '') and 'cpu' in stanza:
        return PPC64
    if stanza.get('isa', '').startswith('rv64'):
        return RISCV64
    if stanza.get('arch', '') == 'IA-64':
        return IA64
    return None


def of(facts: Mapping[str, Any]) -> str | None:
    """The architecture of a facts document (None: unknown)."""
    cpu = facts.get('cpu') or {}
    arch = cpu.get('arch')
    return arch if arch in ARCHES else None


def name(facts: Mapping[str, Any]) -> str:
    """The architecture as a message names it."""
    return of(facts) or 'unknown'


def page_sizes_kb(facts: Mapping[str, Any]) -> list[int] | None:
    """The huge page sizes (KiB) the host's kernel offers, smallest first;
    None when they cannot be told (no pool directory and not x86)."""
    memory = facts.get('memory') or {}
    sizes = {pool['size_kb'] for pool in memory.get('hugepages') or []}
    arch = of(facts)
    if arch in (X86, None):
        # x86, or a document without the architecture (all came from x86):
        # 1G with pdpe1gb only, as the kernel registers it
        cpu = facts.get('cpu') or {}
        sizes.discard(X86_1G_KB)
        if cpu.get('pdpe1gb'):
            sizes.add(X86_1G_KB)
        if arch == X86 or cpu.get('flags'):
            sizes.add(X86_2M_KB)
    return sorted(sizes) if sizes else None


def offers_size(facts: Mapping[str, Any], size_kb: int) -> bool | None:
    """Whether the kernel offers pages of ``size_kb`` (None: unknown)."""
    sizes = page_sizes_kb(facts)
    return None if sizes is None else size_kb in sizes


def nova_numa_refusal(facts: Mapping[str, Any], what: str) -> str | None:
    """Why Nova cannot place ``what`` on this architecture, or None."""
    arch = of(facts)
    if arch is None or arch in NOVA_NUMA:
        return None
    return (f'{what} is refused on {arch}: Nova\'s libvirt driver reports '
            'no NUMA topology there (it does on x86_64, aarch64 and ppc64 '
            'only: LibvirtDriver._has_numa_support), so no guest asking for '
            'it fits this host')


def nested_refusal(facts: Mapping[str, Any]) -> str | None:
    """Why kvmtune does not plan nested virtualization here, or None."""
    arch = of(facts)
    if arch is None or arch in NESTED:
        return None
    how = _NESTED_HOW.get(arch, f'KVM on {arch} has no nested '
                                'virtualization kvmtune knows')
    return (f'nested virtualization is refused on {arch}: kvmtune plans it '
            f'for x86 only (kvm_intel/kvm_amd nested, or QEMU\'s emulated '
            f'SVM with the EPYC model); {how}')


def ept_refusal(facts: Mapping[str, Any]) -> str | None:
    """Why the EPT/NPT tuner has nothing to plan here, or None."""
    arch = of(facts)
    if arch is None or arch == X86:
        return None
    return (f'EPT/NPT is refused on {arch}: they are x86\'s two-dimensional '
            'paging (kvm_intel ept, kvm_amd npt); KVM on '
            f'{arch} has no such switch and kvmtune host tag never sets '
            'CUSTOM_KVMTUNE_EPT there, so flavors requiring it would fit '
            'nowhere')


def sizes_text(sizes: Sequence[int]) -> str:
    """``64k, 2M, 32M, 1G``."""
    return ', '.join(pagesize.text(size, compact=True) for size in sizes)
