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


def test_up_refuses_a_port_something_listens_on(tmp_path):
    import socket

    with socket.socket() as listener:
        listener.bind(('127.0.0.1', 0))
        listener.listen()
        port = listener.getsockname()[1]
        lay = config.Layout(str(tmp_path / 'state'), str(tmp_path / 'venv'),
                            {'glance': port})
        with pytest.raises(CloudError,
                           match=r'\[testcloud\] \*_port: port in use on '
                                 r'127\.0\.0\.1: glance ') as exc:
            api.up(layout=lay)
    assert f'port in use on 127.0.0.1: glance {port}' in exc.value.line()
    assert not os.path.exists(lay.root)


# -- computes 2..N -------------------------------------------------------

def test_extra_computes_get_the_shipped_shapes_in_order():
    extras = api._extra_facts(3, None)
    assert [(i, os.path.basename(p)) for i, p, _ in extras] == [
        (2, 'intel-2s-smt-ept-1g.json'), (3, 'amd-epyc-npt.json')]
    assert api._extra_facts(1, None) == []


def test_given_compute_facts_come_first(tmp_path):
    import shutil

    from kvmtune.testcloud import services

    mine = tmp_path / 'mine.json'
    shutil.copy(os.path.join(services.FILES, 'hosts',
                             '32intel64-2p8co2t.json'), mine)
    extras = api._extra_facts(3, [str(mine)])
    assert [(i, p) for i, p, _ in extras] == [
        (2, str(mine)),
        (3, config.default_extra_facts(3, services.FILES))]


@pytest.mark.parametrize('computes', [0, -1, config.MAX_COMPUTES + 1,
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


def test_prepared_extra_computes_are_in_the_state(tmp_path):
    lay = config.Layout(str(tmp_path / 'state'), str(tmp_path / 'venv'))
    entries = api._prepare_extra_computes(lay, api._extra_facts(3, None))
    assert [e['host'] for e in entries] == ['kvmtune-compute-2',
                                            'kvmtune-compute-3']
    second = entries[0]
    assert second['service'] == 'nova-compute-2'
    assert second['conf'] == lay.extra_compute_conf(2)
    assert second['cpu_shared_set'] == '0,40'
    assert second['cpu_dedicated_set'] == '1-39,41-79'
    assert os.stat(second['conf']).st_mode & 0o777 == 0o600
    assert os.path.isdir(os.path.join(second['state_path'], 'lock'))
    import json
    with open(second['facts']) as f:
        assert len(json.load(f)['numa']['nodes']) == 2
    assert lay.compute_conf not in (e['conf'] for e in entries)


def _state_with_extra(lay):
    return {'mode': 'libvirt', 'compute_host': 'vm', 'provider': 'p1',
            'facts': None,
            'services': {'nova-compute': 10, 'nova-compute-2': 11},
            'computes': [{'index': 2, 'host': 'kvmtune-compute-2',
                          'driver': 'fake', 'service': 'nova-compute-2',
                          'conf': lay.extra_compute_conf(2),
                          'facts': lay.extra_compute_facts(2),
                          'provider': 'p2'}]}


def test_restart_compute_finds_the_compute_by_host_name(tmp_path):
    lay = config.Layout(str(tmp_path / 'state'), str(tmp_path / 'venv'))
    state = _state_with_extra(lay)
    assert api._find_compute(lay, state, None)['service'] == 'nova-compute'
    assert api._find_compute(lay, state, 'vm')['provider'] == 'p1'
    assert api._find_compute(lay, state, 'kvmtune-compute-2')[
        'service'] == 'nova-compute-2'
    with pytest.raises(InputError,
                       match="--host: no compute host 'kvmtune-compute-9' in "
                             "this cloud") as exc:
        api._find_compute(lay, state, 'kvmtune-compute-9')
    assert exc.value.fix == 'one of: vm, kvmtune-compute-2'


def test_extra_computes_stop_with_the_first():
    assert api._is_compute('nova-compute')
    assert api._is_compute('nova-compute-3')
    assert not api._is_compute('nova-conductor')


def test_a_machine_named_like_an_extra_compute_is_refused():
    api._check_host_name('vm', [2, 3])
    with pytest.raises(InputError) as exc:
        api._check_host_name('kvmtune-compute-3', [2, 3])
    assert 'kvmtune-compute-3' in exc.value.line()


# -- stopping within a bound, and up after a crash (issue 25) ---------------

# ignores SIGTERM, as neutron-rpc-server did for its 60 s default grace
STUBBORN = ('import signal, time; signal.signal(signal.SIGTERM, '
            'signal.SIG_IGN); print("ready", flush=True); time.sleep(120)')
# a service with a worker (gunicorn, oslo.service): the worker outlives a
# SIGKILL of its master
MASTER = ('import subprocess, sys, time; subprocess.Popen([sys.executable, '
          '"-c", "import time; time.sleep(120)"]); time.sleep(120)')


@pytest.fixture
def lay(tmp_path, monkeypatch):
    from kvmtune.testcloud import procs

    lay = config.Layout(str(tmp_path / 'cloud'))
    for path in (lay.log, lay.run):
        os.makedirs(path)
    monkeypatch.setattr(api, 'DEFAULT_STOP_TIMEOUT', 1)
    yield lay
    procs.terminate(procs.owned_pids(lay), 5)


def test_down_sigkills_only_what_outlives_its_grace_and_says_which(lay):
    import sys

    from kvmtune.testcloud import procs

    stubborn = procs.start(lay, 'neutron-rpc-server',
                           [sys.executable, '-c', STUBBORN])
    polite = procs.start(lay, 'placement', [sys.executable, '-c',
                                            'import time; time.sleep(120)'])
    procs.wait_until(lambda: 'ready' in open(
        lay.log_file('neutron-rpc-server')).read(), 30, 'the handler')
    procs.save_state(lay, {'mode': 'fake', 'network': 'stub', 'services': {
        'neutron-rpc-server': stubborn, 'placement': polite}})
    said = []
    stopped = api.down(layout=lay, say=said.append)
    assert stopped == ['placement', 'neutron-rpc-server (SIGKILL)']
    assert said == [f'neutron-rpc-server (pid {stubborn}) still running '
                    '1 s after SIGTERM: SIGKILL']
    assert not procs.alive(stubborn) and not procs.alive(polite)
    assert procs.load_state(lay)['services'] == {}


def test_up_after_every_service_was_killed_cleans_up_by_itself(lay):
    # Before: a worker that outlived its SIGKILLed master made `up` refuse
    # ("a cloud is already up") until someone ran `down` by hand.
    import signal
    import sys

    from kvmtune.testcloud import procs

    master = procs.start(lay, 'keystone', [sys.executable, '-c', MASTER])
    procs.wait_until(lambda: len(procs.owned_pids(lay)) == 2, 30,
                     'the worker')
    procs.save_state(lay, {'mode': 'fake', 'network': 'stub',
                           'services': {'keystone': master}})
    os.kill(master, signal.SIGKILL)
    procs.wait_until(lambda: not procs.alive(master), 30, 'the kill')
    worker, = procs.owned_pids(lay)
    assert api._running_services(lay) == {}
    said = []
    api._clean_after_crash(lay, said.append)
    assert said[0] == (f'a cloud in {lay.root} was not taken down (its '
                       'services died): cleaning up what it left')
    assert said[-1] == 'cleaned up: 1 helper processes'
    assert not procs.alive(worker) and procs.owned_pids(lay) == []
    assert not os.path.exists(lay.ledger)
    said.clear()
    api._clean_after_crash(lay, said.append)     # after a down: nothing
    assert said == []
