"""``kvmtune main-job``: its arguments, checked before anything runs, and
handed to kvmtune.mainjob.job.run as plain values (the job itself:
tests/unit/mainjob/ and tests/functional/test_mainjob.py)."""

import dataclasses

import pytest

from kvmtune import cli
from kvmtune.mainjob import job


@pytest.fixture
def calls(monkeypatch):
    """job.run stands in: the command is only the plumbing to it."""
    seen = []

    def run(settings):
        seen.append(dataclasses.asdict(settings))
        return 1
    monkeypatch.setattr(job, 'run', run)
    return seen


def test_compute_facts_only_with_os_cloud(calls, capsys):
    assert cli.main(['main-job', '--compute-facts', 'x.json']) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and '--compute-facts goes with --os-cloud' in err[0]
    assert calls == []


@pytest.mark.parametrize('count', ['0', '-1'])
def test_max_vms_below_one_is_refused(count, calls, capsys):
    assert cli.main(['main-job', '--max-vms', count]) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and f'{count} is no VM count' in err
    assert calls == []


def test_the_arguments_reach_the_job_and_its_status_is_the_exit(
        calls, tmp_path):
    conf = tmp_path / 'kvmtune.conf'
    conf.write_text('[DEFAULT]\n')
    assert cli.main(['--config-file', str(conf), 'main-job', '--os-cloud',
                     'lab', '--compute-facts', 'c.json', '--max-vms', '5',
                     '--workload', 'sysbench-cpu', '--runtime', '7',
                     '--baseline', 'b.json', '--emulated',
                     '--tuned-profile', 'cpu-pinning', '--state-dir',
                     str(tmp_path), '--strict', '--verbose',
                     '--setup-only']) == 1
    assert calls == [dict(
        os_cloud='lab', compute_facts='c.json', max_vms=5,
        workload='sysbench-cpu', runtime=7, baseline='b.json',
        emulated=True, tuned_profile='cpu-pinning',
        state_dir=str(tmp_path), strict=True, verbose=True,
        config_files=[str(conf)], setup_only=True)]


def test_defaults(calls):
    from kvmtune.cmd import main_job

    assert cli.main(['main-job']) == 1
    (kwargs,) = calls
    assert kwargs['os_cloud'] is None
    assert (kwargs['max_vms'], kwargs['workload'], kwargs['runtime']) == (
        3, 'fio-randread-4k', None)
    assert kwargs['tuned_profile'] is None
    assert kwargs['state_dir'] == main_job.DEFAULT_STATE_DIR
    assert not (kwargs['strict'] or kwargs['setup_only'] or
                kwargs['emulated'])
