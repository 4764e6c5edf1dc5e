"""kvmtune.rollout.playbook (the Ansible invocation) and the kvmtune.fleet
collection, run by the real ansible-playbook (the test fleet's
ansible-core) against a local-connection inventory whose hosts are
capture trees: the playbook parses, its roles' argument specs hold, each
step reports through the collection's events callback, check mode
predicts and changes nothing, the inventory's variables are honoured and
a host with nothing to change is left alone by the play itself."""

import json
import os
import subprocess
import sys

from kvmtune.rollout import events
from kvmtune.rollout import playbook
from tests import hosttrees
from tests.unit.rollout import fleetvenv
from tests.unit.rollout.fleetvenv import ansible_on_path  # noqa: F401
from tests.unit.rollout.fleetvenv import kvmtune_bin
from tests.unit.rollout.fleetvenv import needs_ansible


def _play(tmp_path, argv, env=None):
    """ansible-playbook ``argv`` with the events callback on: (its
    result, [(host, step, status)] of its events)."""
    path = tmp_path / f'events-{len(list(tmp_path.glob("events-*")))}.jsonl'
    path.write_text('')
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600,
                          env={**playbook.environment(str(path)),
                               **(env or {})})
    with open(path, encoding='utf-8') as lines:
        found = [(e.host, e.step, e.status) for e in events.read(lines)
                 if e.kind == 'step']
    return done, found


def test_extra_vars_name_the_settings():
    variables = playbook.extra_vars(profile='p', batch=2, mode='in-place',
                                    cloud=None, run_id='r')
    assert variables['kvmtune_controller_command'][0] == sys.executable
    assert (variables['kvmtune_batch'], variables['kvmtune_mode'],
            variables['kvmtune_os_cloud'], variables['kvmtune_state_file']) \
        == (2, 'in-place', '', '')


def test_the_playbook_in_check_mode_changes_nothing(tmp_path,
                                                     ansible_on_path):  # noqa
    roots = {name: hosttrees.make(tmp_path / name, distro)
             for name, distro in (('c1', 'debian-12'), ('c2', 'rhel-7'))}
    bindir = kvmtune_bin(tmp_path)
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
    done, steps = _play(tmp_path, argv + ['--check'],
                        {'PATH': os.environ['PATH']})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    for name in roots:
        assert (name, 'preflight', 'ok') in steps
        # the reboot is pending on both (booted without isolcpus), and
        # only reported: check mode; the apply step predicts its change
        assert (name, 'reboot', 'changed') in steps
        assert (name, 'apply', 'changed') in steps
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
    assert sorted(roles) == ['kvmtune.fleet.apply', 'kvmtune.fleet.common',
                             'kvmtune.fleet.drain', 'kvmtune.fleet.facts',
                             'kvmtune.fleet.verify']
    assert set(roles['kvmtune.fleet.drain']['entry_points']) == \
        {'main', 'enable'}


@needs_ansible
def test_a_tree_is_never_rebooted_by_rebooting_the_machine(
        tmp_path, ansible_on_path):  # noqa: F811
    """The apply role on a host that is a tree (kvmtune_root not /) with
    a reboot pending refuses, before ansible.builtin.reboot, unless
    kvmtune_reboot_command says how the tree reboots."""
    root = hosttrees.make(tmp_path / 'c1', 'debian-12')
    bindir = kvmtune_bin(tmp_path)
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
    done, steps = _play(
        tmp_path, [os.path.join(fleetvenv.BIN, 'ansible-playbook'),
                   '-i', str(inv), '-e', json.dumps(variables), str(play)])
    assert done.returncode == 2, done.stdout[-3000:]
    assert ('c1', 'apply', 'changed') in steps      # staged, written
    assert ('c1', 'reboot', 'failed') in steps
    assert 'rebooting would reboot the machine it lives on' in done.stdout
    assert 'TASK [kvmtune.fleet.apply : Step reboot: a boot-time change ' \
        'is pending]' not in done.stdout


RECORDER = '''import json
import sys

argv = sys.argv[1:]
with open(sys.argv[0] + '.log', 'a') as log:
    log.write(json.dumps(argv) + '\\n')
if argv[1] in ('disable', 'drain', 'enable'):
    print(json.dumps({'changed': True}))
'''


def _tuned_and_untuned(tmp_path):
    """c1: io-tuned has nothing to change there (no boot-time change, no
    nova.conf); c2: a nova.conf io-tuned's options are not in yet."""
    roots = {name: hosttrees.make(tmp_path / name, 'debian-12')
             for name in ('c1', 'c2')}
    conf = roots['c2'] / 'etc/nova/nova.conf'
    conf.parent.mkdir(parents=True)
    conf.write_text('[DEFAULT]\ndebug = false\n')
    controller = tmp_path / 'controller'
    controller.write_text(RECORDER)
    inv = tmp_path / 'hosts.yml'
    inv.write_text(json.dumps({'computes': {
        'hosts': {name: {'kvmtune_root': str(root),
                         'ansible_connection': 'local',
                         'ansible_python_interpreter': sys.executable}
                  for name, root in roots.items()},
        # the operator's per-group settings: no play variable outranks them
        'vars': {'kvmtune_mode': 'in-place', 'kvmtune_os_cloud': 'stand-in',
                 'kvmtune_profile': 'io-tuned',
                 'kvmtune_verify_layers': ['host'],
                 'kvmtune_restart_command': ['true'],
                 'kvmtune_controller_command': [sys.executable,
                                                str(controller)]}}}))
    return roots, conf, controller, inv


@needs_ansible
def test_the_playbook_run_directly_leaves_a_tuned_host_alone(
        tmp_path, ansible_on_path):  # noqa: F811
    """The collection's playbook as an operator runs it, with
    ansible-playbook and an inventory of their own (no kvmtune rollout in
    front): the host with nothing to change is not disabled, drained,
    changed or rebooted, by the play itself; the inventory's group
    variable kvmtune_mode: in-place is honoured (no drain, the preflight
    judges in-place); the other host gets nova.conf, restarted by the
    handler, gated and enabled. A second run changes nothing."""
    roots, conf, controller, inv = _tuned_and_untuned(tmp_path)
    bindir = kvmtune_bin(tmp_path)
    before = hosttrees.snapshot(roots['c1'])
    argv = [os.path.join(fleetvenv.BIN, 'ansible-playbook'), '-i', str(inv),
            '-e', json.dumps({'kvmtune_command': [str(bindir / 'kvmtune')]}),
            playbook.PLAYBOOK]
    done, steps = _play(tmp_path, argv)
    assert done.returncode == 0, done.stdout[-3000:]
    calls = [json.loads(line) for line in
             (tmp_path / 'controller.log').read_text().splitlines()]
    assert not any('c1' in ' '.join(call) for call in calls), calls
    assert [call[1] for call in calls] == ['preflight', 'disable', 'gate',
                                           'enable']
    preflight = calls[0]
    assert preflight[preflight.index('--mode') + 1] == 'in-place'
    assert '--host=c2' in preflight
    assert [s for s in steps if s[0] == 'c1'] == [('c1', 'preflight', 'ok')]
    assert ('c2', 'apply', 'changed') in steps
    assert ('c2', 'restart', 'changed') in steps
    assert ('c2', 'drain', 'skipped') in steps      # in-place: no drain
    assert ('c2', 'enable', 'changed') in steps
    assert 'use_cow_images = false' in conf.read_text()
    assert hosttrees.snapshot(roots['c1']) == before
    # run again: every host has nothing left to change
    (tmp_path / 'controller.log').unlink()
    again, steps = _play(tmp_path, argv)
    assert again.returncode == 0, again.stdout[-3000:]
    assert not (tmp_path / 'controller.log').exists()
    assert not any(status == 'changed' for _, _, status in steps), steps
    assert 'changed=0' in again.stdout.split('PLAY RECAP')[-1]


@needs_ansible
def test_check_mode_names_the_nova_conf_change(tmp_path,
                                               ansible_on_path):  # noqa
    """ansible-playbook --check --diff: the apply step (kvmtune.fleet.host
    in check mode) predicts nova.conf's change and shows its diff, and
    writes nothing."""
    roots, conf, controller, inv = _tuned_and_untuned(tmp_path)
    bindir = kvmtune_bin(tmp_path)
    text = conf.read_text()
    done, steps = _play(tmp_path, [
        os.path.join(fleetvenv.BIN, 'ansible-playbook'), '-i', str(inv),
        '-e', json.dumps({'kvmtune_command': [str(bindir / 'kvmtune')]}),
        '--check', '--diff', playbook.PLAYBOOK])
    assert done.returncode == 0, done.stdout[-3000:]
    assert ('c2', 'apply', 'changed') in steps
    assert '+use_cow_images = false' in done.stdout
    assert conf.read_text() == text
