"""``kvmtune cloud`` as a user runs it, without a cloud: status when none
is up, env, and a bad [testcloud] option (one line, exit 2)."""

import subprocess
import sys

import pytest


def _kvmtune(*argv, env_dir):
    return subprocess.run(
        [sys.executable, '-m', 'kvmtune.cli', *argv], capture_output=True,
        text=True, timeout=120,
        env={'PATH': '/usr/bin:/bin', 'KVMTUNE_CLOUD_DIR': str(env_dir)})


def test_status_without_a_cloud_exits_1_and_says_how_to_start(tmp_path):
    done = _kvmtune('cloud', 'status', env_dir=tmp_path)
    assert done.returncode == 1
    assert done.stdout.strip() == (f'no cloud up in {tmp_path} (start one: '
                                   'kvmtune cloud up)')


def test_env_prints_shell_exports(tmp_path):
    done = _kvmtune('cloud', 'env', env_dir=tmp_path)
    assert done.returncode == 0
    exports = dict(line[len('export '):].split('=', 1)
                   for line in done.stdout.splitlines())
    assert exports['KVMTUNE_CLOUD_DIR'] == str(tmp_path)
    assert exports['OS_CLIENT_CONFIG_FILE'] == str(tmp_path / 'clouds.yaml')
    assert exports['OS_CLOUD'] == 'kvmtune-admin'
    # eval-able: the shell gives back what was exported
    shell = subprocess.run(['bash', '-c', done.stdout + 'echo "$KVMTUNE_'
                            'NOVA_CONF|$KVMTUNE_CLOUD_MODE|"'],
                           capture_output=True, text=True, check=True)
    assert shell.stdout == f'{tmp_path}/etc/nova/nova-compute.conf||\n'


def test_bad_port_option_is_one_line_exit_2(tmp_path):
    conf = tmp_path / 'kvmtune.conf'
    conf.write_text('[testcloud]\nplacement_port = 8774\n')
    done = _kvmtune('--config-file', str(conf), 'cloud', 'status',
                    env_dir=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ''
    assert len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith('kvmtune: error: kvmtune.conf: '
                                  '[testcloud] *_port: two services on one '
                                  'port')


def test_bad_computes_is_one_line_exit_2(tmp_path):
    for argv, said in (
            (('--computes', '0'), '--computes 0 out of range'),
            (('--computes', 'three'), "argument --computes: not a number"),
            (('--computes', '2', '--compute-facts', str(tmp_path / 'x')),
             'no such facts file')):
        done = _kvmtune('cloud', 'up', *argv, env_dir=tmp_path)
        assert done.returncode == 2, argv
        assert said in done.stderr, (argv, done.stderr)
        assert 'Traceback' not in done.stderr
        assert not (tmp_path / 'run').exists()


def test_restart_an_unknown_compute_without_a_cloud(tmp_path):
    done = _kvmtune('cloud', 'restart-compute', '--host', 'kvmtune-compute-2',
                    env_dir=tmp_path)
    assert done.returncode == 2
    assert 'no cloud is up' in done.stderr


def test_status_as_json_without_a_cloud(tmp_path):
    import json

    done = _kvmtune('cloud', 'status', '-f', 'json', env_dir=tmp_path)
    assert done.returncode == 1
    assert json.loads(done.stdout) == {'up': False, 'root': str(tmp_path)}


def test_status_as_json_and_yaml_of_a_running_cloud(monkeypatch, capsys):
    # The shape api.status() gives (kvmtune/testcloud/api.py), ports as
    # (port, listening) pairs: printed as data, pairs as lists.
    import json

    import yaml

    from kvmtune import cli
    from kvmtune.testcloud import api

    found = {'root': '/x', 'mode': 'fake', 'network': 'stub',
             'virt_type': None, 'up_seconds': 41.5,
             'processes': [{'pid': 7, 'name': 'keystone', 'rss_kb': 9,
                            'pss_kb': 8, 'cmdline': 'uwsgi'}],
             'rss_kb': 9, 'pss_kb': 8, 'ports': {'keystone': (5000, True)},
             'not_running': ['nova-compute'], 'computes': [],
             'clouds_yaml': '/x/clouds.yaml', 'stop': 'kvmtune cloud down'}
    monkeypatch.setattr(api, 'status', lambda layout=None: found)
    # a stopped service is "differs" (1), not an error (2)
    assert cli.main(['cloud', 'status', '-f', 'json']) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc['up'] is True and doc['ports'] == {'keystone': [5000, True]}
    assert doc['not_running'] == ['nova-compute']
    assert cli.main(['cloud', 'status', '-f', 'yaml']) == 1
    assert yaml.safe_load(capsys.readouterr().out)['up_seconds'] == 41.5


@pytest.mark.parametrize('not_running, code', [([], 0),
                                               (['nova-compute'], 1)])
def test_status_table_exit_code_follows_the_convention(monkeypatch, capsys,
                                                       not_running, code):
    """0 every service runs; 1 ("differs") a service stopped, never 2,
    the error code (doc/source/reference/cli.rst "Exit status")."""
    from kvmtune import cli
    from kvmtune.testcloud import api

    found = {'root': '/x', 'mode': 'fake', 'network': 'stub',
             'virt_type': None, 'up_seconds': None, 'processes': [],
             'rss_kb': 0, 'pss_kb': 0, 'ports': {'keystone': (5000, True)},
             'not_running': not_running, 'computes': [],
             'clouds_yaml': '/x/clouds.yaml', 'stop': 'kvmtune cloud down'}
    monkeypatch.setattr(api, 'status', lambda layout=None: found)
    assert cli.main(['cloud', 'status']) == code
    out = capsys.readouterr().out
    assert ('NOT RUNNING: nova-compute' in out) == bool(not_running)
