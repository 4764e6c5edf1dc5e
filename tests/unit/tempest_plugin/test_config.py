"""kvmtune.tempest_plugin.config: the [kvmtune] group of tempest.conf,
read by oslo.config as Tempest reads it, from what the DevStack plugin's
test-config phase writes (kvmtune.devstack.tempest)."""

from oslo_config import cfg
import pytest

from kvmtune.devstack import tempest as devstack_tempest
from kvmtune.tempest_plugin import config


def load(tmp_path, text):
    path = tmp_path / 'tempest.conf'
    path.write_text(text)
    conf = cfg.ConfigOpts()
    conf.register_group(config.kvmtune_group)
    conf.register_opts(config.KvmtuneGroup, group=config.kvmtune_group)
    conf(args=[], default_config_files=[str(path)])
    return conf.kvmtune


def test_defaults(tmp_path):
    group = load(tmp_path, '')
    assert group.flavors == {}
    assert group.facts_file is None
    assert group.traits_tagged is False and group.host_traits == []
    assert group.benchmark_image is None
    assert (group.benchmark_workload, group.benchmark_runtime,
            group.benchmark_timeout) == ('fio-randread-4k', 5, 300)


def test_what_devstack_writes_is_what_the_plugin_reads(tmp_path):
    found = {'flavors': {'pinned-hugepages-ept': 'm1.small.pinned-hugepages-'
                         'ept', 'cpu-pinning': 'm1.small.cpu-pinning'},
             'traits_tagged': True,
             'host_traits': ['CUSTOM_KVMTUNE_EPT', 'CUSTOM_KVMTUNE_NESTED'],
             'benchmark_image': 'kvmtune-bench'}
    text = '[kvmtune]\n' + ''.join(
        f'{option} = {value}\n'
        for option, value in devstack_tempest.options(found))
    group = load(tmp_path, text)
    assert group.flavors == found['flavors']
    assert group.traits_tagged is True
    assert group.host_traits == found['host_traits']
    assert group.benchmark_image == 'kvmtune-bench'


def test_nothing_tagged_and_no_flavor(tmp_path):
    found = {'flavors': {}, 'traits_tagged': False, 'host_traits': []}
    text = '[kvmtune]\n' + ''.join(
        f'{option} = {value}\n'
        for option, value in devstack_tempest.options(found))
    group = load(tmp_path, text)
    assert group.flavors == {} and group.host_traits == []
    assert group.traits_tagged is False


@pytest.mark.parametrize('option, value', [('benchmark_runtime', '0'),
                                           ('benchmark_timeout', '29')])
def test_times_below_their_minimum_are_refused(tmp_path, option, value):
    group = load(tmp_path, f'[kvmtune]\n{option} = {value}\n')
    with pytest.raises(cfg.ConfigFileValueError, match=option):
        getattr(group, option)


def test_list_opts_is_the_group():
    assert config.list_opts() == [(config.kvmtune_group,
                                   config.KvmtuneGroup)]
    assert config.kvmtune_group.name == 'kvmtune'
