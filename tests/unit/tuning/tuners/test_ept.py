"""The ept tuner: EPT/NPT written down on, flavors that require the
trait `host tag` sets, and a check per way it can be missing."""

from kvmtune.tuning import traits
from kvmtune.tuning.tuners import base
from kvmtune.tuning.tuners import ept


def smt_host():
    """An Intel host with EPT on (kvm_intel loaded)."""
    return {'cpu': {'flags': ['vmx', 'ept', 'pdpe1gb'],
                    'vendor': 'GenuineIntel'},
            'virt': {'mechanism': 'vmx', 'ept': True, 'nested': False,
                     'nested_mechanism': None}}


def pvm_host():
    return {'cpu': {'flags': ['hypervisor', 'pdpe1gb'], 'online': [0, 1]},
            'virt': {'mechanism': 'pvm', 'nested': True,
                     'nested_mechanism': 'pvm', 'ept': False}}


def test_ept_off_fails_with_modprobe_fix():
    host = smt_host()
    host['virt']['ept'] = False
    tuner = ept.Ept({}, host)
    assert tuner.modprobe() == {'kvm_intel': {'ept': '1'}}
    assert tuner.extra_specs() == {'trait:CUSTOM_KVMTUNE_EPT': 'required'}
    (check,) = tuner.checks()
    assert check.status == base.FAIL
    assert check.fix == ('echo "options kvm_intel ept=1" >> '
                         '/etc/modprobe.d/kvm.conf && modprobe -r '
                         'kvm_intel && modprobe kvm_intel')
    assert ept.Ept({'require_trait': False}, host).extra_specs() == {}


def test_pvm_has_no_ept():
    (check,) = ept.Ept({}, pvm_host()).checks()
    assert check.status == base.FAIL
    assert 'pvm' in check.message


def test_ept_on_passes_and_asks_for_the_trait_host_tag_sets():
    tuner = ept.Ept({}, smt_host())
    (check,) = tuner.checks()
    assert (check.status, check.message) == (base.PASS, 'kvm_intel ept=Y')
    assert tuner.extra_specs() == {f'trait:{traits.EPT}': 'required'}
    assert ept.TRAIT_KEY == 'trait:CUSTOM_KVMTUNE_EPT'


def test_amd_writes_npt():
    host = {'cpu': {'flags': ['svm', 'npt']},
            'virt': {'mechanism': 'svm', 'ept': False}}
    tuner = ept.Ept({}, host)
    assert tuner.modprobe() == {'kvm_amd': {'npt': '1'}}
    (check,) = tuner.checks()
    assert (check.status, check.message) == (base.FAIL,
                                             'kvm_amd npt is off')
    assert 'options kvm_amd npt=1' in check.fix


def test_a_cpu_without_the_flag_or_with_unknown_flags():
    host = smt_host()
    host['cpu']['flags'] = ['vmx']
    (check,) = ept.Ept({}, host).checks()
    assert check.status == base.FAIL
    assert check.message == ('the CPU has no ept flag: kvm_intel cannot use '
                             'two-dimensional paging')
    host['cpu']['flags'] = None
    (check,) = ept.Ept({}, host).checks()
    assert check.status == base.WARN and 'flags are unknown' in check.message


def test_vendor_module_not_loaded_is_unknown():
    host = smt_host()
    host['virt']['ept'] = None
    (check,) = ept.Ept({}, host).checks()
    assert check.status == base.WARN
    assert check.fix == 'modprobe kvm_intel'
