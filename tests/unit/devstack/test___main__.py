"""``python -m kvmtune.devstack PHASE``: the steps devstack/plugin.sh
runs, on real files in a temporary directory: post-config then clean
gives nova.conf back as it was, test-config writes and clean takes back
[kvmtune] of tempest.conf. The host's facts are those of a captured Intel
host (facts.resolve answers with them), so the plans do not depend on
the machine running the tests. The phases that talk to a cloud (extra,
unstack) run in tests/functional/test_devstack_plugin.py."""

import os
import subprocess
import sys

import pytest

from kvmtune.devstack import __main__ as phases
from kvmtune.devstack import postconfig
from kvmtune.devstack import tempest
from kvmtune import facts as host_facts
from kvmtune.tuning.novaconf import inifile
from tests import paths

INTEL = os.path.join(paths.HOSTS, 'intel-2s-smt-ept-1g')
NOVA_CONF = """\
[DEFAULT]
debug = True

[libvirt]
virt_type = qemu
cpu_mode = custom
cpu_models = Nehalem
"""


@pytest.fixture
def intel(monkeypatch):
    facts = host_facts.gather(INTEL)
    monkeypatch.setattr(host_facts, 'resolve', lambda **kwargs: facts)


@pytest.fixture
def files(tmp_path):
    nova = tmp_path / 'nova.conf'
    nova.write_text(NOVA_CONF)
    return tmp_path, nova, str(tmp_path / 'state')


def test_post_config_then_clean_gives_nova_conf_back(intel, files,
                                                     capsys):
    tmp_path, nova, state = files
    assert phases.main(['--state-dir', state, 'post-config', '--nova-conf',
                        str(nova), '--profiles', 'cpu-pinning']) == 0
    ini = inifile.IniFile(nova.read_text())
    assert ini.get('compute', 'cpu_dedicated_set')
    assert ini.get('DEFAULT', 'debug') == 'True'
    assert os.path.exists(os.path.join(state, 'changes.json'))
    assert 'isolcpus' in capsys.readouterr().out

    assert phases.main(['--state-dir', state, 'clean']) == 0
    assert nova.read_text() == NOVA_CONF
    # the backup is gone and nothing is left to undo
    assert sorted(os.listdir(tmp_path)) == ['nova.conf', 'state']
    assert os.listdir(state) == []


def test_test_config_then_clean(files, capsys):
    tmp_path, nova, state = files
    conf = tmp_path / 'tempest.conf'
    conf.write_text('[compute]\nmin_compute_nodes = 1\n')
    tempest.save_found(state, {'flavors': {'cpu-pinning': 'f.cpu'},
                               'traits_tagged': False, 'host_traits': []})
    assert phases.main(['--state-dir', state, 'test-config',
                        '--tempest-config', str(conf)]) == 0
    ini = inifile.IniFile(conf.read_text())
    assert ini.get('kvmtune', 'flavors') == 'cpu-pinning:f.cpu'
    assert ini.get('kvmtune', 'traits_tagged') == 'False'
    assert phases.main(['--state-dir', state, 'clean']) == 0
    assert conf.read_text() == '[compute]\nmin_compute_nodes = 1\n'
    assert not os.path.exists(os.path.join(state, tempest.FOUND_FILE))


def test_a_compute_only_node_without_tagging_does_nothing(files, capsys):
    _, _, state = files
    assert phases.main(['--state-dir', state, 'extra', '--os-cloud',
                        'never-reached', '--profiles', 'cpu-pinning',
                        '--base-flavor', 'm1.small', '--compute-only']) == 0
    assert 'compute-only node' in capsys.readouterr().out
    assert not os.path.exists(state)


@pytest.mark.parametrize('argv, words', [
    (['post-config', '--nova-conf', 'NOVA', '--profiles', 'cpu-pinning',
      '--hugepages', '0:2M'], 'KVMTUNE_HUGEPAGES: '),
    (['post-config', '--nova-conf', 'MISSING', '--profiles',
      'cpu-pinning'], 'does not exist'),
    (['test-config', '--tempest-config', 'NOVA'], 'found.json: does not '
                                                  'exist'),
])
def test_errors_are_one_line_with_the_exit_status(intel, files, capsys,
                                                  argv, words):
    tmp_path, nova, state = files
    argv = [str(nova) if a == 'NOVA' else
            str(tmp_path / 'missing.conf') if a == 'MISSING' else a
            for a in argv]
    assert phases.main(['--state-dir', state, *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith('kvmtune: error: ') and err.count('\n') == 1
    assert words in err
    assert nova.read_text() == NOVA_CONF


def test_hugepages_items_and_plan(intel):
    plans = postconfig.build_plans(['hugepages'])
    given = phases._pools(' 0:2M:256  1:1G:2 ', plans)
    assert [(p.node, p.size_kb, p.count) for p in given] == [
        (0, 2048, 256), (1, 1048576, 2)]
    assert phases._pools(None, plans) is None
    assert phases._pools('plan', plans) == postconfig.plan_pools(plans)
    assert phases._pools('plan', plans)


def test_run_as_a_module():
    proc = subprocess.run([sys.executable, '-m', 'kvmtune.devstack',
                           '--help'], capture_output=True, text=True,
                          cwd=paths.REPO)
    assert proc.returncode == 0
    for phase in ('post-config', 'extra', 'test-config', 'unstack',
                  'clean'):
        assert phase in proc.stdout
