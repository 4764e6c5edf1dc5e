"""The facts document's shape for type checkers (doc/design.md 1).

The facts stay plain dicts at run time (JSON in, JSON out); these
TypedDicts only name their keys and value types for mypy. Keys every
facts document has are required; keys a part added later (and a facts
file written before may lack: ``kvm_error``, ``sysfs``, ...) are in the
``total=False`` halves. ``schema.FACTS`` is what ``load()`` checks.
"""

from typing import Literal
from typing import TypedDict

Mechanism = Literal['vmx', 'svm', 'pvm'] | None
ModuleParams = dict[str, str] | None


class _CpuTopology(TypedDict):
    sockets: int | None
    cores_per_socket: int | None
    threads_per_core: int | None
    thread_siblings: list[list[int]] | None


class Topology(_CpuTopology):
    """What facts.cpu.topology() reads from per-CPU topology."""

    cores: int | None


class _CpuFacts(_CpuTopology):
    vendor: str | None
    model_name: str | None
    flags: list[str] | None
    online: list[int]
    pdpe1gb: bool | None


class CpuFacts(_CpuFacts, total=False):
    cores: int | None
    # kvmtune.facts.arch.ARCHES or None; absent from older documents
    arch: str | None


class _VirtFacts(TypedDict):
    kvm_device: bool
    kvm_usable: bool | None
    modules: dict[str, ModuleParams]
    mechanism: Mechanism
    nested: bool | None
    nested_mechanism: Mechanism
    ept: bool | None
    is_guest: bool | None
    hypervisor_vendor: str | None


class VirtFacts(_VirtFacts, total=False):
    kvm_error: str | None


class HugepagePool(TypedDict):
    size_kb: int
    total: int | None
    free: int | None


class _MemoryFacts(TypedDict):
    total_mb: int | None
    hugepage_default_kb: int | None


class MemoryFacts(_MemoryFacts, total=False):
    hugepages: list[HugepagePool]


class NumaNode(TypedDict):
    id: int
    cpus: list[int] | None
    memory_mb: int | None
    hugepages: list[HugepagePool]


class _NumaFacts(TypedDict):
    nodes: list[NumaNode]


class NumaFacts(_NumaFacts, total=False):
    sysfs: bool


class VhostNetFacts(TypedDict):
    available: bool
    device: bool
    module: Literal['loaded', 'builtin', 'absent']


class _HugepagesArg(TypedDict):
    size: str | None
    count: int


class HugepagesArg(_HugepagesArg, total=False):
    """One ``hugepages=`` on the command line, with the size it counts."""

    per_node: dict[str, int]
    size_kb: int | None


class _KernelArgs(TypedDict):
    isolcpus: list[int]
    isolcpus_flags: list[str]
    nohz_full: list[int]
    hugepages: list[HugepagesArg]
    default_hugepagesz: str | None
    hugepagesz: list[str]
    iommu: dict[str, str | None]


class KernelArgs(_KernelArgs, total=False):
    invalid: list[str]


class KernelFacts(TypedDict):
    release: str | None
    cmdline: str | None
    args: KernelArgs


class Versions(TypedDict):
    libvirt: str | None
    qemu: str | None


class KvmProbe(TypedDict):
    """facts.virt.probe_kvm(): a real KVM_CREATE_VM on /dev/kvm."""

    usable: bool
    api_version: int | None
    error: str | None


class Facts(TypedDict):
    """One host's facts document, schema 1."""

    schema: int
    source: str
    hostname: str | None
    cpu: CpuFacts
    virt: VirtFacts
    memory: MemoryFacts
    numa: NumaFacts
    vhost_net: VhostNetFacts
    kernel: KernelFacts
    versions: Versions
