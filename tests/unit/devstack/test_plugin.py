"""devstack/settings and devstack/plugin.sh, on tests/devstack_shim.

The phases under the real DevStack scripts are in
tests/functional/test_devstack_real.py, against the test cloud in
tests/functional/test_devstack_plugin.py; here: the settings contract,
shell lint, and how the plugin finds its Python.
"""

import os
import shutil
import subprocess
import sys

import pytest

from tests import paths

ROOT = paths.REPO
SHIM = os.path.join(ROOT, 'tests', 'devstack_shim', 'functions')
SETTINGS = os.path.join(ROOT, 'devstack', 'settings')
PLUGIN = os.path.join(ROOT, 'devstack', 'plugin.sh')


def bash(script, env=None):
    full_env = {'PATH': os.environ['PATH'], 'SHIM_PYTHON': sys.executable,
                **(env or {})}
    # stack.sh's options: errexit, and nounset only with NOUNSET set.
    result = subprocess.run(
        ['bash', '-c', f'set -o errexit\nsource {SHIM}\n{script}'],
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
                   'KVMTUNE_HUGEPAGES', 'KVMTUNE_TAG_HOST',
                   'KVMTUNE_BUILD_IMAGE',
                   'KVMTUNE_STATE_DIR', 'ENABLED_SERVICES',
                   'TEMPEST_PLUGINS')
    assert got == {
        'KVMTUNE_DIR': '/opt/stack/kvmtune',
        'KVMTUNE_PROFILES': 'pinned-hugepages-ept',
        'KVMTUNE_BASE_FLAVOR': 'm1.small',
        'KVMTUNE_ENABLE_NESTED': 'False',
        'KVMTUNE_ALLOCATE_HUGEPAGES': 'False',
        'KVMTUNE_HUGEPAGES': 'plan',
        # no n-api here: a compute-only node tags itself only if asked
        'KVMTUNE_TAG_HOST': 'False',
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
                    'KVMTUNE_HUGEPAGES': '0:2M:64',
                    'DATA_DIR': '/srv/data',
                    'TEMPEST_PLUGINS': '/opt/stack/other'},
                   'KVMTUNE_PROFILES', 'KVMTUNE_ENABLE_NESTED',
                   'KVMTUNE_TAG_HOST', 'KVMTUNE_HUGEPAGES',
                   'KVMTUNE_STATE_DIR', 'TEMPEST_PLUGINS')
    assert got == {'KVMTUNE_PROFILES': 'cpu-pinning nested-host',
                   'KVMTUNE_ENABLE_NESTED': 'True',
                   'KVMTUNE_TAG_HOST': 'False',
                   'KVMTUNE_HUGEPAGES': '0:2M:64',
                   'KVMTUNE_STATE_DIR': '/srv/data/kvmtune',
                   'TEMPEST_PLUGINS': '/opt/stack/other /opt/stack/kvmtune'}


def test_settings_tag_the_host_by_default_on_the_controller():
    got = settings({'ENABLED_SERVICES': 'n-api,n-sch,n-cpu'},
                   'KVMTUNE_TAG_HOST')
    assert got == {'KVMTUNE_TAG_HOST': 'True'}


def test_settings_define_the_plugin():
    out = bash('function define_plugin { echo "define_plugin $*"; }\n'
               f'source {SETTINGS}')
    assert out.splitlines() == ['define_plugin kvmtune']


def python_of_plugin(env):
    """What plugin.sh's _kvmtune_python says in that environment."""
    return bash(f'source {SETTINGS}; source {PLUGIN} none; '
                '_kvmtune_python', env=env).strip()


# DevStack inc/python: setup_devstack_virtualenv exports
# PYTHON=$DEVSTACK_VENV/bin/python3 (GLOBAL_VENV=True, stackrc's default),
# install_python PYTHON=python$PYTHON3_VERSION; only stack.sh runs them.
def test_python_is_stack_sh_s_when_it_set_one():
    assert python_of_plugin({'PYTHON': '/x/bin/python3',
                             'DEVSTACK_VENV': '/y'}) == '/x/bin/python3'


def test_python_without_PYTHON_is_the_global_venv_s(tmp_path):
    (tmp_path / 'bin').mkdir()
    os.symlink(sys.executable, tmp_path / 'bin' / 'python3')
    assert python_of_plugin({'DEVSTACK_VENV': str(tmp_path),
                             'GLOBAL_VENV': 'True'}) == \
        f'{tmp_path}/bin/python3'
    assert python_of_plugin({'DEVSTACK_VENV': str(tmp_path),
                             'GLOBAL_VENV': 'False',
                             'PYTHON3_VERSION': '3.11'}) == 'python3.11'
    assert python_of_plugin({'DEVSTACK_VENV': str(tmp_path / 'none'),
                             'PYTHON3_VERSION': '3.12'}) == 'python3.12'


def test_unstack_and_clean_run_without_PYTHON(tmp_path):
    # unstack.sh and clean.sh do not have $PYTHON: the plugin must still
    # run (here with nothing recorded, so nothing to undo).
    (tmp_path / 'bin').mkdir()
    os.symlink(sys.executable, tmp_path / 'bin' / 'python3')
    env = {'DEVSTACK_VENV': str(tmp_path), 'GLOBAL_VENV': 'True',
           'KVMTUNE_STATE_DIR': str(tmp_path / 'state'),
           'NOVA_CPU_CONF': str(tmp_path / 'nova-cpu.conf')}
    out = bash(f'source {SETTINGS}; source {PLUGIN} unstack; '
               f'source {PLUGIN} clean', env=env)
    assert 'no flavor, trait or image of the plugin to remove' in out
    assert not (tmp_path / 'state').exists()


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
