"""kvmtune.facts.memory: memory, NUMA nodes and huge page pools from
/proc/meminfo and sysfs, on copies of real captures (a two-node Intel
host, and this machine, a PVM guest without NUMA sysfs once removed)."""

import os
import shutil

import pytest

from kvmtune.errors import InputError
from kvmtune import facts as host_facts
from kvmtune.facts.hostfs import HostFiles
from kvmtune.facts import memory
from tests import paths

SMT = os.path.join(paths.HOSTS, 'real', '32intel64-2p8co2t+8ve')


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / 'host'
    shutil.copytree(SMT, root, symlinks=True)
    return root


def gather(root):
    return host_facts.gather(str(root), probe_kvm=False)


def test_without_numa_sysfs_one_node_has_everything(pvm_tree):
    shutil.rmtree(pvm_tree / 'sys/devices/system/node')
    facts = host_facts.gather(str(pvm_tree))
    [node] = facts['numa']['nodes']
    assert node['id'] == 0
    assert node['cpus'] == [0, 1]
    assert node['memory_mb'] == facts['memory']['total_mb']
    assert node['hugepages'] == facts['memory']['hugepages']
    assert facts['numa']['sysfs'] is False


def test_bad_node_cpumap_names_the_file(tree):
    node = tree / 'sys/devices/system/node/node1'
    (node / 'cpulist').unlink()
    (node / 'cpumap').write_text('zz,ff\n')
    with pytest.raises(InputError, match='node1/cpumap: numa.nodes.cpus: '
                       'not a CPU mask'):
        gather(tree)


def test_node_cpus_from_links_when_no_list_or_mask(tree):
    node = tree / 'sys/devices/system/node/node1'
    (node / 'cpulist').unlink()
    (node / 'cpumap').unlink()
    assert gather(tree)['numa']['nodes'][1]['cpus'] == (
        list(range(8, 16)) + list(range(24, 32)))
    for link in node.glob('cpu[0-9]*'):
        link.unlink()
    assert gather(tree)['numa']['nodes'][1]['cpus'] is None


def test_hugepage_count_that_is_not_a_number(tree):
    pool = (tree / 'sys/devices/system/node/node0/hugepages/'
            'hugepages-2048kB/nr_hugepages')
    pool.write_text('many\n')
    with pytest.raises(InputError, match="nr_hugepages: hugepages: 'many'"):
        gather(tree)


def test_parse_meminfo_global_and_per_node_lines():
    assert memory.parse_meminfo(
        'MemTotal:       16318412 kB\n'
        'HugePages_Total:       4\n'
        'Node 1 MemFree:   123 kB\n'
        'no colon here\n'
        'Weird:   n/a\n'
        'Empty:\n') == {'MemTotal': 16318412, 'HugePages_Total': 4,
                        'MemFree': 123}
    assert memory.parse_meminfo(None) == {}


def test_pools_smallest_page_first_and_unknown_counts(tmp_path):
    pools = tmp_path / 'sys/kernel/mm/hugepages'
    for size, total in (('1048576', '2'), ('2048', '16')):
        pool = pools / f'hugepages-{size}kB'
        pool.mkdir(parents=True)
        (pool / 'nr_hugepages').write_text(total + '\n')
    (pools / 'hugepages-2048kB' / 'free_hugepages').write_text('3\n')
    (pools / 'not-a-pool').mkdir()
    assert memory.hugepage_pools(HostFiles(str(tmp_path)),
                                 memory.GLOBAL_POOLS) == [
        {'size_kb': 2048, 'total': 16, 'free': 3},
        {'size_kb': 1048576, 'total': 2, 'free': None}]


def test_two_nodes_each_with_its_cpus_memory_and_pools(tree):
    mem, numa = memory.gather(HostFiles(str(tree)), list(range(32)))
    assert numa['sysfs'] is True
    assert [node['id'] for node in numa['nodes']] == [0, 1]
    assert numa['nodes'][1]['cpus'] == (list(range(8, 16))
                                        + list(range(24, 32)))
    total = sum(node['memory_mb'] for node in numa['nodes'])
    assert 0 < total <= mem['total_mb']
    assert mem['hugepage_default_kb'] == 2048
    # only online CPUs are a node's
    _, numa = memory.gather(HostFiles(str(tree)), [0, 8, 9])
    assert [node['cpus'] for node in numa['nodes']] == [[0], [8, 9]]
