"""``kvmtune rollout-step``: each step prints what it did (table or -f
json), a host Nova does not know and a cloud without credentials are one
line and exit 2 with nothing disabled, a gate that does not pass exits 1
(a model of Nova's API, tests/unit/rollout/test_steps.py; the real cloud
in tests/functional/test_rollout.py)."""

import json
import os
import shutil

import pytest

from kvmtune import cli
from kvmtune.openstack import connection
from tests import paths
from tests.unit.rollout.fakenova import server
from tests.unit.rollout.test_steps import Cloud


@pytest.fixture
def cloud(monkeypatch):
    model = Cloud([server('a', 'compute-0000'),
                   server('s', 'compute-0000', 'SHUTOFF')])
    monkeypatch.setattr(connection.Cloud, 'connect',
                        classmethod(lambda cls, name: model))
    return model


def step(*argv):
    return cli.main(['rollout-step', *argv, '--os-cloud', 'model',
                     '--run-id', 'R1'])


def test_disable_drain_enable_in_json(cloud, capsys):
    assert step('disable', '--host', 'compute-0000', '--profile', 'p',
                '-f', 'json') == 0
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc['changed'] and doc['service']['disabled_reason'] == \
        'kvmtune rollout R1: p'
    assert err == "disable compute-0000: disabled ('kvmtune rollout R1: " \
                  "p')\n"
    assert step('drain', '--host', 'compute-0000', '--timeout', '30',
                '-f', 'json') == 0
    moves = json.loads(capsys.readouterr().out)['moves']
    assert [(m['id'], m['action'], m['status_after']) for m in moves] == [
        ('a', 'live-migrate', 'ACTIVE'), ('s', 'cold-migrate', 'SHUTOFF')]
    assert step('enable', '--host', 'compute-0000') == 0
    assert capsys.readouterr().out == 'enable compute-0000: enabled\n'


def test_an_unknown_host_is_one_line_exit_2_nothing_disabled(cloud,
                                                             capsys):
    assert step('disable', '--host', 'nosuch', '--profile', 'p') == 2
    out, err = capsys.readouterr()
    assert out == '' and len(err.splitlines()) == 1
    assert "Nova knows no nova-compute on host 'nosuch'" in err
    assert cloud.writes == []


def test_no_credentials_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
    empty = tmp_path / 'clouds.yaml'
    empty.write_text('clouds: {}\n')
    monkeypatch.setenv('OS_CLIENT_CONFIG_FILE', str(empty))
    assert step('disable', '--host', 'c2', '--profile', 'p') == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and 'model' in err
    assert err.startswith('kvmtune: error: clouds.yaml: model: ')


def test_one_host_per_step_but_preflight(cloud, capsys):
    assert step('drain', '--host', 'compute-0000', '--host',
                'compute-0001') == 2
    assert 'drain takes one host' in capsys.readouterr().err


CAPTURE = os.path.join(paths.HOSTS, 'real', '32intel64-2p8co2t+8ve')


def test_the_gate_holds_a_host_not_booted_as_planned(cloud, capsys):
    assert step('gate', '--host', 'compute-0000', '--profile',
                'cpu-pinning', '--root', CAPTURE, '--layer', 'host') == 1
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith('gate compute-0000: host cmdline isolcpus: '
                           'expected isolcpus=')
    assert 'live absent; the host stays disabled (fix: ' in last


def test_the_gate_passes_a_host_booted_as_planned(cloud, capsys,
                                                  tmp_path):
    # the capture, booted with the plan's kernel arguments
    root = tmp_path / 'host'
    shutil.copytree(CAPTURE, root, symlinks=True)
    assert cli.main(['plan', '--profile', 'cpu-pinning', '--root',
                     str(root), '-f', 'json']) == 0
    args = json.loads(capsys.readouterr().out)['kernel_args']
    cmdline = root / 'proc' / 'cmdline'
    cmdline.write_text(cmdline.read_text().strip() + ' ' + ' '.join(args)
                       + '\n')
    assert step('gate', '--host', 'compute-0000', '--profile',
                'cpu-pinning', '--root', str(root), '--layer', 'host',
                '-f', 'json') == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc['passed'] and doc['checks']
    assert {c['status'] for c in doc['checks']} == {'PASS'}


def test_record_plan_takes_the_plan_from_standard_input_without_a_cloud(
        tmp_path, capsys, monkeypatch):
    """rollout-step record-plan, as the apply role runs it on the controller:
    the plan boot apply printed, on standard input, recorded in the
    state file; no --os-cloud. A cloud step without it: one line."""
    import io

    from kvmtune.rollout import state

    assert cli.main(['plan', '--profile', 'cpu-pinning', '--root', CAPTURE,
                     '-f', 'json']) == 0
    made = json.loads(capsys.readouterr().out)
    monkeypatch.setattr('sys.stdin', io.TextIOWrapper(io.BytesIO(
        json.dumps(made).encode())))
    path = tmp_path / 'rollout.json'
    assert cli.main(['rollout-step', 'record-plan', '--host', 'compute-0000',
                     '--run-id', 'R1', '--profile', 'cpu-pinning',
                     '--state', str(path), '--plan', '-']) == 0
    assert capsys.readouterr().out == (
        'record-plan compute-0000: the plan of cpu-pinning applied, '
        'recorded in run R1\n')
    assert state.load(str(path)).applied('compute-0000') == made
    assert cli.main(['rollout-step', 'drain', '--host', 'compute-0000',
                     '--run-id', 'R1']) == 2
    assert capsys.readouterr().err == (
        'kvmtune: error: --os-cloud: drain reads or changes the cloud (fix: '
        'give --os-cloud CLOUD (clouds.yaml))\n')
