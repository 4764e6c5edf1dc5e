"""kvmtune rollout's host side over real SSH: the test fleet's four hosts
(tests/fleet.py: Debian's sshd each, on 127.35.0.2-5, each the tree of a
different real capture with a distribution's boot files), the
kvmtune.fleet collection run by the fleet's ansible-core. No cloud: the
check names the cloud checks it skipped, and the run is --mode stage
(write, reboot nothing); the cloud steps are tests/functional/
test_rollout.py's.

The hosts share this machine's kernel; nothing here reboots anything
(the apply role refuses to reboot a tree host without
kvmtune_reboot_command, tests/unit/rollout/test_playbook.py).
"""

import json
import os
import subprocess
import sys

import pytest

from kvmtune.rollout import check
from kvmtune.rollout import inventory
from tests import fleet as test_fleet
from tests import hosttrees
from tests import paths

FLEET_BIN = os.path.join(os.environ.get(
    'KVMTUNE_CONSUMERS', '/opt/kvmtune-consumers'), 'fleet-venv', 'bin')
NAMES = [f'rollout-{n}' for n in range(1, 5)]


@pytest.fixture(scope='module')
def fleet(tmp_path_factory):
    assert os.access(os.path.join(FLEET_BIN, 'ansible-playbook'), os.X_OK), \
        'run tools/bootstrap --tests (the fleet-venv)'
    hosts = test_fleet.Fleet(tmp_path_factory.mktemp('fleet'), NAMES)
    hosts.start()
    try:
        yield hosts
    finally:
        hosts.stop()


def _env(fleet):
    return {**fleet.ansible_env(),
            'PATH': f'{FLEET_BIN}:{os.environ["PATH"]}',
            'PYTHONPATH': paths.REPO}


def _kvmtune(fleet, *argv):
    return subprocess.run([sys.executable, '-m', 'kvmtune.cli', *argv],
                          capture_output=True, text=True, timeout=900,
                          env=_env(fleet))


def _snapshots(fleet):
    return {h.name: hosttrees.snapshot(h.root) for h in fleet.hosts}


def test_check_over_ssh_is_what_each_tree_says(fleet):
    before = _snapshots(fleet)
    done = _kvmtune(fleet, 'rollout', '--check', '--inventory',
                    str(fleet.inventory()), '--profile', 'cpu-pinning',
                    '--batch', '2', '-f', 'json')
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert [h['host'] for h in doc['hosts']] == NAMES
    assert [b['hosts'] for b in doc['batches']] == [NAMES[:2], NAMES[2:]]
    for found, host in zip(doc['hosts'], fleet.hosts):
        # asked over SSH, the same answer as the tree read here
        here, = check.plan([inventory.Host(host.name, {
            'kvmtune_root': str(host.root), 'ansible_connection': 'local'})],
            'cpu-pinning', path='here').hosts
        assert found['connection'] is None
        assert (found['action'], found['reasons'], found['changes']) == \
            (here.action, here.reasons, here.changes), host.name
        assert found['action'] == 'reboot'
        assert found['reasons']['cmdline'][0].startswith('isolcpus=')
        print(f"{host.name} ({host.capture}): {found['action']}, "
              f"{found['reasons']['cmdline']}")
    assert len(doc['preflight']['cloud_checks_skipped']) == 3
    assert _snapshots(fleet) == before


def test_the_playbook_in_check_mode_over_ssh_changes_nothing(
        fleet, monkeypatch, tmp_path):
    from kvmtune.rollout import events
    from kvmtune.rollout import playbook

    # the fleet's ansible-core for playbook.command's lookup
    monkeypatch.setenv('PATH', _env(fleet)['PATH'])
    before = _snapshots(fleet)
    variables = playbook.extra_vars(profile='cpu-pinning', batch=2,
                                    mode='drain', cloud=None, run_id='chk')
    variables['kvmtune_controller_command'] = ['false']  # no cloud step
    found = tmp_path / 'events.jsonl'
    found.write_text('')
    done = subprocess.run(
        playbook.command(str(fleet.inventory()), 'all', variables)
        + ['--check', '--diff'], capture_output=True, text=True,
        timeout=900, env={**playbook.environment(str(found)), **_env(fleet)})
    assert done.returncode == 0, done.stdout[-3000:]
    with open(found, encoding='utf-8') as lines:
        steps = [(e.host, e.step, e.status) for e in events.read(lines)
                 if e.kind == 'step']
    for name in NAMES:
        assert (name, 'preflight', 'ok') in steps
        assert (name, 'apply', 'changed') in steps     # predicted
        assert (name, 'reboot', 'changed') in steps    # reported only
    assert _snapshots(fleet) == before


def test_stage_writes_each_host_and_reboots_none(fleet):
    booted = {h.name: (h.root / 'proc/cmdline').read_text()
              for h in fleet.hosts}
    argv = ['rollout', '--inventory', str(fleet.inventory()), '--profile',
            'cpu-pinning', '--mode', 'stage', '--batch', '2', '--run-id',
            'stage1']
    done = _kvmtune(fleet, *argv)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    print('\n'.join(lines))
    for host in fleet.hosts:
        mine = [line.split()[1:] for line in lines
                if line.split()[0] == host.name]
        assert mine == [['preflight', 'ok'], ['apply', 'changed'],
                        ['reboot', 'skipped'], ['restart', 'skipped']]
        pending = json.loads((host.root / 'var/lib/kvmtune/'
                              'reboot-required.json').read_text())
        assert pending['reasons']['cmdline'][0].startswith('isolcpus=')
        # staged, not booted
        assert (host.root / 'proc/cmdline').read_text() == \
            booted[host.name]
    again = _kvmtune(fleet, *argv)
    assert again.returncode == 0, again.stdout + again.stderr
    assert {line for line in again.stdout.splitlines() if ' apply ' in line} \
        == {f'{name} apply ok' for name in NAMES}
