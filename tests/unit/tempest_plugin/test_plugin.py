"""kvmtune.tempest_plugin.plugin: Tempest's entry point for kvmtune, found
as Tempest finds plugins (stevedore, tempest.test_plugins) and loaded the
way Tempest loads one."""

import os

from oslo_config import cfg
from stevedore import extension

from kvmtune.tempest_plugin import config as kvmtune_config
from kvmtune.tempest_plugin import plugin
from tests import paths


def test_tempest_finds_the_plugin_by_its_entry_point():
    found = extension.ExtensionManager('tempest.test_plugins',
                                       invoke_on_load=False)
    assert found['kvmtune'].plugin is plugin.KvmtuneTempestPlugin


def test_load_tests_names_the_tests_and_the_top_dir():
    test_dir, top = plugin.KvmtuneTempestPlugin().load_tests()
    assert os.path.samefile(top, paths.REPO)
    assert os.path.samefile(test_dir, os.path.join(
        paths.REPO, 'kvmtune', 'tempest_plugin', 'tests'))
    assert os.path.isfile(os.path.join(test_dir, 'api',
                                       'test_tuned_flavors.py'))


def test_register_opts_adds_the_kvmtune_group(tmp_path):
    conf = cfg.ConfigOpts()
    plugin.KvmtuneTempestPlugin().register_opts(conf)
    path = tmp_path / 'tempest.conf'
    path.write_text('[kvmtune]\nflavors = a:m1.a\n')
    conf(args=[], default_config_files=[str(path)])
    assert conf.kvmtune.flavors == {'a': 'm1.a'}


def test_opt_lists_for_the_sample_config():
    assert plugin.KvmtuneTempestPlugin().get_opt_lists() == [
        ('kvmtune', kvmtune_config.KvmtuneGroup)]
