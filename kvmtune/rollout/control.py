"""The canary gate's control host: an untuned host of the canary's
hardware class, measured at the same moments.

A hardware class is what makes two hosts' figures comparable, read from
their facts (``kvmtune host inspect -f json``): the CPU model, the NUMA
shape (the online CPUs of each node) and the memory, equal to within
MEMORY_TOLERANCE (two hosts bought together differ by the kernel's and
the firmware's reservations, not by a DIMM). Pure functions on facts
dicts.
"""

from collections.abc import Iterable
from collections.abc import Mapping
import dataclasses
from typing import Any

from kvmtune.errors import InputError

# MemTotal of two identical hosts differs by reservations, well below this
MEMORY_TOLERANCE = 0.03


@dataclasses.dataclass(frozen=True)
class HardwareClass:
    cpu_model: str
    numa_shape: tuple[int, ...]     # online CPUs per NUMA node
    memory_mb: int

    def same(self, other: 'HardwareClass') -> bool:
        if (self.cpu_model, self.numa_shape) != (other.cpu_model,
                                                 other.numa_shape):
            return False
        big = max(self.memory_mb, other.memory_mb)
        return big == 0 or (abs(self.memory_mb - other.memory_mb) / big
                            <= MEMORY_TOLERANCE)

    def __str__(self) -> str:
        shape = 'x'.join(str(n) for n in self.numa_shape) or '?'
        return (f'{self.cpu_model}, NUMA {shape} CPUs, '
                f'{self.memory_mb / 1024:.0f} GiB')


def hardware_class(facts: Mapping[str, Any], source: str = 'facts'
                   ) -> HardwareClass:
    """The class of a host's facts; InputError when the facts lack what
    it needs (the CPU model, the memory)."""
    cpu = facts.get('cpu') or {}
    model = cpu.get('model_name')
    memory = (facts.get('memory') or {}).get('total_mb')
    if not isinstance(model, str) or not model.strip():
        raise InputError('no CPU model in the facts', source=source,
                         key='cpu.model_name',
                         fix='give the host\'s facts from kvmtune host '
                             'inspect -f json')
    if isinstance(memory, bool) or not isinstance(memory, (int, float)):
        raise InputError('no memory size in the facts', source=source,
                         key='memory.total_mb',
                         fix='give the host\'s facts from kvmtune host '
                             'inspect -f json')
    nodes = (facts.get('numa') or {}).get('nodes') or []
    shape = tuple(len(node.get('cpus') or []) for node in nodes
                  if isinstance(node, Mapping))
    return HardwareClass(' '.join(model.split()), shape, int(memory))


def choose(canary: str, facts: Mapping[str, Mapping[str, Any]],
           tuned: Iterable[str] = ()) -> str:
    """The control for ``canary``: of the hosts in ``facts`` that are not
    the canary nor ``tuned``, one of the canary's hardware class, the
    nearest in memory, then by name. InputError naming the class when
    there is none."""
    if canary not in facts:
        raise InputError(f'no facts for the canary {canary}', source=canary,
                         fix='gather the facts of every host first')
    want = hardware_class(facts[canary], canary)
    skip = set(tuned) | {canary}
    found = []
    for host in sorted(facts):
        if host in skip:
            continue
        have = hardware_class(facts[host], host)
        if want.same(have):
            found.append((abs(have.memory_mb - want.memory_mb), host))
    if not found:
        raise InputError(
            f'no untuned host of its hardware class ({want}) to measure '
            'beside it', source=canary,
            fix='keep one untuned host of that class out of the batch '
                '(a control), or measure this class by hand')
    return min(found)[1]
