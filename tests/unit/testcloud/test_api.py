"""The test cloud's library: where it lives (kvmtune.conf [testcloud],
read by oslo.config, the environment first) and the refusals it makes
before it touches anything. No cloud is started here."""

import os

import pytest
import re

from kvmtune.errors import CloudError
from kvmtune.errors import InputError
from kvmtune.testcloud import api
from kvmtune.testcloud import config
from kvmtune.testcloud import novacompute


@pytest.fixture
def no_env(monkeypatch):
    monkeypatch.delenv('KVMTUNE_CLOUD_DIR', raising=False)
    monkeypatch.delenv('KVMTUNE_CLOUD_VENV', raising=False)


def _conf(tmp_path, text):
    path = tmp_path / 'kvmtune.conf'
    path.write_text(text)
    return [str(path)]


def test_layout_from_kvmtune_conf(tmp_path, no_env):
    files = _conf(tmp_path, '[testcloud]\nvenv = /srv/cloud-venv\n'
                            'state_dir = /srv/cloud\nkeystone_port = 15000\n'
                            'network_port = 19696\n')
    lay = api.layout(files)
    assert lay.root == '/srv/cloud'
    assert lay.python == '/srv/cloud-venv/bin/python3'
    assert lay.url('keystone', '/v3') == 'http://127.0.0.1:15000/v3'
    assert lay.ports == dict(config.DEFAULT_PORTS, keystone=15000,
                             network=19696)


def test_environment_takes_precedence_over_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv('KVMTUNE_CLOUD_DIR', str(tmp_path / 'state'))
    monkeypatch.setenv('KVMTUNE_CLOUD_VENV', str(tmp_path / 'venv'))
    lay = api.layout(_conf(tmp_path, '[testcloud]\nstate_dir = /srv/x\n'
                                     'venv = /srv/y\n'))
    assert lay.root == str(tmp_path / 'state')
    assert lay.venv == str(tmp_path / 'venv')
    assert api.env(lay)['KVMTUNE_CLOUD_DIR'] == str(tmp_path / 'state')


def test_a_second_cloud_by_environment_alone(tmp_path, monkeypatch):
    # what tools/run-fleet sets for its cloud beside the default one:
    # the ports through oslo.config's environment source
    # (OS_<GROUP>__<OPTION>), the names through the state directory
    monkeypatch.setenv('KVMTUNE_CLOUD_DIR', str(tmp_path / 'fleet'))
    monkeypatch.setenv('OS_TESTCLOUD__KEYSTONE_PORT', '15000')
    monkeypatch.setenv('OS_TESTCLOUD__NOVA_API_PORT', '18774')
    lay = api.layout(_conf(tmp_path, '[testcloud]\n'))
    assert lay.ports == dict(config.DEFAULT_PORTS, keystone=15000,
                             **{'nova-api': 18774})
    env = api.env(lay)
    assert env['KVMTUNE_CLOUD_LOCK'] == lay.lock != config.DEFAULT_LOCK
    assert lay.databases['nova'] != 'nova'


def test_a_running_cloud_keeps_the_ports_it_was_started_with(tmp_path):
    from kvmtune.testcloud import procs

    started = config.Layout(str(tmp_path / 'fleet'), ports={
        'keystone': 15000, 'placement': 18778})
    os.makedirs(started.run)
    procs.save_state(started, {'mode': 'fake', 'ports': started.ports})
    # a fleet host's session: the state directory, no port options
    lay = api._as_started(config.Layout(started.root))
    assert lay.ports == started.ports != config.DEFAULT_PORTS
    assert lay.url('placement') == 'http://127.0.0.1:18778'
    # no cloud there: the options' ports
    empty = config.Layout(str(tmp_path / 'none'))
    assert api._as_started(empty) is empty


def test_two_services_on_one_port_is_refused(tmp_path, no_env):
    files = _conf(tmp_path, '[testcloud]\nglance_port = 5000\n')
    with pytest.raises(InputError,
                       match=r'\[testcloud\] \*_port: two services '
                             r'on one port') as exc:
        api.layout(files)
    assert '[testcloud] *_port' in exc.value.line()
    assert 'glance_port=5000' in exc.value.line()


def test_port_out_of_range_is_oslo_config_error(tmp_path, no_env):
    with pytest.raises(InputError,
                       match=r'\[testcloud\]: Value for option '
                             r'nova_api_port') as exc:
        api.layout(_conf(tmp_path, '[testcloud]\nnova_api_port = 70000\n'))
    assert 'nova_api_port' in exc.value.line()


def test_relative_state_dir_is_refused(tmp_path, no_env):
    with pytest.raises(InputError,
                       match=r"\[testcloud\] state_dir: not an absolute path: "
                             r"'cloud'") as exc:
        api.layout(_conf(tmp_path, '[testcloud]\nstate_dir = cloud\n'))
    assert 'state_dir' in exc.value.line()


def test_no_cloud_up_status_is_none_and_env_has_no_secret(tmp_path):
    lay = config.Layout(str(tmp_path / 'state'), str(tmp_path / 'venv'))
    assert api.status(lay) is None
    env = api.env(lay)
    assert env['OS_CLIENT_CONFIG_FILE'] == lay.clouds_yaml
    assert env['KVMTUNE_NOVA_CONF'] == lay.compute_conf
    assert env['KVMTUNE_CLOUD_MODE'] == ''
    assert not any('PASSWORD' in name for name in env)


@pytest.mark.parametrize('kwargs, key', [
    ({'compute': 'xen'}, 'compute'),
    ({'compute': 'fake', 'network': 'ovn'}, 'network'),
    ({'compute': 'libvirt', 'virt_type': 'hvf'}, 'virt_type'),
])
def test_up_refuses_bad_arguments_before_touching_anything(tmp_path, kwargs,
                                                           key):
    lay = config.Layout(str(tmp_path / 'state'), str(tmp_path / 'venv'))
    with pytest.raises(InputError, match=f'^{key}: unknown ') as exc:
        api.up(layout=lay, **kwargs)
    assert exc.value.key == key
    assert not os.path.exists(lay.root)


def test_up_refuses_a_missing_facts_file(tmp_path):
    lay = config.Layout(str(tmp_path / 'state'), str(tmp_path / 'venv'))
    with pytest.raises(InputError,
                       match=r'none\.json: no such facts file') as exc:
        api.up(facts=str(tmp_path / 'none.json'), layout=lay)
    assert exc.value.source == str(tmp_path / 'none.json')
    assert not os.path.exists(lay.root)


def test_restart_compute_without_a_cloud_says_so(tmp_path):
    lay = config.Layout(str(tmp_path / 'state'), str(tmp_path / 'venv'))
    with pytest.raises(CloudError,
                       match=r'no cloud is up \(fix: run: kvmtune '
                             r'cloud up\)') as exc:
        api.restart_compute(lay)
    assert 'kvmtune cloud up' in exc.value.line()


@pytest.mark.parametrize('computes', [0, -1,
                                      novacompute.MAX_COMPUTES + 1,
                                      True, '3'])
def test_computes_out_of_range_is_refused(tmp_path, computes):
    lay = config.Layout(str(tmp_path / 'state'), str(tmp_path / 'venv'))
    with pytest.raises(InputError,
                       match=r'^computes: --computes .* out of range \(fix: '
                             r'give 1 to 8') as exc:
        api.up(layout=lay, computes=computes)
    assert exc.value.key == 'computes'
    assert not os.path.exists(lay.root)


@pytest.mark.parametrize('text, problem', [
    (None, 'no such facts file'),
    ('{"schema": 1', 'not JSON'),
    ('{}', 'schema: missing'),
])
def test_bad_compute_facts_are_one_line_before_anything(tmp_path, text,
                                                        problem):
    lay = config.Layout(str(tmp_path / 'state'), str(tmp_path / 'venv'))
    path = tmp_path / 'facts.json'
    if text is not None:
        path.write_text(text)
    with pytest.raises(InputError, match=re.escape(problem)) as exc:
        api.up(layout=lay, computes=2, compute_facts=[str(path)])
    assert exc.value.source == str(path)
    assert problem in exc.value.line()
    assert '\n' not in exc.value.line()
    assert not os.path.exists(lay.root)


def test_more_compute_facts_than_extra_computes_is_refused(tmp_path):
    lay = config.Layout(str(tmp_path / 'state'), str(tmp_path / 'venv'))
    with pytest.raises(InputError,
                       match='compute_facts: 2 --compute-facts files for 1 '
                             'extra computes') as exc:
        api.up(layout=lay, computes=2, compute_facts=['a', 'b'])
    assert exc.value.key == 'compute_facts'
