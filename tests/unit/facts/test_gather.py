"""gather() on small trees derived from the real capture of this machine."""

import os
import shutil

import pytest

from kvmtune import facts as host_facts
from tests import hang
from tests import paths

PVM = os.path.join(paths.FIXTURES, 'hosts',
                   'pvm-guest-2cpu')


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / 'host'
    shutil.copytree(PVM, root)
    return root


def write(root, path, text):
    full = root / path
    full.parent.mkdir(parents=True, exist_ok=True)
    full.write_text(text)


def test_without_cpu_topology_cpuinfo_is_used(tree):
    shutil.rmtree(tree / 'sys/devices/system/cpu')
    cpu = host_facts.gather(str(tree))['cpu']
    assert cpu['online'] == [0, 1]
    assert cpu['thread_siblings'] == [[0], [1]]
    assert (cpu['sockets'], cpu['cores_per_socket']) == (1, 2)


def test_vhost_net_builtin_versus_loaded(tree):
    (tree / 'sys/module/vhost_net/parameters').mkdir(parents=True)
    write(tree, 'dev/vhost-net', '')
    assert host_facts.gather(str(tree))['vhost_net'] == {
        'available': True, 'device': True, 'module': 'builtin'}
    write(tree, 'sys/module/vhost_net/initstate', 'live\n')
    assert host_facts.gather(str(tree))['vhost_net']['module'] == 'loaded'


def test_recorded_probe_failure_is_reported(tree):
    (tree / 'kvmtune-capture.json').write_text(
        '{"kvm_probe": {"usable": false, "api_version": 12,'
        ' "error": "KVM_CREATE_VM: Device or resource busy"}}')
    virt = host_facts.gather(str(tree))['virt']
    assert virt['kvm_usable'] is False
    assert virt['kvm_error'] == 'KVM_CREATE_VM: Device or resource busy'


def test_broken_capture_record_means_unknown(tree):
    (tree / 'kvmtune-capture.json').write_text('[1, 2')
    assert host_facts.gather(str(tree))['virt']['kvm_usable'] is None


def test_an_unreadable_cpuinfo_is_unknown_not_false(tree):
    # Before: flags [] gave confident "no pdpe1gb", "not a guest", "no
    # EPT" (issue 26). A FIFO in its place is refused unread.
    os.unlink(tree / 'proc/cpuinfo')
    os.mkfifo(tree / 'proc/cpuinfo')
    facts = hang.call(lambda: host_facts.gather(str(tree), probe_kvm=False),
                      release=[tree / 'proc/cpuinfo'])
    assert facts['cpu']['flags'] is None
    assert facts['cpu']['pdpe1gb'] is None
    assert facts['virt']['is_guest'] is None
    assert facts['virt']['ept'] is None
    # and the schema takes it: a facts file of such a host loads
    from kvmtune.facts import schema
    assert list(schema.problems(facts)) == []
