"""kvmtune.facts.virt: the KVM device, the vendor modules' parameters,
nested guests, EPT/NPT and the hypervisor of a guest host, on trees
derived from the real capture of this machine (a PVM guest) and on the
decision functions alone."""

import os
import shutil

import pytest

from kvmtune import facts as host_facts
from kvmtune.facts.hostfs import HostFiles
from kvmtune.facts import virt
from tests.unit.facts.conftest import write

NONE = {'kvm': None, 'kvm_intel': None, 'kvm_amd': None, 'kvm_pvm': None}


def add_vmx(root):
    cpuinfo = (root / 'proc/cpuinfo').read_text()
    (root / 'proc/cpuinfo').write_text(
        cpuinfo.replace('flags\t\t: fpu', 'flags\t\t: vmx ept fpu'))


def test_hardware_nested_off_beats_nothing_but_not_pvm(pvm_tree):
    add_vmx(pvm_tree)
    write(pvm_tree, 'sys/module/kvm_intel/parameters/nested', 'N\n')
    write(pvm_tree, 'sys/module/kvm_intel/parameters/ept', 'Y\n')
    virt = host_facts.gather(str(pvm_tree))['virt']
    assert virt['mechanism'] == 'vmx'
    assert virt['ept'] is True
    # kvm_pvm is still there, so nested guests are possible through it.
    assert (virt['nested'], virt['nested_mechanism']) == (True, 'pvm')
    shutil.rmtree(pvm_tree / 'sys/module/kvm_pvm')
    virt = host_facts.gather(str(pvm_tree))['virt']
    assert (virt['nested'], virt['nested_mechanism']) == (False, None)


def test_nested_unknown_when_parameter_is_missing(pvm_tree):
    add_vmx(pvm_tree)
    shutil.rmtree(pvm_tree / 'sys/module/kvm_pvm')
    write(pvm_tree, 'sys/module/kvm_intel/parameters/ept', 'N\n')
    virt = host_facts.gather(str(pvm_tree))['virt']
    assert (virt['nested'], virt['nested_mechanism']) == (None, None)
    assert virt['ept'] is False


def test_vendor_module_without_its_cpu_flag_is_ignored(pvm_tree):
    # A kernel may build in kvm_intel on an AMD CPU: it drives nothing.
    write(pvm_tree, 'sys/module/kvm_intel/parameters/nested', 'Y\n')
    virt = host_facts.gather(str(pvm_tree))['virt']
    assert virt['mechanism'] == 'pvm'
    assert virt['nested_mechanism'] == 'pvm'


def test_no_kvm_at_all(pvm_tree):
    shutil.rmtree(pvm_tree / 'sys/module')
    os.unlink(pvm_tree / 'dev/kvm')
    os.unlink(pvm_tree / 'kvmtune-capture.json')
    virt = host_facts.gather(str(pvm_tree))['virt']
    assert virt['kvm_device'] is False
    assert virt['kvm_usable'] is None
    assert virt['mechanism'] is None
    assert virt['nested'] is None
    assert virt['modules'] == {'kvm': None, 'kvm_intel': None,
                               'kvm_amd': None, 'kvm_pvm': None}


def test_probe_of_a_device_that_is_not_kvm(pvm_tree):
    # The marker file in a captured tree is not a KVM device: a forced
    # probe must fail with the reason, not raise.
    virt = host_facts.gather(str(pvm_tree), probe_kvm=True)['virt']
    assert virt['kvm_usable'] is False
    assert virt['kvm_error'].startswith('KVM_GET_API_VERSION')


def modules(**loaded):
    return dict(NONE, **loaded)


@pytest.mark.parametrize('loaded, flags, expected', [
    # the vendor module's nested parameter, Y/1 or N/0
    (modules(kvm_intel={'nested': 'Y'}), ['vmx'], (True, 'vmx')),
    (modules(kvm_amd={'nested': '1'}), ['svm'], (True, 'svm')),
    (modules(kvm_intel={'nested': '0'}), ['vmx'], (False, None)),
    # a parameter that says neither is unknown, not false
    (modules(kvm_intel={'nested': 'maybe'}), ['vmx'], (None, None)),
    # PVM runs nested guests whatever the vendor module says
    (modules(kvm_intel={'nested': 'N'}, kvm_pvm={}), ['vmx'],
     (True, 'pvm')),
    # unknown flags: a loaded vendor module still counts
    (modules(kvm_amd={'nested': 'Y'}), None, (True, 'svm')),
    (NONE, ['vmx'], (None, None)),
])
def test_nested(loaded, flags, expected):
    assert virt.nested(loaded, flags) == expected


@pytest.mark.parametrize('loaded, flags, mechanism, ept', [
    (modules(kvm_intel={'ept': 'Y'}), ['vmx', 'ept'], 'vmx', True),
    (modules(kvm_amd={'npt': '0'}), ['svm', 'npt'], 'svm', False),
    (modules(kvm_amd={}), ['svm'], 'svm', None),
    # PVM shadows guest page tables: no EPT when the CPU has neither flag
    (modules(kvm_pvm={}), ['hypervisor'], 'pvm', False),
    (modules(kvm_pvm={}), ['hypervisor', 'ept'], 'pvm', None),
    (modules(kvm_pvm={}), None, 'pvm', None),
    # kvm_intel built in on a CPU without vmx drives nothing
    (modules(kvm_intel={'ept': 'Y'}), ['svm'], None, False),
    (NONE, [], None, False),
])
def test_mechanism_and_ept(loaded, flags, mechanism, ept):
    assert virt.mechanism(loaded, flags) == mechanism
    assert virt.ept(loaded, flags) is ept


def test_hypervisor_vendor_of_a_guest(pvm_tree):
    files = HostFiles(str(pvm_tree))
    # the capture's clock sources: tsc kvm-clock
    assert virt.hypervisor_vendor(files, ['hypervisor']) == 'KVM'
    # not a guest, or flags unknown: no vendor named
    assert virt.hypervisor_vendor(files, ['vmx']) is None
    assert virt.hypervisor_vendor(files, None) is None
    write(pvm_tree, 'sys/hypervisor/type', 'xen\n')
    assert virt.hypervisor_vendor(HostFiles(str(pvm_tree)),
                                  ['hypervisor']) == 'Xen'


def test_hypervisor_vendor_unknown_clocksource(pvm_tree):
    write(pvm_tree, virt.CLOCKSOURCES.lstrip('/'), 'tsc hpet\n')
    assert virt.hypervisor_vendor(HostFiles(str(pvm_tree)),
                                  ['hypervisor']) is None
    write(pvm_tree, virt.CLOCKSOURCES.lstrip('/'),
          'hyperv_clocksource_tsc_page\n')
    assert virt.hypervisor_vendor(HostFiles(str(pvm_tree)),
                                  ['hypervisor']) == 'Microsoft'


def test_module_params_skips_unreadable_and_knows_unloaded(pvm_tree):
    files = HostFiles(str(pvm_tree))
    assert virt.module_params(files, 'kvm_amd') is None
    write(pvm_tree, 'sys/module/kvm_amd/parameters/npt', 'Y\n')
    os.mkdir(pvm_tree / 'sys/module/kvm_amd/parameters/write_only')
    assert virt.module_params(HostFiles(str(pvm_tree)), 'kvm_amd') == {
        'npt': 'Y'}


def test_probe_kvm_of_a_missing_device(tmp_path):
    missing = str(tmp_path / 'kvm')
    assert virt.probe_kvm(missing) == {
        'usable': False, 'api_version': None,
        'error': f'open {missing}: No such file or directory'}


def test_probe_kvm_of_a_regular_file(tmp_path):
    plain = tmp_path / 'kvm'
    plain.write_bytes(b'')
    probe = virt.probe_kvm(str(plain))
    assert probe['usable'] is False and probe['api_version'] is None
    assert probe['error'].startswith('KVM_GET_API_VERSION: ')
