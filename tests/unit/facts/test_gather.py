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


def add_vmx(root):
    cpuinfo = (root / 'proc/cpuinfo').read_text()
    (root / 'proc/cpuinfo').write_text(
        cpuinfo.replace('flags\t\t: fpu', 'flags\t\t: vmx ept fpu'))


def test_without_numa_sysfs_one_node_has_everything(tree):
    shutil.rmtree(tree / 'sys/devices/system/node')
    facts = host_facts.gather(str(tree))
    [node] = facts['numa']['nodes']
    assert node['id'] == 0
    assert node['cpus'] == [0, 1]
    assert node['memory_mb'] == facts['memory']['total_mb']
    assert node['hugepages'] == facts['memory']['hugepages']
    assert facts['numa']['sysfs'] is False


def test_without_cpu_topology_cpuinfo_is_used(tree):
    shutil.rmtree(tree / 'sys/devices/system/cpu')
    cpu = host_facts.gather(str(tree))['cpu']
    assert cpu['online'] == [0, 1]
    assert cpu['thread_siblings'] == [[0], [1]]
    assert (cpu['sockets'], cpu['cores_per_socket']) == (1, 2)


def test_hardware_nested_off_beats_nothing_but_not_pvm(tree):
    add_vmx(tree)
    write(tree, 'sys/module/kvm_intel/parameters/nested', 'N\n')
    write(tree, 'sys/module/kvm_intel/parameters/ept', 'Y\n')
    virt = host_facts.gather(str(tree))['virt']
    assert virt['mechanism'] == 'vmx'
    assert virt['ept'] is True
    # kvm_pvm is still there, so nested guests are possible through it.
    assert (virt['nested'], virt['nested_mechanism']) == (True, 'pvm')
    shutil.rmtree(tree / 'sys/module/kvm_pvm')
    virt = host_facts.gather(str(tree))['virt']
    assert (virt['nested'], virt['nested_mechanism']) == (False, None)


def test_nested_unknown_when_parameter_is_missing(tree):
    add_vmx(tree)
    shutil.rmtree(tree / 'sys/module/kvm_pvm')
    write(tree, 'sys/module/kvm_intel/parameters/ept', 'N\n')
    virt = host_facts.gather(str(tree))['virt']
    assert (virt['nested'], virt['nested_mechanism']) == (None, None)
    assert virt['ept'] is False


def test_vendor_module_without_its_cpu_flag_is_ignored(tree):
    # A kernel may build in kvm_intel on an AMD CPU: it drives nothing.
    write(tree, 'sys/module/kvm_intel/parameters/nested', 'Y\n')
    virt = host_facts.gather(str(tree))['virt']
    assert virt['mechanism'] == 'pvm'
    assert virt['nested_mechanism'] == 'pvm'


def test_no_kvm_at_all(tree):
    shutil.rmtree(tree / 'sys/module')
    os.unlink(tree / 'dev/kvm')
    os.unlink(tree / 'kvmtune-capture.json')
    virt = host_facts.gather(str(tree))['virt']
    assert virt['kvm_device'] is False
    assert virt['kvm_usable'] is None
    assert virt['mechanism'] is None
    assert virt['nested'] is None
    assert virt['modules'] == {'kvm': None, 'kvm_intel': None,
                               'kvm_amd': None, 'kvm_pvm': None}


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


def test_probe_of_a_device_that_is_not_kvm(tree):
    # The marker file in a captured tree is not a KVM device: a forced
    # probe must fail with the reason, not raise.
    virt = host_facts.gather(str(tree), probe_kvm=True)['virt']
    assert virt['kvm_usable'] is False
    assert virt['kvm_error'].startswith('KVM_GET_API_VERSION')


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
