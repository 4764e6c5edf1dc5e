"""kvmtune.rollout.playbook and the kvmtune.fleet collection, run by the
real ansible-playbook (the test fleet's ansible-core) in check mode
against a local-connection inventory whose hosts are capture trees: the
playbook parses, its roles' argument specs hold, each step reports, and
check mode changes nothing."""

import io
import json
import os
import subprocess
import sys

import pytest

from kvmtune.errors import KvmtuneError
from kvmtune.rollout import inventory
from kvmtune.rollout import playbook
from kvmtune.tuning import plan
from tests import hosttrees
from tests.unit.rollout import fleetvenv
from tests.unit.rollout.fleetvenv import ansible_on_path  # noqa: F401
from tests.unit.rollout.fleetvenv import needs_ansible

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))


def test_progress_reads_steps_from_ansible_output():
    lines = [
        'TASK [kvmtune.fleet.facts : step preflight: read the facts] ***',
        'ok: [c1]',
        'ok: [c2]',
        'TASK [Keep what the host has] ***',
        'ok: [c1]',
        'TASK [kvmtune.fleet.drain : step drain: migrate (x)] ***',
        'changed: [c1 -> localhost]',
        'fatal: [c2]: UNREACHABLE! => {"changed": false}',
        'TASK [step preflight: the settings] ***',
        'skipping: [c3]',
        'PLAY RECAP ***',
    ]
    assert list(playbook.progress(lines)) == [
        ('c1', 'preflight', 'ok'), ('c2', 'preflight', 'ok'),
        ('c1', 'drain', 'changed'), ('c2', 'drain', 'unreachable'),
        ('c3', 'preflight', 'skipping'), ('', '', 'play')]


def test_steps_give_one_line_per_host_and_step():
    results = [('c1', 'preflight', 'ok'), ('c1', 'preflight', 'skipping'),
               ('c1', 'apply', 'ok'), ('c1', 'apply', 'changed'),
               ('c1', 'apply', 'ok'), ('c1', 'reboot', 'skipping'),
               ('', '', 'play'),
               ('c2', 'preflight', 'ok'), ('c2', 'drain', 'failed'),
               ('', '', 'play')]
    assert list(playbook.steps(results)) == [
        ('c1', 'preflight', 'ok'), ('c1', 'apply', 'changed'),
        ('c1', 'reboot', 'skipping'), ('c2', 'preflight', 'ok'),
        ('c2', 'drain', 'failed')]


def _verify_output(*checks):
    return json.dumps({'checks': [
        {'layer': 'host', 'name': name, 'expected': expected, 'live': live,
         'status': status, 'fix': fix, 'reason': None}
        for name, expected, live, status, fix in checks]})


def test_a_failure_is_the_first_check_that_did_not_pass_and_its_fix():
    stdout = _verify_output(
        ('cmdline isolcpus', '2-19', '2-19', 'PASS', None),
        ('pages node0 2M', '>= 3470', '1735', 'DRIFT',
         'kvmtune pages apply 0:2M:3470'),
        ('pages node1 2M', '>= 3470', '1735', 'DRIFT', 'x'))
    assert playbook.failure({'rc': 1, 'stdout': stdout}) == (
        'host pages node0 2M: expected >= 3470, live 1735 (and 1 more)',
        'kvmtune pages apply 0:2M:3470')
    unknown = _verify_output(('pages node0 2M', '>= 1', None, 'UNKNOWN',
                              None))
    assert playbook.failure({'stdout': unknown})[0] == \
        'host pages node0 2M: unknown (None)'


def test_a_failure_is_kvmtunes_last_line_else_ansibles_message():
    gate = ('layer  check\n...\ngate c2: cloud provider c2: expected 4, '
            'live 2; the host stays disabled (fix: restart nova-compute)')
    assert playbook.failure({'stdout': gate, 'stderr': ''}) == (
        'gate c2: cloud provider c2: expected 4, live 2; the host stays '
        'disabled', 'restart nova-compute')
    assert playbook.failure({'stdout': '{"moves": []}',
                             'stderr': 'kvmtune: error: no room\n'}) == (
        'kvmtune: error: no room', None)
    assert playbook.failure({'msg': 'Reboot command failed'}) == (
        'Reboot command failed', None)
    assert playbook.failure({}) == ('failed', None)


def test_fatal_reads_the_result_on_its_line_or_indented_after_it():
    lines = [
        'TASK [kvmtune.fleet.verify : step verify: x] ***\n',
        'ok: [c1]\n',
        'fatal: [c2]: FAILED! => {"rc": 1, "stdout": "s"}\n',
        'fatal: [c3 -> localhost]: FAILED! => {\n',
        '    "rc": 2,\n',
        '    "stderr": "e"\n',
        '}\n',
        'fatal: [c4]: UNREACHABLE! => {"msg": "no route"}\n',
        'fatal: [c5]: FAILED! => {"cut\n',
        'PLAY RECAP ***\n',
    ]
    assert list(playbook.fatal(lines)) == [
        ('c2', {'rc': 1, 'stdout': 's'}), ('c3', {'rc': 2, 'stderr': 'e'}),
        ('c4', {'msg': 'no route'}), ('c5', {})]


def test_extra_vars_name_the_settings():
    variables = playbook.extra_vars(profile='p', batch=2, mode='in-place',
                                    cloud=None, run_id='r')
    assert variables['kvmtune_controller_command'][0] == sys.executable
    assert (variables['kvmtune_batch'], variables['kvmtune_mode'],
            variables['kvmtune_os_cloud'], variables['kvmtune_state_file']) \
        == (2, 'in-place', '', '')


@needs_ansible
def _kvmtune_bin(tmp_path):
    """A bin directory whose kvmtune is the kvmtune under test."""
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    (bindir / 'kvmtune').write_text(
        f'#!/bin/sh\nPYTHONPATH={REPO} exec {sys.executable} -m kvmtune.cli '
        '"$@"\n')
    (bindir / 'kvmtune').chmod(0o755)
    return bindir


def test_the_playbook_in_check_mode_changes_nothing(tmp_path,
                                                     ansible_on_path):  # noqa
    roots = {name: hosttrees.make(tmp_path / name, distro)
             for name, distro in (('c1', 'debian-12'), ('c2', 'rhel-7'))}
    bindir = _kvmtune_bin(tmp_path)
    inv = tmp_path / 'hosts.ini'
    inv.write_text('[computes]\n' + ''.join(
        f'{name} kvmtune_root={root} ansible_connection=local '
        f'ansible_python_interpreter={sys.executable}\n'
        for name, root in roots.items()))
    before = {name: hosttrees.snapshot(root) for name, root in roots.items()}
    variables = playbook.extra_vars(profile='pinned-hugepages', batch=1,
                                    mode='drain', cloud=None, run_id='t1')
    variables['kvmtune_command'] = [str(bindir / 'kvmtune')]
    argv = playbook.command(str(inv), 'computes', variables)
    done = subprocess.run(argv + ['--check'], capture_output=True,
                          text=True, timeout=600,
                          env={**playbook.environment(),
                               'PATH': os.environ['PATH']})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    steps = list(playbook.progress(done.stdout.splitlines()))
    for name in roots:
        assert (name, 'preflight', 'ok') in steps
        # the reboot is pending on both (booted without isolcpus), and
        # only reported: check mode
        assert (name, 'reboot', 'changed') in steps
        assert (name, 'reboot', 'skipping') in steps
        assert (name, 'apply', 'skipping') in steps
    assert hosttrees.snapshot(roots['c1']) == before['c1']
    assert hosttrees.snapshot(roots['c2']) == before['c2']
    # serial 1: the second host's batch starts after the first's
    assert done.stdout.count('PLAY [Roll a kvmtune profile out') == 2
    assert os.path.isfile(playbook.PLAYBOOK)


@needs_ansible
def test_the_collection_builds_installs_and_documents_its_roles(
        tmp_path, ansible_on_path):  # noqa: F811
    """ansible-galaxy builds the shipped collection and installs it, and
    ansible-doc reads each role's argument specs from the install."""
    env = {**os.environ, 'ANSIBLE_NOCOLOR': '1'}
    built = subprocess.run(
        ['ansible-galaxy', 'collection', 'build', playbook.COLLECTION,
         '--output-path', str(tmp_path)], capture_output=True, text=True,
        timeout=300, env=env)
    assert built.returncode == 0, built.stderr
    tarball, = tmp_path.glob('kvmtune-fleet-*.tar.gz')
    installed = subprocess.run(
        ['ansible-galaxy', 'collection', 'install', str(tarball), '-p',
         str(tmp_path / 'collections')], capture_output=True, text=True,
        timeout=300, env=env)
    assert installed.returncode == 0, installed.stderr
    listed = subprocess.run(
        ['ansible-doc', '-t', 'role', '-l', 'kvmtune.fleet', '--json'],
        capture_output=True, text=True, timeout=300,
        env={**env, 'ANSIBLE_COLLECTIONS_PATH': str(tmp_path /
                                                    'collections')})
    assert listed.returncode == 0, listed.stderr
    roles = json.loads(listed.stdout)
    assert sorted(roles) == ['kvmtune.fleet.apply', 'kvmtune.fleet.drain',
                             'kvmtune.fleet.facts', 'kvmtune.fleet.verify']
    assert set(roles['kvmtune.fleet.drain']['entry_points']) == \
        {'main', 'enable'}


@needs_ansible
def test_a_tree_is_never_rebooted_by_rebooting_the_machine(
        tmp_path, ansible_on_path):  # noqa: F811
    """The apply role on a host that is a tree (kvmtune_root not /) with
    a reboot pending refuses, before ansible.builtin.reboot, unless
    kvmtune_reboot_command says how the tree reboots."""
    root = hosttrees.make(tmp_path / 'c1', 'debian-12')
    bindir = _kvmtune_bin(tmp_path)
    inv = tmp_path / 'hosts.ini'
    inv.write_text(f'c1 kvmtune_root={root} ansible_connection=local '
                   f'ansible_python_interpreter={sys.executable}\n')
    play = tmp_path / 'apply.yml'
    play.write_text(
        '- hosts: all\n  gather_facts: false\n  tasks:\n'
        '    - ansible.builtin.include_role: {name: kvmtune.fleet.facts}\n'
        '    - ansible.builtin.include_role: {name: kvmtune.fleet.apply}\n')
    variables = {'kvmtune_profile': 'cpu-pinning', 'kvmtune_mode': 'in-place',
                 'kvmtune_command': [str(bindir / 'kvmtune')]}
    done = subprocess.run(
        [os.path.join(fleetvenv.BIN, 'ansible-playbook'),
         '-i', str(inv), '-e', json.dumps(variables), str(play)],
        capture_output=True, text=True, timeout=600,
        env=playbook.environment())
    assert done.returncode == 2, done.stdout[-3000:]
    steps = list(playbook.steps(playbook.progress(done.stdout.splitlines())))
    assert ('c1', 'apply', 'changed') in steps      # staged, written
    assert ('c1', 'reboot', 'failed') in steps
    assert 'rebooting would reboot the machine it lives on' in done.stdout
    assert 'TASK [kvmtune.fleet.apply : step reboot: a boot-time change ' \
        'is pending]' not in done.stdout


@needs_ansible
def test_a_host_that_fails_stops_the_rollout_before_the_next_batch(
        tmp_path, ansible_on_path, monkeypatch):  # noqa: F811
    """The playbook's own stop: a host that fails in its batch (here its
    kvmtune is not installed: the check reads its tree here and passes,
    the preflight step on the host fails) ends the run there
    (max_fail_percentage 0); the next batch's host is not touched."""
    broken = hosttrees.make(tmp_path / 'broken', 'debian-12')
    good = hosttrees.make(tmp_path / 'good', 'rhel-7')
    bindir = _kvmtune_bin(tmp_path)
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
        playbook.run(str(inv), hosts, profile='cpu-pinning', limit='all',
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
    recorded (rollout-step apply) before its reboot would come."""
    roots = {name: hosttrees.make(tmp_path / name, distro) for name, distro
             in (('c1', 'debian-12'), ('c2', 'rhel-7'), ('c3', 'debian-12'))}
    before = hosttrees.snapshot(roots['c3'])
    bindir = _kvmtune_bin(tmp_path)
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
    recorded = plan.for_host(['io-tuned'], root=str(roots['c1']))[0]
    recorded.facts_source = 'recorded by the run'
    plans = tmp_path / 'applied-plans.json'
    plans.write_text(json.dumps({'kvmtune_applied_plans': {
        'c1': recorded.to_dict()}}))
    out = io.StringIO()
    with pytest.raises(KvmtuneError) as err:
        playbook._play(str(inv), [['c1', 'c2'], ['c3']], out, 'r4',
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
    record, = [c for c in calls if c['argv'][1] == 'apply']
    assert ('apply', 'c2') in steps and ('apply', 'c1') not in steps
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
    from kvmtune.rollout.preflight import Refused

    refusal = Refused('server s1 (g, flavor pinned): pinned to CPUs [1] '
                      'outside the new cpu_dedicated_set 4-39 (Nova only '
                      'warns: another guest may get them)',
                      source='host c4', key='in-place',
                      fix='drain this host instead of changing it in '
                          'place; nothing was touched')
    line = playbook._refused('inv.yml', [refusal, Refused('...')]).line()
    assert line == (
        'inv.yml: the preflight refuses it: host c4: in-place: server s1 '
        '(g, flavor pinned): pinned to CPUs [1] outside the new '
        'cpu_dedicated_set 4-39 (Nova only warns: another guest may get '
        'them) (and 1 more refusal(s)) (fix: drain this host instead of '
        'changing it in place; nothing was touched; kvmtune rollout --check '
        'shows every batch)')
    assert playbook._refused('inv.yml', [Refused('no fix here')]).line() == (
        'inv.yml: the preflight refuses it: no fix here (fix: nothing was '
        'disabled or changed; kvmtune rollout --check shows every batch)')
    odd = Refused('a name with (fix: in it)', source='host c5')
    assert playbook._refused('inv.yml', [odd]).line() == (
        'inv.yml: the preflight refuses it: host c5: a name with (fix: in '
        'it) (fix: nothing was disabled or changed; kvmtune rollout --check '
        'shows every batch)')
