"""CPU facts from hostile or odd trees: one clear error or null, never a
traceback."""

import os
import shutil

import pytest

from kvmtune.errors import InputError
from kvmtune import facts as host_facts
from tests import paths

REAL = os.path.join(paths.HOSTS, 'real')
SMT = os.path.join(REAL, '32intel64-2p8co2t+8ve')   # 2 x 8 cores x 2
TOPO = 'sys/devices/system/cpu/cpu{}/topology/{}'


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / 'host'
    shutil.copytree(SMT, root, symlinks=True)
    return root


def gather(root):
    return host_facts.gather(str(root), probe_kvm=False)


def test_processor_that_is_not_a_number(tree):
    cpuinfo = tree / 'proc/cpuinfo'
    cpuinfo.write_text(cpuinfo.read_text().replace(
        'processor\t: 3\n', 'processor\t: x\n', 1))
    with pytest.raises(InputError,
                       match=r"processor: processor 'x' is not a CPU number "
                             r"\(0-8191\)") as err:
        gather(tree)
    line = err.value.line()
    assert line.startswith(f'{tree}/proc/cpuinfo: processor: ')
    assert "'x' is not a CPU number" in line and 'fix: ' in line


@pytest.mark.parametrize('text', ['0-', '3-1', '0,,1',
                                  '2-4294967295'])
def test_bad_online_list_names_the_file(tree, text):
    (tree / 'sys/devices/system/cpu/online').write_text(text + '\n')
    with pytest.raises(InputError,
                       match='cpu.online: not a CPU list item: ') as err:
        gather(tree)
    line = err.value.line()
    assert line.startswith(f'{tree}/sys/devices/system/cpu/online: '
                           'cpu.online: not a CPU list item')
    assert '\n' not in line and 'kvmtune host capture' in line


@pytest.mark.parametrize('text', ['0-', '3-1', '0,,1'])
def test_bad_sibling_list_names_the_file(tree, text):
    (tree / TOPO.format(5, 'core_cpus_list')).write_text(text)
    with pytest.raises(InputError, match='core_cpus_list: '
                       'cpu.thread_siblings: not a CPU list item'):
        gather(tree)


def test_siblings_that_are_not_online_are_dropped(tree):
    (tree / 'sys/devices/system/cpu/online').write_text('0-15\n')
    cpu = gather(tree)['cpu']
    assert cpu['online'] == list(range(16))
    assert cpu['thread_siblings'] == [[n] for n in range(16)]
    assert cpu['threads_per_core'] == 1


def test_a_cpu_outside_its_own_sibling_list_makes_siblings_unknown(tree):
    (tree / TOPO.format(5, 'core_cpus_list')).write_text('6,22\n')
    cpu = gather(tree)['cpu']
    assert cpu['thread_siblings'] is None
    assert cpu['threads_per_core'] is None and cpu['cores'] is None
    assert cpu['sockets'] == 2


def test_per_cpu_online_when_the_global_file_is_missing(tree):
    (tree / 'sys/devices/system/cpu/online').unlink()
    (tree / 'sys/devices/system/cpu/cpu7/online').write_text('0\n')
    (tree / 'sys/devices/system/cpu/cpu23/online').write_text('0\n')
    facts = gather(tree)
    assert 7 not in facts['cpu']['online']
    assert len(facts['cpu']['online']) == 30
    assert [7, 23] not in facts['cpu']['thread_siblings']
    assert facts['numa']['nodes'][0]['cpus'] == (
        [0, 1, 2, 3, 4, 5, 6] + list(range(16, 23)))


def test_package_id_minus_one_falls_back_to_package_lists(tree):
    for cpu in range(32):
        (tree / TOPO.format(cpu, 'physical_package_id')).write_text('-1\n')
    assert gather(tree)['cpu']['sockets'] == 2
    for cpu in range(32):
        for name in ('package_cpus_list', 'core_siblings_list',
                     'core_siblings'):
            (tree / TOPO.format(cpu, name)).unlink()
    cpu = gather(tree)['cpu']
    assert cpu['sockets'] is None and cpu['cores_per_socket'] is None
    assert cpu['cores'] == 16       # siblings still say


def test_siblings_none_of_them_online_is_unknown_not_a_crash(tree):
    """cpu5 lists only CPU 21 as its sibling, and 21 is offline."""
    (tree / 'sys/devices/system/cpu/online').write_text('0-15\n')
    for name in ('core_cpus_list', 'thread_siblings_list'):
        (tree / TOPO.format(5, name)).write_text('21\n')
    cpu = gather(tree)['cpu']
    assert cpu['online'] == list(range(16))
    assert cpu['thread_siblings'] is None and cpu['sockets'] == 2
