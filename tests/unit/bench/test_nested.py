"""bench nested's pure parts on a real L1 console (tests/fixtures/outputs/
console-tcg-nested-l1-*.log: the nested image under QEMU TCG with
-cpu EPYC,+svm,+npt on the development machine, 2026-11-25), and its
table in the seed's shape."""

import os

import pytest

from kvmtune.errors import KvmtuneError

from kvmtune.bench import nested
from kvmtune.bench import qemu
from kvmtune.results import verdict
from kvmtune import workloads
from kvmtune.workloads import guestjob as jobs
from tests import paths

OUTPUTS = os.path.join(paths.FIXTURES, 'outputs')
L1_OK = '11111111-2222-3333-4444-555555555555'


def read(name):
    with open(os.path.join(OUTPUTS, name), 'rb') as f:
        return f.read().decode('utf-8', 'surrogateescape')


def test_l1_console_says_svm_kvm_amd_and_l2_ran():
    text = read('console-tcg-nested-l1-sysbench-cpu.log')
    said = nested.nested_said(text, L1_OK)
    assert said['svm'] == 'present'
    assert said['module'] == 'kvm_amd' and said['loaded'] == 'yes'
    assert said['nested'] == '1' and said['npt'] == 'Y'
    assert said['kvm'] == '/dev/kvm'
    assert said['l2'] == 'ok' and said['l2_accel'] == 'kvm'
    row = verdict.console_row(text, L1_OK, 'client', 'sysbench-cpu',
                              emulated=False)
    assert row.ok and row.events_s == 72.53
    assert row.emulated is True     # L1 said accel=tcg


def test_nothing_said_is_empty():
    assert nested.nested_said('KVMTUNE-STATUS x ok\n', 'x') == {}
    assert nested.nested_said(None, 'x') == {}


def test_guest_argv_level_and_cpu(tmp_path):
    guest = qemu.Guest(2, L1_OK, str(tmp_path))
    job = jobs.build(workloads.get('sysbench-cpu'), runtime=5)
    argv = nested.guest_argv(guest, 2, 'tcg', nested.TCG_CPU, 1, 1024,
                             str(tmp_path), None, job)
    assert argv[argv.index('-cpu') + 1] == 'EPYC,+svm,+npt'
    append = argv[argv.index('-append') + 1]
    assert 'kvmtune.level=2 kvmtune.job=' in append
    kvm = nested.guest_argv(guest, 1, 'kvm', nested.TCG_CPU, 1, 1024,
                            str(tmp_path), None, job)
    assert kvm[kvm.index('-cpu') + 1] == 'host'
    assert 'EPYC,+svm,+npt' not in kvm


def _run(level, status='ok', **figures):
    """A level of the run document: its Row, flat (one unit set)."""
    row = {'status': status, 'reason': '' if status == 'ok' else 'why',
           **figures}
    return {'level': level, 'row': row, 'nested': {}}


def test_table_has_the_seeds_shape_and_the_article():
    doc = {'workload': 'sysbench-cpu', 'runtime': 10, 'vcpus': 1,
           'l1_cpu': 'EPYC,+svm,+npt', 'emulated': True, 'wall_s': 300.0,
           'runs': [_run('host', events_s=1000.0, lat_mean_ns=1e6),
                    _run('L1', events_s=400.0, lat_mean_ns=2.5e6),
                    _run('L2', events_s=100.0, lat_mean_ns=1e7)]}
    lines = nested.table(doc)
    assert 'emulated' in lines[0] and 'emulated' in lines[-1]
    rows = {line.split()[0]: line.split() for line in lines[2:5]}
    assert rows['host'][1] == '1,000' and rows['host'][-1] == '1,185'
    assert rows['L2'][1] == '100' and rows['L2'][-1] == '583'
    # latency: the Row's nanoseconds, printed in microseconds
    assert rows['L1'][2] == '2,500' and lines[1].split()[:4] == [
        'events/s', 'lat', 'mean', 'us']
    vs = [line for line in lines if line.startswith('L2 vs L1')][0]
    assert vs.split()[3:] == ['-75.0%', '+300.0%', '-24.4%']
    assert lines[-1].startswith('3/3 cells valid; wall time 300 s')


def test_table_names_an_invalid_cell_and_its_reason():
    doc = {'workload': 'fio-randread-4k', 'runtime': 10, 'vcpus': 1,
           'l1_cpu': 'EPYC,-svm', 'emulated': True, 'wall_s': 80.0,
           'runs': [_run('L1', iops=4000.0, bw_bytes_s=15.6 * 1048576),
                    _run('L2', status='error')]}
    lines = nested.table(doc)
    assert 'L2: error: why' in lines
    assert lines[-1].startswith('1/2 cells valid')
    assert lines[1].split()[:2] == ['IOPS', 'MiB/s']
    assert lines[2].split()[:3] == ['host', '-', '-']
    assert lines[3].split()[:3] == ['L1', '4,000', '15.6']


def _capture_console(data, instance='x', size=None, digest=None):
    import base64
    import hashlib
    size = len(data) if size is None else size
    digest = digest or hashlib.sha256(data).hexdigest()
    body = base64.encodebytes(data).decode()
    return (f'KVMTUNE-CAPTURE-BEGIN {instance} {size} {digest}\r\n'
            + body.replace('\n', '\r\n')
            + f'KVMTUNE-CAPTURE-END {instance}\r\n')


def test_capture_archive_verified():
    data = bytes(range(256)) * 40
    assert nested.capture_archive(_capture_console(data), 'x') == data


@pytest.mark.parametrize('text,words', [
    ('nothing', 'no KVMTUNE-CAPTURE-BEGIN'),
    (_capture_console(b'abc', size=4), 'does not match'),
    (_capture_console(b'abc', digest='0' * 64), 'does not match'),
])
def test_capture_archive_refused(text, words):
    with pytest.raises(KvmtuneError) as exc:
        nested.capture_archive(text, 'x')
    assert words in exc.value.line()


NESTED_L1 = os.path.join(paths.HOSTS, 'nested-l1-tcg-svm')


def test_host_inspect_in_l1_says_svm_kvm_amd_nested_not_pvm():
    """kvmtune host inspect on the capture bench nested --capture-l1 made
    inside an L1 guest (tests/fixtures/hosts/README.md)."""
    from kvmtune import facts as host_facts

    virt = host_facts.resolve(root=NESTED_L1)['virt']
    assert virt['mechanism'] == 'svm' and virt['nested_mechanism'] == 'svm'
    assert virt['nested'] is True and virt['ept'] is True
    assert virt['kvm_device'] is True and virt['kvm_usable'] is True
    assert virt['modules']['kvm_amd']['nested'] == '1'
    assert virt['modules']['kvm_pvm'] is None
    assert virt['is_guest'] is True


def test_nested_host_plan_in_l1_is_a_kvm_hosts():
    """L1 runs its guests on KVM: the profile passes its CPU through and
    keeps kvm_amd nested=1, as on any AMD-V host."""
    from kvmtune.tuning import plan as plans

    (plan,) = plans.for_host(['nested-host'], root=NESTED_L1)
    assert plan.nova_conf['libvirt']['cpu_mode'] == 'host-passthrough'
    assert plan.modprobe == {plans.MODPROBE_PATH:
                             'options kvm_amd nested=1\n'}
    (check,) = [c for c in plan.checks if c.name == 'nested-enabled']
    assert check.status == 'pass' and 'kvm_amd' in check.message


def test_table_columns_follow_the_workload_not_the_valid_rows():
    """A CPU run whose only row failed keeps the CPU columns (as bench
    nested --levels L2 --l1-cpu EPYC,-svm printed, 2026-11-25)."""
    doc = {'workload': 'sysbench-cpu', 'runtime': 5, 'vcpus': 1,
           'l1_cpu': 'EPYC,-svm', 'emulated': True, 'wall_s': 47.2,
           'runs': [_run('L2', status='error')]}
    lines = nested.table(doc)
    assert lines[1].split()[:3] == ['events/s', 'lat', 'mean']
    assert 'UnixBench' in lines[1]
    assert lines[-1].startswith('0/1 cells valid')
    assert nested.figure_kind('sysbench-memory-read') == 'memory'
