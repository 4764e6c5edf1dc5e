"""kvmtune.rollout.run: a rollout run end to end on capture trees, with
the real ansible-playbook (the test fleet's ansible-core) and a recording
stand-in for the cloud's steps; its lines read from the events of the
collection's callback plugin."""

import io
import json
import os
import sys

import pytest

from kvmtune.errors import KvmtuneError
from kvmtune.rollout import inventory
from kvmtune.rollout import playbook
from kvmtune.rollout import run
from kvmtune.tuning import plan
from tests import hosttrees
from tests.unit.rollout.fleetvenv import ansible_on_path  # noqa: F401
from tests.unit.rollout.fleetvenv import kvmtune_bin
from tests.unit.rollout.fleetvenv import needs_ansible


@needs_ansible
def test_a_host_that_fails_stops_the_rollout_before_the_next_batch(
        tmp_path, ansible_on_path, monkeypatch):  # noqa: F811
    """The playbook's own stop: a host that fails in its batch (here its
    kvmtune is not installed: the check reads its tree here and passes,
    the preflight step on the host fails) ends the run there
    (max_fail_percentage 0); the next batch's host is not touched."""
    broken = hosttrees.make(tmp_path / 'broken', 'debian-12')
    good = hosttrees.make(tmp_path / 'good', 'rhel-7')
    bindir = kvmtune_bin(tmp_path)
    monkeypatch.setenv('PATH', f'{bindir}:{os.environ["PATH"]}')
    inv = tmp_path / 'hosts.ini'
    local = f'ansible_connection=local ansible_python_interpreter=' \
        f'{sys.executable}'
    inv.write_text(
        f'broken kvmtune_root={broken} {local} '
        f'kvmtune_command=\'["{tmp_path}/not-installed/kvmtune"]\'\n'
        f'good kvmtune_root={good} {local}\n')
    hosts = inventory.load(str(inv))
    before = hosttrees.snapshot(good)
    out = io.StringIO()
    with pytest.raises(KvmtuneError) as err:
        run.run(str(inv), hosts, profile='cpu-pinning', limit='all',
                batch=1, mode='stage', cloud=None, run_id='r3',
                stream=out)
    assert 'the rollout stopped: broken failed at step preflight' in \
        err.value.line()
    lines = out.getvalue().splitlines()
    assert lines[0] == 'checked 2 hosts: 2 reboot, 0 restart, 0 unchanged'
    assert 'broken preflight failed' in lines
    assert not any(line.startswith('good ') for line in lines)
    assert hosttrees.snapshot(good) == before


CONTROLLER = '''import json
import sys

argv = sys.argv[1:]
plan = json.loads(sys.stdin.read()) if '--plan' in argv else None
with open(sys.argv[0] + '.log', 'a') as log:
    log.write(json.dumps({'argv': argv, 'plan': plan and plan['profile'],
                          'source': plan and plan['facts_source']})
              + '\\n')
if argv[1] in ('disable', 'drain', 'enable'):
    print(json.dumps({'changed': True}))
'''


@needs_ansible
def test_a_host_that_fails_its_gate_lets_its_batch_mates_go_on(
        tmp_path, ansible_on_path):  # noqa: F811
    """Batches of two: c1 passes its gate, c2 does not (its verify layers
    include novacompute, and no nova-compute runs in its tree: UNKNOWN).
    c1 goes on to enable and its textfile; c2 is not enabled, it fails
    last and the rollout stops: c3, the next batch, is not touched. The
    gate checks the plan the apply step applied (on standard input). The
    cloud's steps are a recording stand-in for kvmtune rollout-step.
    A run again: c1 has a plan the run applied before (its state file,
    kvmtune_applied_plans in a file of variables): that plan is applied
    again as it is and gated, not recorded again; c2's plan, made now, is
    recorded (rollout-step record-plan) before its reboot would come."""
    roots = {name: hosttrees.make(tmp_path / name, distro) for name, distro
             in (('c1', 'debian-12'), ('c2', 'rhel-7'), ('c3', 'debian-12'))}
    before = hosttrees.snapshot(roots['c3'])
    bindir = kvmtune_bin(tmp_path)
    controller = tmp_path / 'controller'
    controller.write_text(CONTROLLER)
    textfiles = {name: tmp_path / f'{name}-textfiles' for name in roots}
    layers = {'c1': '["host"]', 'c2': '["host", "novacompute"]',
              'c3': '["host"]'}
    inv = tmp_path / 'hosts.ini'
    inv.write_text(''.join(
        f'{name} kvmtune_root={root} ansible_connection=local '
        f'ansible_python_interpreter={sys.executable} '
        f"kvmtune_verify_layers='{layers[name]}' "
        f'kvmtune_textfile_dir={textfiles[name]}\n'
        for name, root in roots.items()))
    for directory in textfiles.values():
        directory.mkdir()
    variables = playbook.extra_vars(profile='io-tuned', batch=2,
                                    mode='drain', cloud='stand-in',
                                    run_id='r4')
    variables['kvmtune_command'] = [str(bindir / 'kvmtune')]
    variables['kvmtune_controller_command'] = [sys.executable,
                                               str(controller)]
    variables['kvmtune_state_file'] = str(tmp_path / 'rollout.json')
    # io-tuned has nothing to change in these trees: c1 goes on with the
    # plan the run applied to it, c2 because the run took it out before
    # (kvmtune rollout passes both from its state file); c3 would be
    # left alone by the play itself
    variables['kvmtune_resume_hosts'] = ['c2']
    recorded = plan.for_host(['io-tuned'], root=str(roots['c1']))[0]
    recorded.facts_source = 'recorded by the run'
    plans = tmp_path / 'applied-plans.json'
    plans.write_text(json.dumps({'kvmtune_applied_plans': {
        'c1': recorded.to_dict()}}))
    out = io.StringIO()
    with pytest.raises(KvmtuneError) as err:
        run._play(str(inv), [['c1', 'c2'], ['c3']], out, 'r4',
                  variables, [str(plans)])
    line = err.value.line()
    print(out.getvalue(), line)
    assert ': the rollout stopped: c2 failed at step verify (failed): ' \
        'novacompute ' in line
    assert line.endswith('it stays disabled, c1 of its batch passed and '
                         'was enabled again, the hosts of later batches '
                         'were not touched (fix: make the check possible '
                         '(see the reason), then run kvmtune rollout '
                         'again with the same --state: it goes on from '
                         'there and judges the plan it applied again '
                         '(plans the host again with --replan c2))')
    lines = out.getvalue().splitlines()
    assert lines[1:3] == ['batch 1: c1 c2', 'batch 2: c3']
    for done in (('verify', 'ok'), ('gate', 'ok'), ('enable', 'changed'),
                 ('textfile', 'changed')):
        assert 'c1 {} {}'.format(*done) in lines, done
    assert 'c2 verify failed' in lines
    assert not any(line.startswith(('c2 enable', 'c2 textfile', 'c3 '))
                   for line in lines)
    calls = [json.loads(line) for line in
             (tmp_path / 'controller.log').read_text().splitlines()]
    steps = [(c['argv'][1], host) for c in calls
             for n, word in enumerate(c['argv'])
             for host in ([c['argv'][n + 1]] if word == '--host' else
                          [word[7:]] if word.startswith('--host=') else [])]
    assert ('preflight', 'c2') in steps and ('drain', 'c2') in steps
    assert ('enable', 'c1') in steps and ('enable', 'c2') not in steps
    assert ('gate', 'c1') in steps and ('gate', 'c2') not in steps
    assert not any(host == 'c3' for _, host in steps)
    # the gate got the plan the apply step applied: c1's, the plan the
    # run applied before, as it is; c2's, made now, recorded once
    gate, = [c for c in calls if c['argv'][1] == 'gate']
    assert '--plan' in gate['argv'] and gate['plan'] == 'io-tuned'
    assert gate['source'] == 'recorded by the run'
    record, = [c for c in calls if c['argv'][1] == 'record-plan']
    assert ('record-plan', 'c2') in steps
    assert ('record-plan', 'c1') not in steps
    assert record['plan'] == 'io-tuned' and record['source'] == str(
        roots['c2'])
    assert record['argv'][record['argv'].index('--state') + 1] == \
        variables['kvmtune_state_file']
    assert (textfiles['c1'] / 'kvmtune_verify.prom').exists()
    assert list(textfiles['c2'].iterdir()) == []
    assert hosttrees.snapshot(roots['c3']) == before


def test_a_refusal_is_one_line_with_its_own_fix():
    """The preflight's refusal as it raised it: its text and its own fix,
    carried, never parsed back out of its line (a problem that has
    " (fix: " in it stays whole)."""
    from kvmtune.rollout.snapshot import Refused

    refusal = Refused('server s1 (g, flavor pinned): pinned to CPUs [1] '
                      'outside the new cpu_dedicated_set 4-39 (Nova only '
                      'warns: another guest may get them)',
                      source='host c4', key='in-place',
                      fix='drain this host instead of changing it in '
                          'place; nothing was touched')
    line = run._refused('inv.yml', [refusal, Refused('...')]).line()
    assert line == (
        'inv.yml: the preflight refuses it: host c4: in-place: server s1 '
        '(g, flavor pinned): pinned to CPUs [1] outside the new '
        'cpu_dedicated_set 4-39 (Nova only warns: another guest may get '
        'them) (and 1 more refusal(s)) (fix: drain this host instead of '
        'changing it in place; nothing was touched; kvmtune rollout --check '
        'shows every batch)')
    assert run._refused('inv.yml', [Refused('no fix here')]).line() == (
        'inv.yml: the preflight refuses it: no fix here (fix: nothing was '
        'disabled or changed; kvmtune rollout --check shows every batch)')
    odd = Refused('a name with (fix: in it)', source='host c5')
    assert run._refused('inv.yml', [odd]).line() == (
        'inv.yml: the preflight refuses it: host c5: a name with (fix: in '
        'it) (fix: nothing was disabled or changed; kvmtune rollout --check '
        'shows every batch)')
