"""kvmtune.rollout.events: the events the collection's callback plugin
writes, read back; and the plugin itself, fed Ansible's own result
objects (a step's status the strongest of its tasks', one event per host
and step, a failure with its result and line)."""

import importlib.util
import json
import os
import threading
import time

from kvmtune.rollout import events
from kvmtune.rollout import playbook
from tests.unit.rollout.fleetvenv import needs_ansible

PLUGIN = os.path.join(playbook.COLLECTION, 'plugins', 'callback',
                      'events.py')


def _line(**event):
    return json.dumps(event) + '\n'


def test_read_keeps_the_contracts_events_only():
    lines = [_line(event='batch', batch=1),
             _line(event='step', host='c1', step='drain', status='changed',
                   batch=1),
             _line(event='step', host='c1', step='no-such-step',
                   status='ok'),
             _line(event='step', host='c1', step='apply', status='odd'),
             '{"event": "step", "host": "c1", "st',     # cut short
             'not json\n',
             _line(event='end', hosts={'c1': {'ok': 3}})]
    found = list(events.read(lines))
    assert [(e.kind, e.host, e.step, e.status) for e in found] == [
        ('batch', '', '', ''), ('step', 'c1', 'drain', 'changed'),
        ('end', '', '', '')]


def test_follow_reads_the_file_while_it_is_written(tmp_path):
    path = tmp_path / 'events.jsonl'
    path.write_text('')
    running = threading.Event()
    running.set()

    def writer():
        with open(path, 'a') as out:
            out.write(_line(event='step', host='c1', step='disable',
                            status='changed'))
            out.flush()
            time.sleep(0.3)
            # a line written in two pieces is read whole
            out.write('{"event": "step", "host": "c1", ')
            out.flush()
            time.sleep(0.3)
            out.write('"step": "drain", "status": "ok"}\n')
        running.clear()

    thread = threading.Thread(target=writer)
    thread.start()
    found = [(e.step, e.status) for e in
             events.follow(str(path), running.is_set, interval=0.05)]
    thread.join()
    assert found == [('disable', 'changed'), ('drain', 'ok')]


def _verify_output(*checks):
    return json.dumps({'checks': [
        {'layer': 'host', 'name': name, 'expected': expected, 'live': live,
         'status': status, 'fix': fix, 'reason': None}
        for name, expected, live, status, fix in checks]})


def _failed(result, line=''):
    return events.Event('step', 'c1', 'verify', 'failed', 1, result, line)


def test_a_failure_is_the_first_check_that_did_not_pass_and_its_fix():
    stdout = _verify_output(
        ('cmdline isolcpus', '2-19', '2-19', 'PASS', None),
        ('pages node0 2M', '>= 3470', '1735', 'DRIFT',
         'kvmtune pages apply 0:2M:3470'),
        ('pages node1 2M', '>= 3470', '1735', 'DRIFT', 'x'))
    assert events.failure(_failed({'rc': 1, 'stdout': stdout})) == (
        'host pages node0 2M: expected >= 3470, live 1735 (and 1 more)',
        'kvmtune pages apply 0:2M:3470')
    unknown = _verify_output(('pages node0 2M', '>= 1', None, 'UNKNOWN',
                              None))
    assert events.failure(_failed({'stdout': unknown}))[0] == \
        'host pages node0 2M: unknown (None)'


def test_a_failure_is_the_commands_own_line_else_ansibles_message():
    gate = ('gate c2: cloud provider c2: expected 4, live 2; the host '
            'stays disabled (fix: restart nova-compute)')
    assert events.failure(_failed({'stdout': 'layer ...\n' + gate},
                                  gate)) == (
        'gate c2: cloud provider c2: expected 4, live 2; the host stays '
        'disabled', 'restart nova-compute')
    assert events.failure(_failed({'stderr': 'kvmtune: error: no room'},
                                  'kvmtune: error: no room')) == (
        'kvmtune: error: no room', None)
    assert events.failure(_failed({'msg': 'Reboot command failed'})) == (
        'Reboot command failed', None)
    assert events.failure(_failed({})) == ('failed', None)


class _Host:
    def __init__(self, name):
        self.name = name

    def get_name(self):
        return self.name


class _Task:
    def __init__(self, step):
        self.vars = {'kvmtune_step': step} if step else {}


class _Result:
    def __init__(self, host, step, result=None, changed=False):
        self._host = _Host(host)
        self._task = _Task(step)
        self._result = result or {}
        self._changed = changed

    def is_changed(self):
        return self._changed


@needs_ansible
def test_the_plugin_writes_one_event_per_host_and_step(
        tmp_path, monkeypatch):
    """The collection's callback plugin, loaded with the test fleet's
    ansible-core on the path: its results grouped per host and step."""
    from tests.unit.rollout import fleetvenv

    site = next(os.path.join(root, name) for root, dirs, _ in
                os.walk(os.path.join(fleetvenv.VENV, 'lib'))
                for name in dirs if name == 'site-packages')
    monkeypatch.syspath_prepend(site)
    spec = importlib.util.spec_from_file_location('kvmtune_events', PLUGIN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    plugin = module.CallbackModule()
    path = tmp_path / 'events.jsonl'
    monkeypatch.setattr(plugin, 'get_option', lambda name: str(path))
    plugin.v2_playbook_on_play_start(None)
    plugin.v2_runner_on_ok(_Result('c1', 'preflight'))
    plugin.v2_runner_on_ok(_Result('c1', None))             # no step
    plugin.v2_runner_on_skipped(_Result('c1', 'preflight'))
    plugin.v2_runner_on_ok(_Result('c1', 'apply', changed=True))
    plugin.v2_runner_on_ok(_Result('c1', 'apply'))
    plugin.v2_runner_on_ok(_Result('c2', 'preflight'))
    plugin.v2_runner_on_failed(_Result('c2', 'verify', {
        'rc': 1, 'stdout': 'x' * 9000 + '\nverify c2: no (fix: do it)',
        'cmd': ['kvmtune', 'verify'], 'invocation': {'secret': 's'}}),
        ignore_errors=True)
    plugin.v2_playbook_on_play_start(None)
    plugin.v2_runner_on_failed(_Result('c3', 'drain', {
        '_ansible_no_log': True, 'stdout': 'a secret'}))

    class Stats:
        processed = {'c1': 1, 'c2': 1, 'c3': 1}

        def summarize(self, host):
            return {'failures': int(host != 'c1')}

    plugin.v2_playbook_on_stats(Stats())
    found = [json.loads(line) for line in path.read_text().splitlines()]
    steps = [(e['host'], e['step'], e['status'], e['batch']) for e in found
             if e['event'] == 'step']
    # a step's event when the host's next step starts, when it fails,
    # or when the batch ends
    assert steps == [('c1', 'preflight', 'ok', 1),
                     ('c2', 'preflight', 'ok', 1),
                     ('c2', 'verify', 'failed', 1),
                     ('c1', 'apply', 'changed', 1),
                     ('c3', 'drain', 'failed', 2)]
    verify = next(e for e in found if e.get('step') == 'verify')
    assert verify['line'] == 'verify c2: no (fix: do it)'
    assert set(verify['result']) == {'rc', 'stdout'}   # no cmd, invocation
    assert len(verify['result']['stdout']) == module.LIMIT
    hidden = next(e for e in found if e.get('step') == 'drain')
    assert 'a secret' not in json.dumps(hidden)
    assert found[-1] == {'event': 'end', 'hosts': {
        'c1': {'failures': 0}, 'c2': {'failures': 1},
        'c3': {'failures': 1}}}
