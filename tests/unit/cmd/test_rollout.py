"""kvmtune rollout: --check's table and strict JSON on capture trees of
an inventory Ansible reads, and the bad inputs as one line, exit 2,
nothing changed (the library: tests/unit/rollout)."""

import json
import os
import sys

import pytest

from kvmtune.boot import record
from kvmtune import cli
from kvmtune import jsonout
from tests import hosttrees
from tests import paths
from tests.unit.rollout.fleetvenv import ansible_on_path  # noqa: F401
from tests.unit.rollout.fleetvenv import needs_ansible

pytestmark = needs_ansible
REPO = paths.REPO


@pytest.fixture
def fleet(tmp_path, ansible_on_path):  # noqa: F811
    """Three capture trees as hosts (local connection), one inventory;
    each needs a reboot for cpu-pinning (c3: the RHEL 9 boot side on the
    EPYC capture, whose CPUs its isolcpus= does not match; on its own
    Intel capture it boots the plan's mask already)."""
    roots = {name: hosttrees.make(tmp_path / name, distro, capture)
             for name, distro, capture in (
                 ('c1', 'debian-12', None), ('c2', 'rhel-7', None),
                 ('c3', 'rhel-9-bls', 'amd-epyc-npt'))}
    inv = tmp_path / 'hosts.ini'
    inv.write_text('[computes]\n' + ''.join(
        f'{name} kvmtune_root={root} ansible_connection=local\n'
        for name, root in roots.items()) + '[other]\nctl\n')
    return inv, roots


def _check(inv, *more):
    return cli.main(['rollout', '--check', '--inventory', str(inv),
                     '--profile', 'cpu-pinning', '--limit', 'computes',
                     *more])


def test_check_json_is_strict_and_plans_every_host(fleet, capsys):
    inv, roots = fleet
    before = {n: hosttrees.snapshot(r) for n, r in roots.items()}
    assert _check(inv, '--batch', '2', '-f', 'json') == 0
    out = capsys.readouterr().out
    doc = json.loads(out)
    # the one strict encoder wrote it (kvmtune.jsonout): same text again
    assert out == jsonout.dumps(doc, source='-f json') + '\n'
    assert [h['host'] for h in doc['hosts']] == ['c1', 'c2', 'c3']
    assert [b['hosts'] for b in doc['batches']] == [['c1', 'c2'], ['c3']]
    c1 = doc['hosts'][0]
    assert (c1['action'], c1['reasons']['cmdline']) == \
        ('reboot', ['isolcpus=2-19'])
    assert all(h['action'] == 'reboot' for h in doc['hosts'])
    assert doc['cloud'] is None
    assert {s['check'] for s in doc['preflight']['cloud_checks_skipped']} \
        == {'nova-service-known', 'preflight-capacity', 'in-place-hold'}
    assert {n: hosttrees.snapshot(r) for n, r in roots.items()} == before


def test_check_table_names_action_reasons_and_skips(fleet, capsys):
    inv, _ = fleet
    assert _check(inv) == 0
    out = capsys.readouterr().out
    row = next(line.split() for line in out.splitlines()
               if line.startswith('1 ') and ' c1 ' in line)
    assert row[:5] == ['1', 'c1', 'reboot', 'cmdline:', 'isolcpus=2-19']
    assert 'skipped (no --os-cloud given): preflight-capacity' in out
    assert out.rstrip().endswith('--check changed nothing')


def _one_line_exit_2(capsys, argv, listed=False):
    """The one error line of exit 2; ``listed``: --check listed every
    host first (a host that does not plan is a row with its reason)."""
    assert cli.main([str(a) for a in argv]) == 2
    out, err = capsys.readouterr()
    assert (out != '') if listed else (out == '')
    assert len(err.splitlines()) == 1 and err.startswith('kvmtune: error: ')
    return (err, out) if listed else err


def _add_small_host(inv, tmp_path):
    """A host whose capture cannot take the profile, in group computes."""
    small = hosttrees.make(tmp_path / 'small', 'debian-12',
                           os.path.join('real', '16amd64-8n2c'))
    inv.write_text(inv.read_text().replace(
        '[other]', f'small kvmtune_root={small} ansible_connection=local\n'
        '[other]'))


def test_a_host_that_does_not_plan(fleet, tmp_path, capsys):
    inv, roots = fleet
    _add_small_host(inv, tmp_path)
    err, out = _one_line_exit_2(capsys, [
        'rollout', '--check', '--inventory', inv, '--profile',
        'pinned-hugepages', '--limit', 'computes'], listed=True)
    assert 'inventory host small: ' in err and 'withheld' in err
    # every host listed: the ones that plan in batches, small with none
    row = next(line.split() for line in out.splitlines()
               if ' small ' in line)
    assert row[:3] == ['-', 'small', 'unplanned']
    assert 'note: small: inventory host small: ' in out
    assert ', 1 unplanned; --check changed nothing' in out


def test_a_missing_root(fleet, capsys):
    inv, _ = fleet
    inv.write_text(inv.read_text().replace(
        '[other]', 'gone kvmtune_root=/nonexistent/tree '
        'ansible_connection=local\n[other]'))
    err, out = _one_line_exit_2(capsys, ['rollout', '--check', '--inventory',
                                         inv, '--profile', 'cpu-pinning',
                                         '--limit', 'computes'], listed=True)
    assert 'inventory host gone: kvmtune_root /nonexistent/tree' in err
    assert any(line.split()[:3] == ['-', 'gone', 'unplanned']
               for line in out.splitlines())


def test_a_bad_inventory_and_an_empty_pattern(fleet, tmp_path, capsys):
    inv, _ = fleet
    bad = tmp_path / 'bad.ini'
    bad.write_text('[computes\nc1 =\n')
    err = _one_line_exit_2(capsys, ['rollout', '--check', '--inventory',
                                    bad, '--profile', 'cpu-pinning'])
    assert 'Ansible cannot read it' in err
    err = _one_line_exit_2(capsys, ['rollout', '--check', '--inventory',
                                    inv, '--profile', 'cpu-pinning',
                                    '--limit', 'nosuch'])
    assert "no host matches 'nosuch'" in err


def test_no_ansible_installed(fleet, tmp_path, monkeypatch, capsys):
    inv, _ = fleet
    empty = tmp_path / 'empty'
    empty.mkdir()
    monkeypatch.setenv('PATH', str(empty))
    monkeypatch.setattr('sys.executable', str(empty / 'python3'))
    err = _one_line_exit_2(capsys, ['rollout', '--check', '--inventory',
                                    inv, '--profile', 'cpu-pinning'])
    assert 'ansible-inventory is not installed' in err
    assert "'.[fleet]'" in err


@pytest.fixture
def kvmtune_on_path(tmp_path, monkeypatch):
    """``kvmtune`` on PATH for the roles: this checkout's, this Python."""
    bindir = tmp_path / 'kvmtune-bin'
    bindir.mkdir()
    script = bindir / 'kvmtune'
    script.write_text(f'#!/bin/sh\nPYTHONPATH={REPO} exec {sys.executable} '
                      '-m kvmtune.cli "$@"\n')
    script.chmod(0o755)
    monkeypatch.setenv('PATH', f'{bindir}:{os.environ["PATH"]}')


def _local_python(inv):
    """The hosts' Python for Ansible's modules: this one."""
    inv.write_text(inv.read_text().replace(
        'ansible_connection=local',
        f'ansible_connection=local ansible_python_interpreter='
        f'{sys.executable}'))


def test_stage_runs_the_playbook_one_line_per_host_and_step(
        fleet, kvmtune_on_path, capsys):
    inv, roots = fleet
    _local_python(inv)
    argv = ['rollout', '--inventory', str(inv), '--profile', 'cpu-pinning',
            '--limit', 'computes', '--mode', 'stage', '--run-id', 'r1',
            '--batch', '2']
    assert cli.main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == 'checked 3 hosts: 3 reboot, 0 restart, 0 unchanged'
    assert out[1].startswith('rollout r1: cpu-pinning on 3 hosts, batches '
                             'of 2, mode stage')
    assert out[-1] == 'rollout r1: done'
    lines = out[2:-1]
    for name in roots:
        mine = [line.split()[1:] for line in lines
                if line.split()[0] == name]
        assert mine == [['preflight', 'ok'], ['apply', 'changed'],
                        ['reboot', 'skipped'], ['restart', 'skipped']], lines
    # staged, not rebooted: the boot files and the reboot record written
    for root in roots.values():
        assert record.pending(str(root))['cmdline']
    # again: nothing left to write
    assert cli.main(argv) == 0
    again = capsys.readouterr().out.splitlines()
    assert {line for line in again if ' apply ' in line} == {
        f'{name} apply ok' for name in roots}


def test_a_bad_host_stops_the_rollout_before_any_host_changes(
        fleet, kvmtune_on_path, tmp_path, capsys):
    """kvmtune rollout plans every host before the playbook starts: a host
    that does not plan, in the last batch, stops it with nothing
    written anywhere (the playbook's own stop at a failed host:
    tests/unit/rollout/test_playbook.py)."""
    inv, roots = fleet
    _add_small_host(inv, tmp_path)
    _local_python(inv)
    before = {n: hosttrees.snapshot(r) for n, r in roots.items()}
    err = _one_line_exit_2(capsys, [
        'rollout', '--inventory', inv, '--profile', 'pinned-hugepages',
        '--limit', 'computes', '--mode', 'stage', '--run-id', 'r2'])
    assert 'inventory host small: ' in err and 'withheld' in err
    assert {n: hosttrees.snapshot(r) for n, r in roots.items()} == before


def test_replan_is_refused_without_a_plan_to_forget(fleet, tmp_path,
                                                    capsys):
    """--replan HOST forgets the plan the run applied to HOST: without
    the state file, with --check, or for a host the run applied no plan
    to, one line, exit 2, nothing disabled or changed."""
    inv, roots = fleet
    before = {n: hosttrees.snapshot(r) for n, r in roots.items()}
    argv = ['rollout', '--inventory', inv, '--profile', 'cpu-pinning',
            '--limit', 'computes', '--mode', 'stage', '--replan', 'c2']
    assert _one_line_exit_2(capsys, argv).endswith(
        "--replan: the plan a run applied is in its state file (fix: give "
        "the rollout's --state FILE)\n")
    assert _one_line_exit_2(capsys, argv + ['--check']).endswith(
        '--replan: --check forgets no plan (fix: run the rollout with '
        '--state and --replan, or --check alone)\n')
    state_file = tmp_path / 'rollout.json'
    assert cli.main([str(a) for a in argv + ['--state', state_file,
                                             '--run-id', 'R9']]) == 2
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        'checked 3 hosts: 3 reboot, 0 restart, 0 unchanged']
    assert err == (f'kvmtune: error: {state_file}: --replan: c2 has no plan '
                   'applied by run R9 that it has not finished (fix: give a '
                   'host the stopped rollout left disabled after its apply '
                   'step, or drop --replan)\n')
    assert {n: hosttrees.snapshot(r) for n, r in roots.items()} == before
