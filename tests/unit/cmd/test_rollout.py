"""kvmtune rollout: --check's table and strict JSON on capture trees of
an inventory Ansible reads, and the bad inputs as one line, exit 2,
nothing changed (the library: tests/unit/rollout)."""

import json
import os

import pytest

from kvmtune import cli
from kvmtune import jsonout
from tests import hosttrees
from tests.unit.rollout.fleetvenv import ansible_on_path  # noqa: F401
from tests.unit.rollout.fleetvenv import needs_ansible

pytestmark = needs_ansible


@pytest.fixture
def fleet(tmp_path, ansible_on_path):  # noqa: F811
    """Three capture trees as hosts (local connection), one inventory."""
    roots = {name: hosttrees.make(tmp_path / name, distro)
             for name, distro in (('c1', 'debian-12'), ('c2', 'rhel-7'),
                                  ('c3', 'rhel-9-bls'))}
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
    assert 'skipped (no --os-cloud): preflight-capacity' in out
    assert out.rstrip().endswith('--check changed nothing')


def _one_line_exit_2(capsys, argv):
    assert cli.main([str(a) for a in argv]) == 2
    out, err = capsys.readouterr()
    assert out == ''
    assert len(err.splitlines()) == 1 and err.startswith('kvmtune: error: ')
    return err


def test_a_host_that_does_not_plan(fleet, tmp_path, capsys):
    inv, roots = fleet
    small = hosttrees.make(tmp_path / 'small', 'debian-12',
                           os.path.join('real', '16amd64-8n2c'))
    inv.write_text(inv.read_text().replace(
        '[other]', f'small kvmtune_root={small} ansible_connection=local\n'
        '[other]'))
    err = _one_line_exit_2(capsys, [
        'rollout', '--check', '--inventory', inv, '--profile',
        'pinned-hugepages', '--limit', 'computes'])
    assert 'inventory host small: ' in err and 'withheld' in err


def test_a_missing_root(fleet, capsys):
    inv, _ = fleet
    inv.write_text(inv.read_text().replace(
        '[other]', 'gone kvmtune_root=/nonexistent/tree '
        'ansible_connection=local\n[other]'))
    err = _one_line_exit_2(capsys, ['rollout', '--check', '--inventory',
                                    inv, '--profile', 'cpu-pinning',
                                    '--limit', 'computes'])
    assert 'inventory host gone: kvmtune_root /nonexistent/tree' in err


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
