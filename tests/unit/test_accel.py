"""tests/accel.py, the guest tier's expectation, against kvmtune's own
detection: on this host and fed the facts of captured KVM hosts."""

import os

import pytest

from kvmtune.bench import qemu
from kvmtune import facts
from kvmtune.testcloud import system
from tests import accel
from tests import paths


@pytest.mark.parametrize('flags, creates_vm, expected', [
    ({'vmx', 'ept'}, True, 'kvm'),
    ({'svm', 'npt'}, True, 'kvm'),
    ({'hypervisor'}, True, 'tcg'),       # PVM: a VM, no vmx/svm
    ({'vmx'}, False, 'tcg'),             # no usable /dev/kvm
    (set(), False, 'tcg'),
])
def test_expected_accel(flags, creates_vm, expected):
    assert accel.expected_accel(flags, creates_vm) == expected


def test_cpu_flags_of_a_captured_cpuinfo():
    with open(os.path.join(paths.HOSTS, 'intel-2s-smt-ept-1g',
                           'proc', 'cpuinfo')) as f:
        flags = accel.cpu_flags(f.read())
    assert {'vmx', 'ept', 'pdpe1gb'} <= flags
    assert accel.cpu_flags('processor\t: 0\n') == frozenset()


def test_no_kvm_device_creates_no_vm(tmp_path):
    assert accel.kvm_creates_vm(str(tmp_path / 'kvm')) is False
    regular = tmp_path / 'not-kvm'
    regular.write_text('')
    assert accel.kvm_creates_vm(str(regular)) is False   # ENOTTY


def test_labels_are_kvmtunes():
    for name, text in accel.LABELS.items():
        assert qemu.accel_label(name) == text


@pytest.mark.parametrize('tree, expected', [
    ('intel-2s-smt-ept-1g', 'kvm'),
    ('amd-epyc-npt', 'kvm'),
    ('pvm-guest-2cpu', 'tcg'),
])
def test_kvmtune_fed_a_hosts_facts_agrees(tree, expected):
    # a captured tree cannot be probed: its /dev/kvm counts as working,
    # as on the compute host it was captured from
    root = os.path.join(paths.HOSTS, tree)
    virt = dict(facts.gather(root, probe_kvm=False)['virt'], kvm_usable=True)
    with open(os.path.join(root, 'proc', 'cpuinfo')) as f:
        flags = accel.cpu_flags(f.read())
    assert accel.expected_accel(flags, True) == expected
    chosen, why = qemu.choose_accel('auto', virt)
    assert chosen == expected, why
    assert qemu.accel_label(chosen) == accel.label(expected)


def test_kvmtune_agrees_on_this_host():
    expected = accel.host_accel()
    assert qemu.choose_accel('auto')[0] == expected
    assert system.detect_virt_type() == accel.VIRT_TYPES[expected]
    assert accel.emulated() is (expected == 'tcg')
