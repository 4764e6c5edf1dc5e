"""gather() on small trees derived from the real capture of this machine."""

import os
import shutil

from kvmtune import facts as host_facts
from tests import hang
from tests.unit.facts.conftest import write


def test_without_cpu_topology_cpuinfo_is_used(pvm_tree):
    shutil.rmtree(pvm_tree / 'sys/devices/system/cpu')
    cpu = host_facts.gather(str(pvm_tree))['cpu']
    assert cpu['online'] == [0, 1]
    assert cpu['thread_siblings'] == [[0], [1]]
    assert (cpu['sockets'], cpu['cores_per_socket']) == (1, 2)


def test_vhost_net_builtin_versus_loaded(pvm_tree):
    (pvm_tree / 'sys/module/vhost_net/parameters').mkdir(parents=True)
    write(pvm_tree, 'dev/vhost-net', '')
    assert host_facts.gather(str(pvm_tree))['vhost_net'] == {
        'available': True, 'device': True, 'module': 'builtin'}
    write(pvm_tree, 'sys/module/vhost_net/initstate', 'live\n')
    assert host_facts.gather(str(pvm_tree))['vhost_net']['module'] == 'loaded'


def test_recorded_probe_failure_is_reported(pvm_tree):
    (pvm_tree / 'kvmtune-capture.json').write_text(
        '{"kvm_probe": {"usable": false, "api_version": 12,'
        ' "error": "KVM_CREATE_VM: Device or resource busy"}}')
    virt = host_facts.gather(str(pvm_tree))['virt']
    assert virt['kvm_usable'] is False
    assert virt['kvm_error'] == 'KVM_CREATE_VM: Device or resource busy'


def test_broken_capture_record_means_unknown(pvm_tree):
    (pvm_tree / 'kvmtune-capture.json').write_text('[1, 2')
    assert host_facts.gather(str(pvm_tree))['virt']['kvm_usable'] is None


def test_an_unreadable_cpuinfo_is_unknown_not_false(pvm_tree):
    # Before: flags [] gave confident "no pdpe1gb", "not a guest", "no
    # EPT". A FIFO in its place is refused unread.
    os.unlink(pvm_tree / 'proc/cpuinfo')
    os.mkfifo(pvm_tree / 'proc/cpuinfo')
    facts = hang.call(
        lambda: host_facts.gather(str(pvm_tree), probe_kvm=False),
        release=[pvm_tree / 'proc/cpuinfo'])
    assert facts['cpu']['flags'] is None
    assert facts['cpu']['pdpe1gb'] is None
    assert facts['virt']['is_guest'] is None
    assert facts['virt']['ept'] is None
    # and the schema takes it: a facts file of such a host loads
    from kvmtune.facts import schema
    assert list(schema.problems(facts)) == []
