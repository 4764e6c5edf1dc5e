"""The main job's exit status and summary: 0 when the experiment ran
whatever the SLA said (the verdict printed), 1 with --strict when an SLA
failed, 2 when a step could not run; quiet stdout that ends with how to
stop the test cloud. The cloud, Rally and the report are stand-ins;
what is decided (profile, counts that fit, lines shown) is the job's."""

import contextlib

import pytest

from kvmtune.errors import CloudError
from kvmtune.mainjob import cloud
from kvmtune.mainjob import compute
from kvmtune.mainjob import job
from kvmtune.mainjob import rallycloud
from kvmtune.mainjob import steps
from kvmtune.mainjob import sweep
from kvmtune.mainjob import testcloud

STOP = 'the test cloud keeps running for the next run; stop it with: ' \
    'kvmtune cloud down'


class FakeCloud:
    """kvmtune.openstack.connection.Cloud as the job uses it."""

    conn = type('Conn', (), {'config': None})()

    def named(self):
        return contextlib.nullcontext()


class FakeRally:
    sla_ok = True

    def __init__(self, state_dir):
        self.dir = f'{state_dir}/rally'
        self.conf = f'{self.dir}/rally.conf'
        self.sla_failures = [] if FakeRally.sla_ok else [
            'm1.bench.baseline: kvmtune_scaling: per-VM share 0.31 < 0.5']

    def use_cloud(self, name, spec):
        return {'environment': 'created', 'replaced': None,
                'database': 'sqlite:///x'}

    # the job's own thread around use_cloud above
    use_cloud_beside = sweep.Rally.use_cloud_beside

    def sweep(self, task, args, out_json, out_html, progress=None):
        FakeRally.args = args
        return 'task-1', FakeRally.sla_ok


@pytest.fixture
def local_job(monkeypatch, tmp_path):
    """The local path with this host's facts and a 1-PCPU compute."""
    from kvmtune.image import build
    from kvmtune.openstack import flavors

    monkeypatch.setattr(build, 'build', lambda *a, **k: {
        'sizes': {'kvmtune-bench.qcow2': 11e6}, 'changed': False})
    monkeypatch.setattr(job, '_baseline_step', lambda *a: None,
                        raising=False)
    monkeypatch.setattr(testcloud, 'start_cloud', lambda: None)
    monkeypatch.setattr(testcloud, 'testcloud_up',
                        lambda installed=False: ('kvmtune-admin',
                                                 'up in 50 s'))
    monkeypatch.setattr(testcloud, 'nova_conf', lambda: '/x/nova-compute.conf')
    monkeypatch.setattr(testcloud, 'nova_python', lambda: None)
    monkeypatch.setattr(testcloud, 'testcloud_emulated', lambda: True)
    monkeypatch.setattr(testcloud, 'stop_hint', lambda: STOP)
    monkeypatch.setattr(cloud, 'upload_image', lambda conn: 'image')
    monkeypatch.setattr(cloud, 'base_flavor', lambda conn: 'flavor')
    monkeypatch.setattr(flavors, 'apply_profile',
                        lambda name, profile, base, **k: f'{base}.{profile}')

    def tune(conn, setup, cloud_name, restart):
        setup.pcpu, setup.summary = 1, '1 PCPU'
        return 1
    monkeypatch.setattr(compute, 'tune_local_compute', tune)
    monkeypatch.setattr(rallycloud, 'rally_spec', lambda config: {})
    monkeypatch.setattr(sweep, 'Rally', FakeRally)
    monkeypatch.setattr(job, '_report_step', lambda *a: (
        'disk sweep fio-randread-4k, flavor m1.bench.baseline\n 1 ...\n',
        {'png': 'p.png', 'html': 'r.html'}))
    monkeypatch.setattr(cloud, 'connect', lambda name: FakeCloud())
    yield str(tmp_path)
    steps.OUT.close()


@pytest.mark.parametrize('sla_ok, strict, rc', [
    (True, False, 0), (False, False, 0), (False, True, 1), (True, True, 0)])
def test_exit_status_and_verdict(local_job, capsys, sla_ok, strict, rc):
    FakeRally.sla_ok = sla_ok
    assert job.run(job.Settings(max_vms=3, state_dir=local_job,
                                strict=strict)) == rc
    lines = capsys.readouterr().out.splitlines()
    assert all(line.startswith('main-job: ') for line in lines)
    assert lines[-1] == 'main-job: ' + STOP
    assert len(lines) < 80
    if sla_ok:
        assert 'main-job: SLA: met' in lines
    else:
        verdict = [line for line in lines if 'SLA: FAILED' in line]
        assert len(verdict) == 1
        assert ('exit 1' if strict else '--strict makes it 1') in verdict[0]
        after = lines[lines.index(verdict[0]) + 1]
        assert 'per-VM share 0.31 < 0.5' in after


def test_tuned_sweep_only_what_fits(local_job, capsys):
    FakeRally.sla_ok = True
    assert job.run(job.Settings(max_vms=3, state_dir=local_job)) == 0
    tuned = 'm1.bench.pinned-hugepages'
    assert FakeRally.args['flavor_max_vms'] == {tuned: 1}
    assert FakeRally.args['emulated'] is True
    out = capsys.readouterr().out
    assert f'main-job: {tuned}: 1 of 3 VMs fit this host (1 PCPU' in out
    assert 'rally sweep: task task-1, m1.bench.baseline 1..3 VMs; ' \
        f'{tuned} 1..1 VMs' in out


def test_a_step_that_cannot_run_exits_2(local_job, monkeypatch, capsys):
    def broken(installed=False):
        raise CloudError('port 5000 is taken', source='keystone',
                         fix='kvmtune cloud status')
    monkeypatch.setattr(testcloud, 'testcloud_up', broken)
    assert job.run(job.Settings(state_dir=local_job)) == 2
    lines = capsys.readouterr().out.splitlines()
    assert lines[-4].startswith('main-job: test cloud: FAILED (')
    assert lines[-3] == ('main-job: error: keystone: port 5000 is taken '
                         '(fix: kvmtune cloud status)')
    assert lines[-2] == ('main-job: stopped; the log has the details: '
                         f'{local_job}/main-job.log')
    assert lines[-1] == 'main-job: ' + STOP


def test_baseline_step_measures_the_bare_host(tmp_path, capsys):
    """The bare host measured with the sweep's workload (real
    sysbench, 1 s), into a baseline file the report and the SLA read."""
    from kvmtune.bench import baseline

    path = job._baseline_step('sysbench-cpu-1t', 1, str(tmp_path))
    assert path == f'{tmp_path}/baseline-sysbench-cpu-1t.json'
    doc = baseline.load(path)
    assert doc['workload'] == 'sysbench-cpu-1t' and doc['runtime'] == 1
    assert doc['result']['events_s'] > 0 and doc['emulated'] is False
    assert doc['record']['kind'] == 'baseline'
    assert doc['record']['accel'] == 'bare'
    line, = [x for x in capsys.readouterr().out.splitlines()
             if x.startswith('main-job: bare-host baseline: ')]
    assert line.startswith('main-job: bare-host baseline: sysbench-cpu-1t '
                           'on this host: ')
    assert 'events/s' in line and path in line


def test_report_step_reports_a_real_sweep(tmp_path, capsys):
    """The report step on the disk sweep the test cloud ran (1, 6, 10
    TCG guests): the table, the PNG and the HTML page."""
    import os

    from tests import paths

    rally_json = os.path.join(paths.FIXTURES, 'outputs',
                              'rally-disk-sweep-1-6-10-signal-tcg.json')
    table, out = job._report_step(rally_json, None, str(tmp_path))
    assert 'per-VM IOPS' in table and '10/10' in table
    with open(out['png'], 'rb') as f:
        assert f.read(8) == b'\x89PNG\r\n\x1a\n'
    with open(out['html'], encoding='utf-8') as f:
        assert 'emulated' in f.read()
    assert 'report: 1 sweep(s) analysed' in capsys.readouterr().out


def test_setup_only_stops_before_the_sweep_with_the_rerun_line(
        local_job, capsys):
    # the re-run line sets a fresh cloud up again (`cloud down`
    # and `up`, a reboot), refreshes plain rally's environment, then
    # sweeps with the job's arguments; --setup-only is its first part
    FakeRally.args = None
    assert job.run(job.Settings(max_vms=2, runtime=5, state_dir=local_job,
                                baseline='/b/base.json',
                                setup_only=True)) == 0
    assert FakeRally.args is None
    lines = capsys.readouterr().out.splitlines()
    rerun = (f'main-job: re-run the sweep by hand: kvmtune main-job '
             f'--max-vms 2 --runtime 5 --baseline /b/base.json --state-dir '
             f'{local_job} --setup-only && kvmtune rally env && rally task '
             'start "$(kvmtune rally task-path disk-scaling)" '
             f'--task-args-file {local_job}/disk-scaling-args.json')
    assert rerun in lines
    assert lines[-1] == 'main-job: ' + STOP
    # the whole job prints the same line
    assert job.run(job.Settings(max_vms=2, runtime=5, state_dir=local_job,
                                baseline='/b/base.json')) == 0
    assert rerun in capsys.readouterr().out.splitlines()


def test_rerun_line_quotes_what_the_shell_would_split():
    line = job.rerun_line(job.Settings(os_cloud='my cloud', max_vms=1,
                                       workload='sysbench-cpu',
                                       emulated=True,
                                       tuned_profile='pinned-hugepages',
                                       config_files=['/etc/k.conf']),
                          args_file='/s d/args.json')
    assert line == (
        "kvmtune --config-file /etc/k.conf main-job --os-cloud 'my cloud' "
        '--max-vms 1 --workload sysbench-cpu --tuned-profile '
        'pinned-hugepages --emulated --setup-only && kvmtune --config-file '
        "/etc/k.conf rally env --os-cloud 'my cloud' && rally task start "
        '"$(kvmtune rally task-path disk-scaling)" --task-args-file '
        "'/s d/args.json'")


def test_the_cloud_installs_and_comes_up_while_the_image_builds(
        local_job, monkeypatch, capsys):
    """The bare host is measured first, quiet; then the cloud's install
    (apt, venv) and its bring-up run beside the image build. Each
    stand-in waits for the other to have started: run one after the
    other, the first would give up and the job fail."""
    from concurrent.futures import ThreadPoolExecutor
    import threading

    from kvmtune.image import build

    started = {'cloud': threading.Event(), 'image': threading.Event()}
    order = []

    def install_and_up():
        started['cloud'].set()
        assert started['image'].wait(60), 'image build never started'
        order.append('cloud up')
        return {'seconds': 3.2, 'phases': {}, 'changed': ['venv /x'],
                'cloud': ('kvmtune-admin', 'up in 50 s')}

    def start_cloud():
        assert order == ['baseline'], order
        pool = ThreadPoolExecutor(max_workers=1)
        future = pool.submit(install_and_up)
        pool.shutdown(wait=False)
        return future

    def image(*args, **kwargs):
        started['image'].set()
        assert started['cloud'].wait(60), 'cloud never started'
        order.append('image done')
        return {'sizes': {'kvmtune-bench.qcow2': 11e6}, 'changed': True}

    def baseline(*args):
        order.append('baseline')

    def testcloud_up(installed=False):
        raise AssertionError('the cloud came up beside the image build')

    monkeypatch.setattr(testcloud, 'start_cloud', start_cloud)
    monkeypatch.setattr(build, 'build', image)
    monkeypatch.setattr(job, '_baseline_step', baseline)
    monkeypatch.setattr(testcloud, 'testcloud_up', testcloud_up)
    FakeRally.sla_ok = True
    assert job.run(job.Settings(max_vms=3, state_dir=local_job)) == 0
    assert order[0] == 'baseline'
    assert sorted(order[1:]) == ['cloud up', 'image done']
    out = capsys.readouterr().out
    assert 'main-job: test cloud install: 3 s beside the image build ' \
        '(venv /x) (' in out
    assert 'main-job: test cloud: up in 50 s (beside the image build) (' \
        in out
    steps_said = [line.split(':')[1].strip() for line in out.splitlines()]
    assert steps_said.index('tuned profile') < \
        steps_said.index('benchmark image') < \
        steps_said.index('test cloud install') < \
        steps_said.index('test cloud')
