"""devstack/settings, devstack/plugin.sh and kvmtune.devstack's logic.

The phases against a real cloud are in
tests/functional/test_devstack_plugin.py; here: the settings contract,
shell lint, and undo logic on real files in a temporary directory.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

from kvmtune.devstack import changes as changes_mod
from kvmtune.devstack import host
from kvmtune.devstack import inifile
from kvmtune.devstack import tempest
from kvmtune.errors import InputError
from tests import paths

ROOT = paths.REPO
SHIM = os.path.join(ROOT, 'tests', 'devstack_shim', 'functions')
SETTINGS = os.path.join(ROOT, 'devstack', 'settings')
PLUGIN = os.path.join(ROOT, 'devstack', 'plugin.sh')


def bash(script, env=None):
    full_env = {'PATH': os.environ['PATH'], 'SHIM_PYTHON': sys.executable,
                **(env or {})}
    result = subprocess.run(
        ['bash', '-c', f'set -eu\nsource {SHIM}\n{script}'],
        capture_output=True, text=True, env=full_env)
    assert result.returncode == 0, result.stderr
    return result.stdout


def settings(env=None, *names):
    out = bash(f'source {SETTINGS}\n' + '\n'.join(
        f'echo "{n}=${{{n}}}"' for n in names), env=env)
    return dict(line.split('=', 1) for line in out.splitlines())


@pytest.mark.skipif(not shutil.which('shellcheck'),
                    reason='shellcheck is not installed (apt-get install '
                           'shellcheck)')
def test_shell_files_are_shellcheck_clean():
    result = subprocess.run(['shellcheck', '-s', 'bash', PLUGIN, SETTINGS,
                             SHIM], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


def test_settings_defaults():
    got = settings({'DEST': '/opt/stack', 'ENABLED_SERVICES': 'n-cpu'},
                   'KVMTUNE_DIR', 'KVMTUNE_PROFILES', 'KVMTUNE_BASE_FLAVOR',
                   'KVMTUNE_ENABLE_NESTED', 'KVMTUNE_ALLOCATE_HUGEPAGES',
                   'KVMTUNE_TAG_HOST', 'KVMTUNE_BUILD_IMAGE',
                   'KVMTUNE_STATE_DIR', 'ENABLED_SERVICES',
                   'TEMPEST_PLUGINS')
    assert got == {
        'KVMTUNE_DIR': '/opt/stack/kvmtune',
        'KVMTUNE_PROFILES': 'pinned-hugepages-ept',
        'KVMTUNE_BASE_FLAVOR': 'm1.small',
        'KVMTUNE_ENABLE_NESTED': 'False',
        'KVMTUNE_ALLOCATE_HUGEPAGES': 'False',
        'KVMTUNE_TAG_HOST': 'True',
        'KVMTUNE_BUILD_IMAGE': 'False',
        'KVMTUNE_STATE_DIR': '/opt/stack/data/kvmtune',
        'ENABLED_SERVICES': 'n-cpu,kvmtune',
        'TEMPEST_PLUGINS': '/opt/stack/kvmtune',
    }


# devstack doc/source/plugins.rst: "Be careful to allow users to override
# global-variables ... FOO=${FOO:-default}".
def test_settings_keep_local_conf_values():
    got = settings({'KVMTUNE_PROFILES': 'cpu-pinning nested-host',
                    'KVMTUNE_ENABLE_NESTED': 'yes',
                    'KVMTUNE_TAG_HOST': 'no',
                    'KVMTUNE_HUGEPAGES_2M': '64',
                    'DATA_DIR': '/srv/data',
                    'TEMPEST_PLUGINS': '/opt/stack/other'},
                   'KVMTUNE_PROFILES', 'KVMTUNE_ENABLE_NESTED',
                   'KVMTUNE_TAG_HOST', 'KVMTUNE_HUGEPAGES_2M',
                   'KVMTUNE_STATE_DIR', 'TEMPEST_PLUGINS')
    assert got == {'KVMTUNE_PROFILES': 'cpu-pinning nested-host',
                   'KVMTUNE_ENABLE_NESTED': 'True',
                   'KVMTUNE_TAG_HOST': 'False',
                   'KVMTUNE_HUGEPAGES_2M': '64',
                   'KVMTUNE_STATE_DIR': '/srv/data/kvmtune',
                   'TEMPEST_PLUGINS': '/opt/stack/other /opt/stack/kvmtune'}


def test_settings_sourced_twice_add_the_tempest_plugin_once():
    out = bash(f'DEST=/d; source {SETTINGS}; source {SETTINGS};'
               ' echo "$TEMPEST_PLUGINS"')
    assert out.strip() == '/d/kvmtune'


def test_plugin_does_nothing_when_service_disabled(tmp_path):
    state = tmp_path / 'state'
    out = bash(f'source {SETTINGS}; ENABLED_SERVICES=n-cpu;'
               f' for p in install post-config extra test-config; do'
               f'   source {PLUGIN} stack $p; done;'
               f' source {PLUGIN} unstack; source {PLUGIN} clean',
               env={'KVMTUNE_STATE_DIR': str(state),
                    'NOVA_CONF': str(tmp_path / 'nova.conf')})
    assert out == ''
    assert not state.exists()


def test_test_config_needs_tempest_enabled(tmp_path):
    out = bash(f'source {SETTINGS}; source {PLUGIN} stack test-config',
               env={'KVMTUNE_STATE_DIR': str(tmp_path / 'state'),
                    'TEMPEST_CONFIG': str(tmp_path / 'tempest.conf')})
    assert out == ''
    assert not (tmp_path / 'tempest.conf').exists()


NOVA_CONF = """\
[DEFAULT]
# reserved_huge_pages = node:0,size:2048,count:1
debug = True

[compute]
cpu_shared_set = 0
"""


def test_inifile_get_put_keep_everything_else(tmp_path):
    path = str(tmp_path / 'nova.conf')
    with open(path, 'w') as handle:
        handle.write(NOVA_CONF)
    assert inifile.get(path, 'compute', 'cpu_shared_set') == ['0']
    assert inifile.get(path, 'DEFAULT', 'reserved_huge_pages') is None
    inifile.put(path, 'DEFAULT', 'reserved_huge_pages',
                ['node:0,size:2048,count:1', 'node:1,size:2048,count:1'])
    inifile.put(path, 'workarounds', 'disable_fallback_pcpu_query',
                ['true'])
    assert inifile.get(path, 'DEFAULT', 'reserved_huge_pages') == [
        'node:0,size:2048,count:1', 'node:1,size:2048,count:1']
    inifile.put(path, 'DEFAULT', 'reserved_huge_pages', None)
    inifile.put(path, 'workarounds', 'disable_fallback_pcpu_query', None)
    with open(path) as handle:
        text = handle.read()
    assert text == NOVA_CONF + '\n[workarounds]\n'


def test_nova_options_refuses_conflicting_profiles():
    plans = [{'profile': 'a', 'nova_conf': {'compute': {
                 'cpu_dedicated_set': '1'}}},
             {'profile': 'b', 'nova_conf': {'compute': {
                 'cpu_dedicated_set': '1-3'}}}]
    with pytest.raises(InputError) as err:
        host.nova_options(plans)
    assert 'profiles a and b' in err.value.line()
    assert '[compute] cpu_dedicated_set' in err.value.line()


def test_nova_options_merges_agreeing_profiles():
    plans = [{'profile': 'a', 'nova_conf': {
                 'compute': {'cpu_dedicated_set': '1'},
                 'DEFAULT': {'reserved_huge_pages': ['node:0,size:2MB,'
                                                     'count:1']}}},
             {'profile': 'b', 'nova_conf': {'compute': {
                 'cpu_dedicated_set': '1'}}}]
    assert host.nova_options(plans) == {
        ('compute', 'cpu_dedicated_set'): ['1'],
        ('DEFAULT', 'reserved_huge_pages'): ['node:0,size:2MB,count:1']}


def test_clean_undoes_files_and_sysctl_exactly(tmp_path):
    changes = changes_mod.Changes(str(tmp_path / 'state'))
    modprobe = tmp_path / 'modprobe.d'
    modprobe.mkdir()
    (modprobe / 'kvm.conf').write_text('options kvm ignore_msrs=1\n')
    proc = tmp_path / 'vm'
    proc.mkdir()
    (proc / 'nr_hugepages').write_text('0\n')
    host._write_file(changes, str(modprobe / 'kvm_intel.conf'),
                     'options kvm_intel nested=1\n')
    host._write_file(changes, str(modprobe / 'kvm.conf'),
                     'options kvm ignore_msrs=0\n')
    host._allocate_hugepages(changes, 8, str(tmp_path / 'sysctl.d'),
                             str(proc))
    assert (proc / 'nr_hugepages').read_text() == '8\n'
    assert 'vm.nr_hugepages = 8' in (
        tmp_path / 'sysctl.d' / host.HUGEPAGES_SYSCTL_FILE).read_text()
    recorded = json.loads((tmp_path / 'state' / 'changes.json').read_text())
    assert [f['before'] for f in recorded['files']] == [
        None, 'options kvm ignore_msrs=1\n', None]

    host.clean(changes)
    assert sorted(os.listdir(modprobe)) == ['kvm.conf']
    assert (modprobe / 'kvm.conf').read_text() == \
        'options kvm ignore_msrs=1\n'
    assert os.listdir(tmp_path / 'sysctl.d') == []
    assert (proc / 'nr_hugepages').read_text() == '0\n'
    assert not (tmp_path / 'state' / 'changes.json').exists()


def test_clean_leaves_an_option_changed_since(tmp_path, capsys):
    path = str(tmp_path / 'nova.conf')
    with open(path, 'w') as handle:
        handle.write(NOVA_CONF)
    changes = changes_mod.Changes(str(tmp_path / 'state'))
    changes.entries('nova_conf').extend([
        {'path': path, 'section': 'compute', 'option': 'cpu_shared_set',
         'before': None, 'after': ['1']},
        {'path': path, 'section': 'DEFAULT', 'option': 'debug',
         'before': ['False'], 'after': ['True']}])
    host.clean(changes)
    assert inifile.get(path, 'compute', 'cpu_shared_set') == ['0']
    assert inifile.get(path, 'DEFAULT', 'debug') == ['False']
    out = capsys.readouterr().out
    assert 'cpu_shared_set was changed after kvmtune set it' in out


def test_changes_file_with_wrong_schema_is_one_line_error(tmp_path):
    (tmp_path / 'changes.json').write_text('{"schema": 7}')
    with pytest.raises(InputError) as err:
        changes_mod.Changes(str(tmp_path))
    assert "schema 7 is not 1" in err.value.line()


def test_tempest_options_lines():
    lines = tempest.options({
        'flavors': {'nested-host': 'm1.small.nested-host',
                    'cpu-pinning': 'm1.small.cpu-pinning'},
        'traits_tagged': True, 'host_traits': ['CUSTOM_KVMTUNE_NESTED'],
        'benchmark_image': None})
    assert lines == [
        ('flavors', 'cpu-pinning:m1.small.cpu-pinning,'
                    'nested-host:m1.small.nested-host'),
        ('traits_tagged', 'True'),
        ('host_traits', 'CUSTOM_KVMTUNE_NESTED')]


def test_tempest_options_are_the_tempest_plugins_options():
    from kvmtune.tempest_plugin import config

    lines = tempest.options({
        'flavors': {'cpu-pinning': 'm1.small.cpu-pinning'},
        'traits_tagged': False, 'host_traits': [],
        'benchmark_image': 'kvmtune-bench'})
    opts = {opt.name: opt for opt in config.KvmtuneGroup}
    # Every line is one of the plugin's options, in that option's format.
    parsed = {name: opts[name].type(value) for name, value in lines}
    assert parsed == {'flavors': {'cpu-pinning': 'm1.small.cpu-pinning'},
                      'traits_tagged': False, 'host_traits': [],
                      'benchmark_image': 'kvmtune-bench'}


def test_drop_section_if_empty_restores_the_file(tmp_path):
    path = str(tmp_path / 'nova.conf')
    with open(path, 'w') as handle:
        handle.write(NOVA_CONF)
    ended_blank = inifile.ends_blank(path)
    inifile.put(path, 'libvirt', 'cpu_mode', ['host-passthrough'])
    inifile.put(path, 'workarounds', 'x', ['1'])
    assert not inifile.drop_section_if_empty(path, 'libvirt', ended_blank)
    inifile.put(path, 'libvirt', 'cpu_mode', None)
    inifile.put(path, 'workarounds', 'x', None)
    assert inifile.drop_section_if_empty(path, 'libvirt', ended_blank)
    assert inifile.drop_section_if_empty(path, 'workarounds', ended_blank)
    with open(path) as handle:
        assert handle.read() == NOVA_CONF
    assert not inifile.drop_section_if_empty(path, 'compute', ended_blank)


def test_drop_section_keeps_a_blank_last_line_that_was_there(tmp_path):
    path = str(tmp_path / 'nova.conf')
    with open(path, 'w') as handle:
        handle.write(NOVA_CONF + '\n')
    inifile.put(path, 'libvirt', 'cpu_mode', ['host-passthrough'])
    inifile.put(path, 'libvirt', 'cpu_mode', None)
    assert inifile.drop_section_if_empty(path, 'libvirt', ended_blank=True)
    with open(path) as handle:
        assert handle.read() == NOVA_CONF + '\n'


def test_tempest_plugin_entry_point_finds_tests_and_options():
    pytest.importorskip('tempest', reason='tempest is not installed')
    from oslo_config import cfg

    from kvmtune.tempest_plugin import plugin

    tempest_plugin = plugin.KvmtuneTempestPlugin()
    test_dir, top = tempest_plugin.load_tests()
    assert os.path.isdir(test_dir)
    assert test_dir == os.path.join(top, 'kvmtune', 'tempest_plugin',
                                    'tests')
    conf = cfg.ConfigOpts()
    tempest_plugin.register_opts(conf)
    conf([])
    assert conf.kvmtune.flavors == {}
    assert conf.kvmtune.traits_tagged is False
    [(group, opts)] = tempest_plugin.get_opt_lists()
    assert group == 'kvmtune'
    assert {o.name for o in opts} >= {'flavors', 'traits_tagged',
                                      'host_traits', 'benchmark_image'}
