"""A flavor as a whole, as nova-api judges it at boot.

nova/compute/api.py _validate_flavor_image_nostatus calls
nova/virt/hardware.py numa_get_constraints, which refuses combinations of
extra specs each valid alone (a 400 at POST /servers), and makes the
guest NUMA topology of the ones it takes. ``guest_topology`` is that
judgement, read from Nova 34's hardware.py: the guest's NUMA nodes, or
the rule it is refused by, named by the exception Nova raises. The keys
one by one are kvmtune.tuning.extra_specs' rules (checked first, as
nova-api checks them when the flavor's specs are set).
tests/unit/capacity/test_numa.py checks every generated flavor against
Nova's own answer.
"""

from collections.abc import Mapping
import dataclasses
import re

from kvmtune.tuning.extra_specs import find
from kvmtune.tuning.extra_specs import page_size_kb


GUEST_NODES_MAX = 8   # nova.objects.ImageMetaProps.NUMA_NODES_MAX


class Refused(ValueError):
    """Nova refuses to boot the flavor: ``rule`` (Nova's exception name)
    and why."""

    def __init__(self, rule: str, why: str) -> None:
        super().__init__(f'{rule}: {why}')
        self.rule = rule
        self.why = why


def guest_cpus(spec: str, vcpus: int) -> set[int]:
    """A guest CPU list (``0-3,^2``) as Nova's parse_cpu_spec reads it.

    :raises ValueError: not a CPU list
    """
    from kvmtune.facts.cpulist import parse_cpu_spec
    return set(parse_cpu_spec(spec))


def _mappings(specs: Mapping[str, str], key: str) -> list[str] | None:
    """hw:numa_cpus.0, .1, ... up to the first missing one (Nova's
    _get_constraint_mappings_from_flavor)."""
    found = []
    for node in range(GUEST_NODES_MAX):
        value = specs.get(f'{key}.{node}')
        if value is None:
            break
        found.append(value)
    return found or None


@dataclasses.dataclass(frozen=True)
class GuestTopology:
    """What numa_get_constraints makes of a flavor: the CPU policy
    (``dedicated``, ``mixed``, ``shared``), the thread policy (None or
    prefer/isolate/require), emulator threads isolate, the page request
    (page_size_kb's answer) and, per guest node, (dedicated vCPUs, shared
    vCPUs, memory MB); ``nodes`` is empty when the flavor has no NUMA
    topology."""
    policy: str
    thread_policy: str | None
    emulator_isolate: bool
    page_kb: str | int | float | None
    nodes: tuple[tuple[frozenset[int], frozenset[int], int], ...]


def guest_topology(vcpus: int, ram: int,
                   specs: Mapping[str, object]) -> GuestTopology:
    """The guest NUMA topology Nova makes of a flavor, or the rule by
    which nova-api refuses to boot it (in numa_get_constraints' order).

    :raises Refused: the rule, named as Nova's exception
    """
    text = {k: (str(v).lower() if isinstance(v, bool) else str(v))
            for k, v in specs.items()}
    for name, value in sorted(text.items()):
        spec, problem = find(name)
        if spec is not None and problem is None and name.startswith('hw:'):
            problem = spec.problem(value)
            if problem:
                raise Refused('ValidationError', f'{name}: {problem} '
                              f'(valid: {spec.valid_values()})')
    policy = text.get('hw:cpu_policy') or None
    thread = text.get('hw:cpu_thread_policy') or None
    emulator = text.get('hw:emulator_threads_policy') or None
    mask = text.get('hw:cpu_dedicated_mask')
    dedicated: set[int] | None = None
    if mask:
        listed = (f'0-{vcpus - 1},{mask}' if mask.strip().startswith('^')
                  else mask)
        try:
            dedicated = guest_cpus(listed, vcpus)
        except ValueError as exc:
            raise Refused('InvalidMixedInstanceDedicatedMask', str(exc)) \
                from None
        every = set(range(vcpus))
        if not dedicated or not every - dedicated:
            raise Refused('InvalidMixedInstanceDedicatedMask',
                          'hw:cpu_dedicated_mask must leave at least one '
                          'vCPU dedicated and one shared')
        if not dedicated <= every:
            raise Refused('InvalidMixedInstanceDedicatedMask',
                          'hw:cpu_dedicated_mask names vCPUs the flavor '
                          'does not have')
    counts = {'VCPU': 0, 'PCPU': 0}
    for key, value in text.items():
        got = re.fullmatch(r'resources([1-9][0-9]*)?:(VCPU|PCPU)', key)
        if got and value.strip().lstrip('+-').isdigit():
            counts[got.group(2)] += int(value)
    if policy and (counts['VCPU'] or counts['PCPU']):
        raise Refused('InvalidRequest', 'resources:VCPU or resources:PCPU '
                      'together with hw:cpu_policy')
    if counts['VCPU'] and counts['PCPU']:
        raise Refused('InvalidRequest', 'both resources:VCPU and '
                      'resources:PCPU')
    if counts['PCPU']:
        wanted = vcpus + (1 if emulator == 'isolate' else 0)
        if counts['PCPU'] != wanted:
            raise Refused('InvalidRequest', f'resources:PCPU must be '
                          f'{wanted} for {vcpus} vCPUs')
        policy = 'dedicated'
    if counts['VCPU']:
        policy = 'shared'
    trait = next((v for k, v in text.items() if re.fullmatch(
        r'trait([a-zA-Z0-9_-]{1,64})?:HW_CPU_HYPERTHREADING', k)), None)
    if thread and trait:
        raise Refused('InvalidRequest', 'trait:HW_CPU_HYPERTHREADING '
                      'together with hw:cpu_thread_policy')
    if trait == 'forbidden':
        thread = 'isolate'
    elif trait == 'required':
        thread = 'require'
    if policy in ('shared', None):
        if thread:
            raise Refused('CPUThreadPolicyConfigurationInvalid',
                          'a thread policy needs hw:cpu_policy dedicated '
                          'or mixed')
        if emulator == 'isolate':
            raise Refused('BadRequirementEmulatorThreadsPolicy',
                          'hw:emulator_threads_policy=isolate needs '
                          'hw:cpu_policy dedicated or mixed')
        if dedicated:
            raise Refused('RequiredMixedInstancePolicy',
                          'hw:cpu_dedicated_mask needs hw:cpu_policy=mixed')
    elif policy == 'dedicated':
        if dedicated:
            raise Refused('RequiredMixedInstancePolicy',
                          'hw:cpu_dedicated_mask needs hw:cpu_policy=mixed')
    elif not dedicated:
        raise Refused('RequiredMixedOrRealtimeCPUMask',
                      'hw:cpu_policy=mixed needs hw:cpu_dedicated_mask')
    count = text.get('hw:numa_nodes')
    nodes = int(count) if count else None
    try:
        page = page_size_kb(text.get('hw:mem_page_size'))
    except ValueError:
        raise Refused('MemoryPageSizeInvalid',
                      f'hw:mem_page_size={text["hw:mem_page_size"]!r}') \
            from None
    policy = policy or 'shared'
    if policy == 'dedicated':
        dedicated = set(range(vcpus))
    if not (nodes or page or policy in ('dedicated', 'mixed')):
        return GuestTopology(policy, thread, emulator == 'isolate', page, ())
    nodes = nodes or 1
    pinned = dedicated or set()
    cpu_list = _mappings(text, 'hw:numa_cpus')
    mem_list = _mappings(text, 'hw:numa_mem')
    cells = []
    if cpu_list is None and mem_list is None:
        if vcpus % nodes or ram % nodes:
            raise Refused('ImageNUMATopologyAsymmetric',
                          f'hw:numa_nodes={nodes} does not split {vcpus} '
                          f'vCPUs and {ram} MB evenly (give '
                          'hw:numa_cpus.N and hw:numa_mem.N)')
        per = vcpus // nodes
        for node in range(nodes):
            cpus = set(range(node * per, node * per + per))
            cells.append((frozenset(cpus & pinned),
                          frozenset(cpus - pinned), ram // nodes))
    else:
        if cpu_list is None or mem_list is None or \
                len(cpu_list) != nodes or len(mem_list) != nodes:
            raise Refused('ImageNUMATopologyIncomplete',
                          f'hw:numa_cpus.N and hw:numa_mem.N for each of '
                          f'the {nodes} guest node(s)')
        left = set(range(vcpus))
        total = 0
        for node in range(nodes):
            cpus = guest_cpus(cpu_list[node], vcpus)
            for cpu in sorted(cpus):
                if cpu > vcpus - 1:
                    raise Refused('ImageNUMATopologyCPUOutOfRange',
                                  f'hw:numa_cpus.{node}: vCPU {cpu} of '
                                  f'0-{vcpus - 1}')
                if cpu not in left:
                    raise Refused('ImageNUMATopologyCPUDuplicates',
                                  f'hw:numa_cpus.{node}: vCPU {cpu} is on '
                                  'another guest node too')
                left.discard(cpu)
            memory = int(mem_list[node])
            total += memory
            cells.append((frozenset(cpus & pinned),
                          frozenset(cpus - pinned), memory))
        if left:
            raise Refused('ImageNUMATopologyCPUsUnassigned',
                          f'vCPUs {sorted(left)} are on no guest node')
        if total != ram:
            raise Refused('ImageNUMATopologyMemoryOutOfRange',
                          f'hw:numa_mem.N add up to {total} MB, the flavor '
                          f'has {ram} MB')
    return GuestTopology(policy, thread, emulator == 'isolate', page,
                         tuple(cells))
