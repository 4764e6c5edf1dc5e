"""kvmtune.tuning.novaconf.rules.follow_ups: Nova's cpu_mode / cpu_models rule.

The rule is LibvirtDriver._check_cpu_compatibility's (Nova 34,
nova/virt/libvirt/driver.py); Nova itself runs it on a result in
tests/functional/test_devstack_real.py.
"""

import pytest

from kvmtune.errors import InputError
from kvmtune.tuning.novaconf import inifile
from kvmtune.tuning.novaconf import rules
from kvmtune.tuning.novaconf import update

DEVSTACK = '[libvirt]\ncpu_mode = custom\ncpu_models = Nehalem\n'


def current(text):
    return inifile.IniFile(text).get


@pytest.mark.parametrize('mode', ['host-passthrough', 'host-model', 'none'])
def test_modes_other_than_custom_remove_cpu_models(mode):
    gone, notices = rules.follow_ups({'libvirt': {'cpu_mode': mode}},
                                     current(DEVSTACK))
    assert gone == {'libvirt': {'cpu_models': None}}
    assert notices == [f'[libvirt] cpu_models = Nehalem removed: '
                       f'nova-compute refuses it with cpu_mode = {mode}']


def test_the_deprecated_name_goes_too():
    gone, _ = rules.follow_ups(
        {'libvirt': {'cpu_mode': 'host-model'}},
        current('[libvirt]\ncpu_model = Nehalem\n'))
    assert gone == {'libvirt': {'cpu_model': None}}


def test_nothing_to_do_without_cpu_mode_or_models():
    assert rules.follow_ups({'compute': {'cpu_shared_set': '0'}},
                            current(DEVSTACK)) == ({}, [])
    assert rules.follow_ups({'libvirt': {'cpu_mode': 'host-model'}},
                            current('[libvirt]\nvirt_type = kvm\n')) == \
        ({}, [])


def test_custom_keeps_the_files_models_and_needs_some():
    assert rules.follow_ups({'libvirt': {'cpu_mode': 'custom'}},
                            current(DEVSTACK)) == ({}, [])
    with pytest.raises(rules.Problem,
                       match='^cpu_mode = custom needs cpu_models: '
                             'nova-compute refuses to '
                             'start without it$') as err:
        rules.follow_ups({'libvirt': {'cpu_mode': 'custom'}},
                         current('[libvirt]\n'))
    assert err.value.option == 'cpu_models'


def test_models_with_another_mode_are_refused():
    with pytest.raises(rules.Problem,
                       match='refuses to start with cpu_models unless '
                             'cpu_mode is custom'):
        rules.follow_ups({'libvirt': {'cpu_mode': 'host-model',
                                      'cpu_models': 'Nehalem'}},
                         current('[libvirt]\n'))


def test_apply_writes_the_removal(tmp_path):
    path = tmp_path / 'nova.conf'
    path.write_text('[DEFAULT]\ndebug = True\n\n' + DEVSTACK)
    result = update.apply(str(path), {'libvirt': {
        'cpu_mode': 'host-passthrough'}})
    assert path.read_text() == ('[DEFAULT]\ndebug = True\n\n[libvirt]\n'
                                'cpu_mode = host-passthrough\n')
    assert result.notices[0].startswith('[libvirt] cpu_models = Nehalem')


def test_apply_refuses_custom_without_models(tmp_path):
    path = tmp_path / 'nova.conf'
    path.write_text('[libvirt]\nvirt_type = kvm\n')
    with pytest.raises(InputError,
                       match=r'\[libvirt\] cpu_models: cpu_mode = custom '
                             r'needs cpu_models') as err:
        update.apply(str(path), {'libvirt': {'cpu_mode': 'custom'}})
    assert 'cpu_mode = custom needs cpu_models' in err.value.line()
    assert path.read_text() == '[libvirt]\nvirt_type = kvm\n'
