"""Stopping the test cloud within a bound, and up after a crash (issue
25): real processes started by the cloud's own process helpers."""

import os

import pytest

from kvmtune.testcloud import config
from kvmtune.testcloud import start
from kvmtune.testcloud import stop


def test_extra_computes_stop_with_the_first():
    assert stop._is_compute('nova-compute')
    assert stop._is_compute('nova-compute-3')
    assert not stop._is_compute('nova-conductor')


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
    monkeypatch.setattr(stop, 'STOP_GRACE', 1)
    # the machine's registry of clouds is never this test's to touch
    monkeypatch.setattr(procs, 'CLOUDS_DIR', str(tmp_path / 'clouds'))
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
    stopped = stop.stop_all(lay, said.append)
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
    assert start.running_services(lay) == {}
    said = []
    stop.clean_after_crash(lay, said.append)
    assert said[0] == (f'a cloud in {lay.root} was not taken down (its '
                       'services died): cleaning up what it left')
    assert said[-1] == 'cleaned up: 1 helper processes'
    assert not procs.alive(worker) and procs.owned_pids(lay) == []
    assert not os.path.exists(lay.ledger)
    said.clear()
    stop.clean_after_crash(lay, said.append)     # after a down: nothing
    assert said == []


@pytest.fixture
def shared_calls(monkeypatch, tmp_path):
    """What stop_all would run to stop RabbitMQ, and MariaDB's pid file
    (a stand-in whose pid is this test's own sleeper): no real service
    of the machine is stopped."""
    import subprocess
    import sys

    calls = []
    monkeypatch.setattr(stop.subprocess, 'call',
                        lambda argv, **kw: calls.append(argv[0]))
    sleeper = subprocess.Popen([sys.executable, '-c',
                                'import time; time.sleep(120)'])
    pidfile = tmp_path / 'mysqld.pid'
    pidfile.write_text(str(sleeper.pid))
    monkeypatch.setattr(stop, 'MARIADB_PID', str(pidfile))
    yield calls, sleeper
    sleeper.kill()
    sleeper.wait()


def _other_cloud(tmp_path):
    """A second cloud in its own state directory, registered, with one
    service running."""
    import sys

    from kvmtune.testcloud import procs

    other = config.Layout(str(tmp_path / 'other'))
    for path in (other.log, other.run):
        os.makedirs(path)
    procs.register(other)
    procs.start(other, 'network', [sys.executable, '-c',
                                   'import time; time.sleep(120)'])
    return other


def test_down_leaves_mariadb_and_rabbitmq_to_a_cloud_still_up(
        lay, tmp_path, shared_calls):
    from kvmtune.testcloud import procs

    calls, mariadb = shared_calls
    other = _other_cloud(tmp_path)
    procs.register(lay)
    procs.save_state(lay, {'mode': 'fake', 'services': {},
                           'started_mariadb': True,
                           'started_rabbitmq': True})
    said = []
    assert stop.stop_all(lay, said.append) == []
    assert said == ['rabbitmq, mariadb left running: the cloud in %s '
                    'uses it' % other.root]
    assert calls == [] and mariadb.poll() is None
    assert procs.other_clouds(other) == []      # this one unregistered
    # the other cloud's down, the last, stops what the first one started
    assert stop.stop_all(other, said.append) == [
        '1 helper processes', 'rabbitmq', 'mariadb']
    assert calls == ['rabbitmqctl', 'epmd']
    assert mariadb.wait(10) is not None
    assert procs.shared_left() == []


def test_down_alone_stops_what_its_up_started(lay, shared_calls):
    calls, mariadb = shared_calls
    from kvmtune.testcloud import procs

    procs.save_state(lay, {'mode': 'fake', 'services': {},
                           'started_mariadb': True,
                           'started_rabbitmq': False})
    assert stop.stop_all(lay, print) == ['mariadb']
    assert calls == [] and mariadb.wait(10) is not None


def test_a_stale_registration_does_not_hold_the_shared_services(
        lay, tmp_path):
    from kvmtune.testcloud import procs

    other = config.Layout(str(tmp_path / 'crashed'))
    os.makedirs(procs.CLOUDS_DIR)
    # its `up` and its services are gone: pid 1's child that exited
    procs.write_file(os.path.join(procs.CLOUDS_DIR, 'cloud%s.json'
                                  % other.suffix),
                     '{"root": "%s", "up_pid": 999999999}' % other.root)
    assert procs.other_clouds(lay) == []
    assert os.listdir(procs.CLOUDS_DIR) == []
