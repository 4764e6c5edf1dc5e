"""Memory, NUMA nodes and huge page pools from /proc/meminfo and sysfs."""

import re

from kvmtune.facts.cpulist import parse_cpulist

MEMINFO = '/proc/meminfo'
GLOBAL_POOLS = '/sys/kernel/mm/hugepages'
NODES = '/sys/devices/system/node'
_POOL_DIR = re.compile(r'^hugepages-(\d+)kB$')
_NODE_DIR = re.compile(r'^node(\d+)$')


def parse_meminfo(text):
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


def hugepage_pools(files, directory):
    """Pools under a ``hugepages`` directory, smallest page size first."""
    pools = []
    for name in files.listdir(directory):
        match = _POOL_DIR.match(name)
        if not match:
            continue
        path = f'{directory}/{name}'
        pools.append({'size_kb': int(match.group(1)),
                      'total': files.read_int(f'{path}/nr_hugepages'),
                      'free': files.read_int(f'{path}/free_hugepages')})
    return sorted(pools, key=lambda pool: pool['size_kb'])


def _node(files, node_id):
    path = f'{NODES}/node{node_id}'
    cpulist = files.read_value(f'{path}/cpulist')
    meminfo = parse_meminfo(files.read(f'{path}/meminfo'))
    total_kb = meminfo.get('MemTotal')
    return {'id': node_id,
            'cpus': parse_cpulist(cpulist) if cpulist else [],
            'memory_mb': None if total_kb is None else total_kb // 1024,
            'hugepages': hugepage_pools(files, f'{path}/hugepages')}


def gather(files, online_cpus):
    """Return the ``memory`` and ``numa`` parts of the facts."""
    meminfo = parse_meminfo(files.read(MEMINFO))
    total_kb = meminfo.get('MemTotal')
    global_pools = hugepage_pools(files, GLOBAL_POOLS)
    memory = {'total_mb': None if total_kb is None else total_kb // 1024,
              'hugepage_default_kb': meminfo.get('Hugepagesize'),
              'hugepages': global_pools}
    node_ids = sorted(int(m.group(1)) for m in map(
        _NODE_DIR.match, files.listdir(NODES)) if m)
    if node_ids:
        nodes = [_node(files, node_id) for node_id in node_ids]
    else:
        # A kernel without CONFIG_NUMA has no node directory: one node.
        nodes = [{'id': 0, 'cpus': list(online_cpus),
                  'memory_mb': memory['total_mb'],
                  'hugepages': [dict(pool) for pool in global_pools]}]
    return memory, {'nodes': nodes, 'sysfs': bool(node_ids)}
