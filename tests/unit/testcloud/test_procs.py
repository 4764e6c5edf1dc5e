"""How the test cloud starts, finds and stops its processes, on real
processes of this machine (no cloud): a session leader in the ledger, its
child in the same session, and a daemon found by the owner marker."""

import os
import stat
import sys

import pytest

from kvmtune.testcloud import config
from kvmtune.testcloud import procs
from tests import hang

# a child that starts its own child and sleeps: a gunicorn master/worker
PARENT = ('import subprocess, sys, time; '
          'subprocess.Popen([sys.executable, "-c", "import time; '
          'time.sleep(60)"]); time.sleep(60)')


@pytest.fixture
def lay(tmp_path):
    lay = config.Layout(str(tmp_path / 'cloud'))
    for path in (lay.log, lay.run):
        os.makedirs(path)
    return lay


def test_write_file_creates_directories_and_sets_the_mode(tmp_path):
    path = tmp_path / 'a' / 'b' / 'secrets.json'
    procs.write_file(str(path), '{"db": "x"}', 0o600)
    assert path.read_text() == '{"db": "x"}'
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    procs.write_file(str(path), '{}', 0o600)
    assert path.read_text() == '{}'
    assert os.listdir(path.parent) == ['secrets.json']


def test_write_if_changed_writes_only_a_change(tmp_path):
    path = tmp_path / 'd' / 'facts.json'
    assert procs.write_if_changed(str(path), '{"a": 1}') is True
    first = path.stat().st_ino
    assert procs.write_if_changed(str(path), '{"a": 1}') is False
    assert path.stat().st_ino == first     # not even replaced
    assert procs.write_if_changed(str(path), '{"a": 2}') is True
    assert path.read_text() == '{"a": 2}'


def test_state_round_trip(lay):
    assert procs.load_state(lay) == {}
    procs.save_state(lay, {'mode': 'fake', 'services': {'x': 1}})
    assert procs.load_state(lay) == {'mode': 'fake', 'services': {'x': 1}}


@pytest.mark.parametrize('content', [b'', b'{"mode": "libv', b'\x00\xff',
                                     b'[1, 2]', b'{"a": NaN}'])
@pytest.mark.parametrize('verb', ['status', 'env', 'down',
                                  'restart-compute'])
def test_a_damaged_state_file_is_one_line(lay, content, verb, capsys,
                                          monkeypatch):
    # Before: JSONDecodeError, an internal error, for every cloud verb.
    from kvmtune import cli
    with open(lay.state, 'wb') as f:
        f.write(content)
    monkeypatch.setenv('KVMTUNE_CLOUD_DIR', lay.root)
    assert cli.main(['cloud', verb]) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and 'internal error' not in err, err
    assert f"{lay.state}: the cloud's state file is damaged" in err
    assert f'remove {lay.state}' in err


def test_started_service_and_its_child_are_owned_then_stopped(lay):
    pid = procs.start(lay, 'svc', [sys.executable, '-c', PARENT])
    procs.wait_until(lambda: len(procs.owned_pids(lay)) == 2, 30,
                     'the child')
    owned = procs.owned_pids(lay)
    assert pid in owned
    rss, pss = procs.memory_kb(pid)
    assert rss > 0 and pss > 0
    assert procs.cmdline(pid).startswith(sys.executable)
    with open(lay.log_file('svc')) as f:
        assert f.read() == ''
    assert procs.terminate(owned, 10) == []
    procs.wait_until(lambda: not procs.owned_pids(lay), 10, 'stopped')
    assert not procs.alive(pid)


def test_wait_until_names_what_did_not_come():
    # it gives up: if it ignored its timeout, the guard fails the test
    with pytest.raises(TimeoutError, match='the moon not ready after 0 s'):
        hang.call(lambda: procs.wait_until(lambda: False, 0.3, 'the moon',
                                           interval=0.1))


def test_run_failure_names_the_log(lay):
    with pytest.raises(RuntimeError,
                       match=r'raise SystemExit\(3\) failed \(exit 3\): see '
                             r'.*step\.log') as exc:
        procs.run(lay, 'step', [sys.executable, '-c', 'raise SystemExit(3)'])
    assert 'exit 3' in str(exc.value)
    assert lay.log_file('step') in str(exc.value)


def test_a_state_file_without_computes_is_one_compute(lay):
    """State files written before --computes: the first compute only."""
    old = {'mode': 'fake', 'compute_host': 'vm', 'provider': 'p1',
           'facts': '/f.json', 'services': {'nova-compute': 1}}
    assert procs.computes_of(old, lay) == [
        {'index': 1, 'host': 'vm', 'driver': 'fake',
         'service': 'nova-compute', 'conf': lay.compute_conf,
         'facts': '/f.json', 'provider': 'p1'}]
    assert procs.computes_of({}, lay) == []


def test_extra_computes_follow_the_first_and_survive_a_reload(lay):
    extra = {'index': 2, 'host': 'kvmtune-compute-2', 'driver': 'fake',
             'service': 'nova-compute-2', 'provider': 'p2',
             'conf': lay.extra_compute_conf(2)}
    state = {'mode': 'libvirt', 'compute_host': 'vm', 'provider': 'p1',
             'computes': [extra]}
    procs.save_state(lay, state)
    listed = procs.computes_of(procs.load_state(lay), lay)
    assert [c['host'] for c in listed] == ['vm', 'kvmtune-compute-2']
    assert listed[0]['driver'] == 'libvirt'
    assert listed[1] == extra
    listed[1]['provider'] = 'changed'
    assert state['computes'][0]['provider'] == 'p2'


def test_tree_rss_counts_the_children(lay):
    parent = procs.start(lay, 'parent', [sys.executable, '-c', PARENT])
    try:
        procs.wait_until(lambda: _children(parent), 10, 'the child')
        alone = procs._vm_rss_kb(parent)
        assert alone > 0
        assert procs.tree_rss_kb(parent) >= alone + procs._vm_rss_kb(
            _children(parent)[0])
    finally:
        procs.terminate(procs.owned_pids(lay), 5)
    assert procs.tree_rss_kb(parent) == 0


def _children(pid):
    try:
        with open(f'/proc/{pid}/task/{pid}/children') as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []
