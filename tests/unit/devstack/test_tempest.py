"""kvmtune.devstack.tempest: what the extra phase found, kept in
found.json, turned into the [kvmtune] options of tempest.conf in the
formats the Tempest plugin reads (kvmtune/tempest_plugin/config.py)."""

import pytest

from kvmtune.devstack import tempest
from kvmtune.errors import InputError

FOUND = {'flavors': {'pinned': 'm1.small.pinned',
                     'cpu-pinning': 'm1.small.cpu-pinning'},
         'traits_tagged': True,
         'host_traits': ['CUSTOM_KVMTUNE_EPT', 'CUSTOM_KVMTUNE_NESTED'],
         'benchmark_image': 'kvmtune-bench'}


def test_options_in_the_plugins_formats():
    assert tempest.options(FOUND) == [
        ('flavors', 'cpu-pinning:m1.small.cpu-pinning,'
                    'pinned:m1.small.pinned'),
        ('traits_tagged', 'True'),
        ('host_traits', 'CUSTOM_KVMTUNE_EPT,CUSTOM_KVMTUNE_NESTED'),
        ('benchmark_image', 'kvmtune-bench')]


def test_without_an_image_or_traits():
    found = dict(FOUND, benchmark_image=None, traits_tagged=False,
                 host_traits=[], flavors={})
    assert tempest.options(found) == [
        ('flavors', ''), ('traits_tagged', 'False'), ('host_traits', '')]


def test_found_saved_loaded_and_removed(tmp_path):
    state = tmp_path / 'state'
    tempest.save_found(str(state), FOUND)
    assert tempest.load_found(str(state)) == FOUND
    tempest.remove_found(str(state))
    assert not (state / tempest.FOUND_FILE).exists()
    tempest.remove_found(str(state))    # twice: nothing to remove


def test_test_config_before_extra_is_one_line(tmp_path):
    with pytest.raises(InputError) as err:
        tempest.load_found(str(tmp_path))
    assert err.value.line() == (
        f'{tmp_path}/found.json: does not exist (fix: run the stack extra '
        'phase first)')
