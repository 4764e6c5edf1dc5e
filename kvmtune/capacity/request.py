"""A flavor as the scheduler asks Placement and the NUMA filter for it.

Follows Nova's rules (nova/scheduler/utils.py ``ResourceRequest``,
``resources_from_flavor``; nova/virt/hardware.py ``numa_get_constraints``;
read from Nova's source, ../shared/ANCHORS-VERIFY-CAPACITY.md section 6):

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

from kvmtune.tuning import extra_specs
from kvmtune.facts.cpulist import parse_cpu_spec

DISABLED_TRAIT = 'COMPUTE_STATUS_DISABLED'
HYPERTHREADING = 'HW_CPU_HYPERTHREADING'
_GRANULAR = re.compile(r'^(resources|trait)([a-zA-Z0-9_-]{1,64})?:(.+)\Z')
_CLASS = re.compile(r'^([A-Z_]+|CUSTOM_[A-Z0-9_]+)\Z')


class Unsupported(ValueError):
    """The flavor asks for what kvmtune cannot count; says what."""


@dataclasses.dataclass(frozen=True)
class NumaRequest:
    """What the NUMA filter must find per guest node.

    nodes     guest NUMA nodes (the host must give each its own node)
    pcpus     pinned CPUs per guest node (0: shared guest)
    vcpus     vCPUs per guest node
    memory_mb memory per guest node
    page_kb   'small', 'large', 'any' or a size in KiB; None: no request
              (small pages: pinned guests are checked against them)
    isolate   hw:emulator_threads_policy=isolate: one more PCPU on node 0
    thread_policy  hw:cpu_thread_policy (prefer, isolate, require)
    """
    nodes: int
    pcpus: int
    vcpus: int
    memory_mb: int
    page_kb: int | str | None
    isolate: bool = False
    thread_policy: str = 'prefer'


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


def page_size(spec: str | None) -> int | str | None:
    """``hw:mem_page_size`` as Nova reads it (small, large, any, or KiB)."""
    try:
        return extra_specs.page_size_kb(spec)
    except ValueError:
        raise Unsupported(f'hw:mem_page_size={spec!r} is not a page size '
                          'Nova reads') from None


def _int(value: object, key: str) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise Unsupported(f'{key}={value!r} is not a whole number') \
            from None
    if number < 0:
        raise Unsupported(f'{key}={value!r} is negative')
    return number


def from_flavor(flavor: dict[str, Any]) -> Request:
    """The Request for a Nova flavor (the API's dict, with extra_specs).

    :raises Unsupported: an extra spec kvmtune cannot count, named
    """
    specs = {k: str(v) for k, v in (flavor.get('extra_specs') or {}).items()}
    name = flavor.get('name', '?')
    vcpus = int(flavor['vcpus'])
    policy = specs.get('hw:cpu_policy', 'shared')
    isolate = specs.get('hw:emulator_threads_policy') == 'isolate'
    thread_policy = specs.get('hw:cpu_thread_policy', 'prefer')
    resources: dict[str, int] = {}
    if policy == 'dedicated':
        pcpus = vcpus
    elif policy == 'mixed':
        mask = specs.get('hw:cpu_dedicated_mask')
        if not mask:
            raise Unsupported('hw:cpu_policy=mixed without '
                              'hw:cpu_dedicated_mask')
        try:
            if mask.startswith('^'):
                pcpus = vcpus - len(parse_cpu_spec(mask[1:].replace(
                    ',^', ',')))
            else:
                pcpus = len(parse_cpu_spec(mask))
        except ValueError as exc:
            raise Unsupported(f'hw:cpu_dedicated_mask: {exc}') from None
    elif policy in ('shared', ''):
        pcpus = 0
    else:
        raise Unsupported(f'hw:cpu_policy={policy!r}')
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
                   numa=_numa(specs, vcpus, int(flavor['ram']), pcpus,
                              isolate, thread_policy))


def _numa(specs: dict[str, str], vcpus: int, ram: int, pcpus: int,
          isolate: bool, thread_policy: str) -> NumaRequest | None:
    pages = specs.get('hw:mem_page_size')
    nodes = specs.get('hw:numa_nodes')
    if not (pages or nodes or pcpus):
        return None
    if any(k.startswith(('hw:numa_cpus.', 'hw:numa_mem.')) for k in specs):
        raise Unsupported('hw:numa_cpus.N / hw:numa_mem.N (an uneven '
                          'split)')
    count = _int(nodes, 'hw:numa_nodes') if nodes else 1
    if count < 1 or vcpus % count or ram % count or pcpus % count:
        raise Unsupported(f'hw:numa_nodes={count} does not split '
                          f'{vcpus} vCPUs and {ram} MB evenly')
    return NumaRequest(nodes=count, pcpus=pcpus // count,
                       vcpus=vcpus // count, memory_mb=ram // count,
                       page_kb=page_size(pages) if pages else None,
                       isolate=isolate, thread_policy=thread_policy)
