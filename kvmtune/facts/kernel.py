"""The kernel arguments kvmtune cares about, as the facts record them.

``kernel.args`` of the facts (doc/facts.md) is what the kernel kept of the
booted command line: read by kvmtune.facts.cmdline, the one judgement of
a command line (a second isolcpus= whose CPUs differ is ignored, as the
kernel ignores it; a huge page count goes with the size the kernel gives
it).
"""

from kvmtune.facts import cmdline
from kvmtune.facts.types import HugepagesArg
from kvmtune.facts.types import KernelArgs

IOMMU_KEYS = ('intel_iommu', 'amd_iommu', 'iommu')


def parse_args(line: str) -> KernelArgs:
    """Return the ``kernel.args`` dict of the facts (doc/facts.md)."""
    kept = cmdline.read(line)
    isolcpus: list[int] = []
    if kept.isolcpus:
        _, value = cmdline.pair(kept.words[kept.isolcpus[0]])
        isolcpus = cmdline.parse_isolcpus(value or '')[0]
    ignored = {word for word, _ in kept.ignored}
    pools = []
    for pool in kept.pools.values():
        entry: HugepagesArg = {'size': pool.size, 'count': pool.count,
                               'size_kb': pool.size_kb}
        if pool.per_node is not None:
            entry['per_node'] = pool.per_node
        pools.append(entry)
    return {
        'isolcpus': isolcpus,
        'isolcpus_flags': list(kept.isolcpus_flags),
        'nohz_full': sorted(kept.isolated.get('nohz', ())),
        'hugepages': pools,
        'default_hugepagesz': kept.default_size,
        'hugepagesz': [value for word in kept.of_key('hugepagesz')
                       if word not in ignored
                       for value in [cmdline.pair(word)[1]] if value],
        'iommu': {key: value for key, value in kept.values.items()
                  if key in IOMMU_KEYS or key.startswith('iommu.')},
        'invalid': list(kept.invalid)}
