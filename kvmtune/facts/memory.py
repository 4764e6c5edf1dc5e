"""Memory, NUMA nodes and huge page pools from /proc/meminfo and sysfs."""

from collections.abc import Iterable
import re

from kvmtune.facts.cpu import bad_file
from kvmtune.facts.cpu import read_cpuset
from kvmtune.facts.hostfs import HostFiles
from kvmtune.facts.types import HugepagePool
from kvmtune.facts.types import MemoryFacts
from kvmtune.facts.types import NumaFacts
from kvmtune.facts.types import NumaNode

MEMINFO = '/proc/meminfo'
GLOBAL_POOLS = '/sys/kernel/mm/hugepages'
NODES = '/sys/devices/system/node'
_POOL_DIR = re.compile(r'^hugepages-(\d+)kB\Z')
_NODE_DIR = re.compile(r'^node(\d+)\Z')
_CPU_LINK = re.compile(r'^cpu(\d+)\Z')


def parse_meminfo(text: str | None) -> dict[str, int]:
    """``[Node N ]Key:   value [kB]`` lines -> {key: int}."""
    values = {}
    for line in (text or '').splitlines():
        key, sep, value = line.partition(':')
        if not sep:
            continue
        key = re.sub(r'^Node \d+ ', '', key.strip())
        number = value.split()
        if number and number[0].isdigit():
            values[key] = int(number[0])
    return values


def _count(files: HostFiles, path: str) -> int | None:
    """A page count: an int, None if missing; anything else refused."""
    text = files.read_value(path)
    if text is None:
        return None
    if not (text.isascii() and text.isdigit()):
        raise bad_file(files, path, f'{text[:20]!r} is not a page count',
                       'hugepages')
    return int(text)


def hugepage_pools(files: HostFiles, directory: str) -> list[HugepagePool]:
    """Pools under a ``hugepages`` directory, smallest page size first."""
    pools: list[HugepagePool] = []
    for name in files.listdir(directory):
        match = _POOL_DIR.match(name)
        if not match:
            continue
        path = f'{directory}/{name}'
        pools.append({'size_kb': int(match.group(1)),
                      'total': _count(files, f'{path}/nr_hugepages'),
                      'free': _count(files, f'{path}/free_hugepages')})
    return sorted(pools, key=lambda pool: pool['size_kb'])


def node_cpus(files: HostFiles, path: str,
              online: Iterable[int]) -> list[int] | None:
    """The online CPUs of a node: its ``cpulist``, else its ``cpumap``
    mask, else its ``cpuN`` links; None if it has none of the three.

    Dumps that copied only some files, and old kernels, have no
    ``cpulist``; the links are what ``cpumap`` is made from."""
    cpus = read_cpuset(files, f'{path}/cpulist', 'numa.nodes.cpus')
    if cpus is None:
        cpus = read_cpuset(files, f'{path}/cpumap', 'numa.nodes.cpus')
    if cpus is None:
        links = [int(m.group(1)) for m in map(
            _CPU_LINK.match, files.listdir(path)) if m]
        for cpu in links:   # recorded, so a capture keeps the links
            files.exists(f'{path}/cpu{cpu}')
        if not links:
            return None
        cpus = links
    online_set = set(online)
    return sorted(cpu for cpu in cpus if cpu in online_set)


def _node(files: HostFiles, node_id: int, online: list[int]) -> NumaNode:
    path = f'{NODES}/node{node_id}'
    meminfo = parse_meminfo(files.read(f'{path}/meminfo'))
    total_kb = meminfo.get('MemTotal')
    return {'id': node_id,
            'cpus': node_cpus(files, path, online),
            'memory_mb': None if total_kb is None else total_kb // 1024,
            'hugepages': hugepage_pools(files, f'{path}/hugepages')}


def gather(files: HostFiles,
           online_cpus: list[int]) -> tuple[MemoryFacts, NumaFacts]:
    """Return the ``memory`` and ``numa`` parts of the facts."""
    meminfo = parse_meminfo(files.read(MEMINFO))
    total_kb = meminfo.get('MemTotal')
    global_pools = hugepage_pools(files, GLOBAL_POOLS)
    memory: MemoryFacts = {
        'total_mb': None if total_kb is None else total_kb // 1024,
        'hugepage_default_kb': meminfo.get('Hugepagesize'),
        'hugepages': global_pools}
    node_ids = sorted(int(m.group(1)) for m in map(
        _NODE_DIR.match, files.listdir(NODES)) if m)
    if node_ids:
        nodes = [_node(files, node_id, online_cpus)
                 for node_id in node_ids]
    else:
        # A kernel without CONFIG_NUMA has no node directory: one node.
        nodes = [NumaNode(id=0, cpus=list(online_cpus),
                          memory_mb=memory['total_mb'],
                          hugepages=[HugepagePool(**pool)
                                     for pool in global_pools])]
    return memory, {'nodes': nodes, 'sysfs': bool(node_ids)}


def read_for_capture(files: HostFiles) -> None:
    """Read every node file a bug report may need (both CPU sets, links)."""
    for name in files.listdir(NODES):
        if not _NODE_DIR.match(name):
            continue
        path = f'{NODES}/{name}'
        files.read(f'{path}/cpulist')
        files.read(f'{path}/cpumap')
        for entry in files.listdir(path):
            if _CPU_LINK.match(entry):
                files.exists(f'{path}/{entry}')
