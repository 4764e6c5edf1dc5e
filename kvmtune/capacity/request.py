"""A flavor as the scheduler asks Placement and the NUMA filter for it.

Follows Nova's rules (nova/scheduler/utils.py ``ResourceRequest``,
``resources_from_flavor``; nova/virt/hardware.py ``numa_get_constraints``;
read from Nova's source, https://opendev.org/openstack/nova):

- ``hw:cpu_policy=dedicated``: PCPU = vcpus; ``mixed``: PCPU = the
  dedicated vCPUs of ``hw:cpu_dedicated_mask``, VCPU the rest; either with
  ``hw:emulator_threads_policy=isolate``: one PCPU more; else VCPU = vcpus;
- MEMORY_MB = ram; DISK_GB = root + ephemeral + ceil(swap MB / 1024),
  left out when 0 (a boot-from-volume flavor's root is not counted here:
  kvmtune counts image-backed servers);
- ``resources[N]:<CLASS>=<amount>`` replaces the class (0 removes it);
  ``trait[N]:<NAME>=required|forbidden``; thread policy ``isolate``
  forbids ``HW_CPU_HYPERTHREADING``, ``require`` requires it;
- the scheduler forbids ``COMPUTE_STATUS_DISABLED`` (a disabled compute);
- a NUMA topology (``hw:numa_nodes``, ``hw:mem_page_size``, or a
  dedicated/mixed policy: one node by default) asks the NUMA filter for
  pinned CPUs and memory of the page size on each guest node.

Not modelled: image properties (a flavor is asked about, not a server),
``hw:numa_cpus.N``/``hw:numa_mem.N`` uneven splits (refused as unknown),
PCI and vGPU requests, server groups.
"""

import dataclasses
import math
import re
from typing import Any

from kvmtune.tuning import flavor_topology

DISABLED_TRAIT = 'COMPUTE_STATUS_DISABLED'
HYPERTHREADING = 'HW_CPU_HYPERTHREADING'
_GRANULAR = re.compile(r'^(resources|trait)([a-zA-Z0-9_-]{1,64})?:(.+)\Z')
_CLASS = re.compile(r'^([A-Z_]+|CUSTOM_[A-Z0-9_]+)\Z')


class Unsupported(ValueError):
    """The flavor asks for what kvmtune cannot count; says what."""


@dataclasses.dataclass(frozen=True)
class NumaRequest:
    """What the NUMA filter must find, per guest node.

    cells     per guest node, in order: (pinned vCPUs, shared vCPUs,
              memory MB) (Nova's InstanceNUMACell pcpuset, cpuset, memory)
    policy    dedicated, mixed or shared
    page_kb   'small', 'large', 'any' or a size in KiB; None: no request
    isolate   hw:emulator_threads_policy=isolate: one more PCPU, on the
              host node of guest node 0
    thread_policy  None, prefer, isolate or require
    """
    cells: tuple[tuple[int, int, int], ...]
    policy: str
    page_kb: int | float | str | None
    isolate: bool = False
    thread_policy: str | None = None

    @property
    def nodes(self) -> int:
        return len(self.cells)

    @property
    def pcpus(self) -> int:
        return sum(cell[0] for cell in self.cells)


@dataclasses.dataclass(frozen=True)
class Request:
    """One flavor's request: Placement amounts, traits, NUMA needs."""
    flavor: str
    resources: dict[str, int]
    required: frozenset[str]
    forbidden: frozenset[str]
    numa: NumaRequest | None = None

    def describe(self) -> str:
        parts = [f'{rc} {n}' for rc, n in sorted(self.resources.items())]
        parts += [f'trait {t}' for t in sorted(self.required)]
        if self.numa:
            parts.append(f'{self.numa.nodes} NUMA node(s)'
                         + (f', {self.numa.page_kb} pages'
                            if self.numa.page_kb else ''))
        return ', '.join(parts)


def _int(value: object, key: str) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise Unsupported(f'{key}={value!r} is not a whole number') \
            from None
    if number < 0:
        raise Unsupported(f'{key}={value!r} is negative')
    return number


# Extra specs that change a fit in ways kvmtune does not model.
UNMODELLED = ('hw:cpu_realtime', 'hw:cpu_realtime_mask', 'hw:pmem',
              'pci_passthrough:alias', 'hw:pci_numa_affinity_policy')


def from_flavor(flavor: dict[str, Any]) -> Request:
    """The Request for a Nova flavor (the API's dict, with extra_specs).

    :raises flavor_topology.Refused: a flavor nova-api refuses to boot, with
        the rule (Nova's exception name)
    :raises Unsupported: an extra spec kvmtune cannot count, named
    """
    specs = {k: str(v) for k, v in (flavor.get('extra_specs') or {}).items()}
    name = flavor.get('name', '?')
    vcpus = int(flavor['vcpus'])
    for key in UNMODELLED:
        if key in specs:
            raise Unsupported(f'{key} (not modelled)')
    guest = flavor_topology.guest_topology(vcpus, int(flavor['ram']), specs)
    policy = guest.policy
    isolate = guest.emulator_isolate
    thread_policy = guest.thread_policy
    if guest.nodes:
        pcpus = sum(len(cell[0]) for cell in guest.nodes)
    else:
        pcpus = vcpus if policy == 'dedicated' else 0
    resources: dict[str, int] = {}
    if pcpus:
        resources['PCPU'] = pcpus + (1 if isolate else 0)
    if vcpus - pcpus:
        resources['VCPU'] = vcpus - pcpus
    resources['MEMORY_MB'] = int(flavor['ram'])
    disk = (int(flavor.get('disk') or 0)
            + int(flavor.get('OS-FLV-EXT-DATA:ephemeral') or 0)
            + math.ceil(int(flavor.get('swap') or 0) / 1024))
    if disk:
        resources['DISK_GB'] = disk
    required: set[str] = set()
    forbidden: set[str] = set()
    for key, value in sorted(specs.items()):
        match = _GRANULAR.match(key)
        if not match:
            continue
        kind, _, what = match.groups()
        if kind == 'resources':
            if not _CLASS.match(what):
                raise Unsupported(f'{key}: {what!r} is not a resource '
                                  'class')
            resources[what] = _int(value, key)
        elif value == 'required':
            required.add(what)
        elif value == 'forbidden':
            forbidden.add(what)
    if thread_policy == 'isolate' and pcpus:
        forbidden.add(HYPERTHREADING)
    elif thread_policy == 'require' and pcpus:
        required.add(HYPERTHREADING)
    forbidden.add(DISABLED_TRAIT)
    resources = {rc: n for rc, n in resources.items() if n}
    return Request(flavor=name, resources=resources,
                   required=frozenset(required),
                   forbidden=frozenset(forbidden),
                   numa=_numa(guest))


def _numa(guest: flavor_topology.GuestTopology) -> NumaRequest | None:
    if not guest.nodes:
        return None
    return NumaRequest(
        cells=tuple((len(p), len(v), m) for p, v, m in guest.nodes),
        policy=guest.policy, page_kb=guest.page_kb,
        isolate=guest.emulator_isolate, thread_policy=guest.thread_policy)
