"""Pure logic of bench local: the accelerator choice, each guest's Row,
the jobs and the network_data.json it writes (the start signal:
test_syncstart.py)."""

import pytest
import re

from kvmtune.bench import local
from kvmtune.bench import qemu
from kvmtune.errors import KvmtuneError
from kvmtune.results import row as rows

PVM = {'kvm_usable': True, 'mechanism': 'pvm', 'nested_mechanism': 'pvm'}


def test_auto_picks_tcg_when_kvm_is_pvm_backed():
    accel, why = qemu.choose_accel('auto', PVM)
    assert accel == 'tcg' and 'pvm' in why
    assert qemu.accel_label(accel) == 'emulated (TCG)'


@pytest.mark.parametrize('mechanism', ['vmx', 'svm'])
def test_auto_picks_kvm_with_hardware_virtualization(mechanism):
    virt = {'kvm_usable': True, 'mechanism': mechanism}
    assert qemu.choose_accel('auto', virt)[0] == 'kvm'


def test_auto_without_usable_kvm():
    assert qemu.choose_accel('auto', {'kvm_usable': False,
                                      'mechanism': None})[0] == 'tcg'


def test_kvm_asked_for_but_unusable_is_an_error():
    with pytest.raises(KvmtuneError, match='not usable'):
        qemu.choose_accel('kvm', {'kvm_usable': False, 'mechanism': None})


def test_kvm_asked_for_on_pvm_is_refused_with_the_reason():
    # PVM's /dev/kvm creates VMs, but stock guests hang under it
    with pytest.raises(KvmtuneError,
                       match=r'^--accel: KVM here is provided by pvm without '
                             r'vmx/svm; stock guest kernels do not boot under '
                             r'it \(fix: use --accel tcg or auto\)$'):
        qemu.choose_accel('kvm', PVM)


@pytest.mark.parametrize('mechanism', ['vmx', 'svm'])
def test_kvm_asked_for_with_hardware_virtualization(mechanism):
    virt = {'kvm_usable': True, 'mechanism': mechanism}
    assert qemu.choose_accel('kvm', virt) == ('kvm', 'asked for')


def test_network_guests_pair_up_server_then_client():
    from kvmtune import workloads
    plan = local._plan(workloads.get('iperf3-tcp-stream'), 4)
    assert plan == [('server', '10.233.0.1/24', None),
                    ('client', '10.233.0.2/24', '10.233.0.1'),
                    ('server', '10.233.0.3/24', None),
                    ('client', '10.233.0.4/24', '10.233.0.3')]
    with pytest.raises(KvmtuneError, match='even number'):
        local._plan(workloads.get('sockperf-tcp-rr'), 3)
    assert local._plan(workloads.get('fio-randread-4k'), 3) == \
        [('client', None, None)] * 3


def test_network_data_for_a_guest_is_novas_static_shape():
    data = qemu.network_data('0a0a0a0a-0000-4000-8000-000000000001',
                             '52:54:00:6b:00:01', '10.233.0.2/24')
    (link,) = data['links']
    (net,) = data['networks']
    assert set(link) == {'id', 'vif_id', 'type', 'mtu',
                         'ethernet_mac_address'}
    assert net['type'] == 'ipv4' and net['link'] == link['id']
    assert (net['ip_address'], net['netmask']) == ('10.233.0.2',
                                                   '255.255.255.0')
    assert net['routes'] == [] and link['mtu'] is None


def test_pinned_guests_get_cpus_of_their_own():
    assert local.pinned_cpus(0, 1, [0, 1]) == [0]
    assert local.pinned_cpus(1, 1, [0, 1]) == [1]
    assert local.pinned_cpus(0, 2, [2, 3, 4, 5]) == [2, 3]
    assert local.pinned_cpus(1, 2, [2, 3, 4, 5]) == [4, 5]
    assert local.pinned_cpus(2, 1, [0, 1]) is None


def test_cpu_and_memory_guests_run_alone():
    from kvmtune import workloads
    assert local._plan(workloads.get('sysbench-cpu'), 2) == \
        [('client', None, None)] * 2


def test_guest_argv_carries_the_compared_settings(tmp_path):
    guest = qemu.Guest(0, '0a0a0a0a-0000-4000-8000-000000000001',
                       str(tmp_path))
    argv = guest.argv('tcg', 1, 256, '/img', '/d/data.qcow2', 'qcow2',
                      'writethrough', bus='virtio-scsi', iothread=False,
                      hugepages='/dev/hugepages', pin=[1])
    assert argv[:3] == ['taskset', '-c', '1']
    line = ' '.join(argv)
    assert 'cache=writethrough' in line and 'format=qcow2' in line
    assert 'virtio-scsi-pci,id=scsi0,addr=0x5' in line
    assert 'scsi-hd,drive=data' in line and 'iothread' not in line
    assert 'memory-backend=ram0' in line
    assert 'mem-path=/dev/hugepages' in line and 'size=256M' in line
    plain = ' '.join(guest.argv('tcg', 1, 256, '/img', '/d/data.raw', 'raw',
                                'none'))
    assert 'virtio-blk-pci,drive=data,iothread=io0' in plain
    assert 'taskset' not in plain and 'mem-path' not in plain


def _guest(workdir, index=0, role='client', text=''):
    """A real Guest (no QEMU) whose console says ``text``."""
    guest = qemu.Guest(index, f'0a0a0a0a-0000-4000-8000-00000000000{index}',
                       str(workdir))
    guest.role = role
    guest.started = 100.0
    _say(guest, text)
    return guest


def _say(guest, text):
    with open(guest.console, 'a') as f:
        f.write(text)


def _status(guest, words):
    return f'KVMTUNE-STATUS {guest.instance_id} {words}\r\n'


def test_jobs_of_the_signal_mode(tmp_path):
    from kvmtune import workloads
    stream = workloads.get('iperf3-tcp-stream')
    client = local._job(stream, 'client', None, '10.233.0.1', None, 5, None,
                        None, 180)
    assert client['start'] == 'nmi' and client['start_at'] is None
    # it gives up by itself after the run would have left it out
    assert client['start_timeout'] == 180 + local.START_TIMEOUT_MARGIN
    # a server starts at once, as in the Rally network scenario
    server = local._job(stream, 'server', None, None, '10.233.0.1/24', 5,
                        None, None, 180)
    assert 'start' not in server and server['start_at'] is None
    # the old mode: everyone carries start_at, nobody waits for an NMI
    at = local._job(workloads.get('fio-randread-4k'), 'client', '/dev/vdb',
                    None, None, 5, None, 1700000000, None)
    assert at['start_at'] == 1700000000 and 'start' not in at


def test_a_guest_never_ready_is_late_and_says_why(tmp_path):
    from kvmtune import workloads
    guest = _guest(tmp_path, text='[    4.1] Run /init as init process\r\n')
    guest.missed = 180
    row = local._measured(guest, workloads.get('fio-randread-4k'), 'tcg').row
    assert row.status == 'late' and row.iops is None
    assert row.reason.startswith('not ready within 180 s of launch: '
                                 'no start signal, not measured')
    assert 'console ends: [    4.1] Run /init' in row.reason
    assert row.accel == 'emulated (TCG)' and row.measuring


def test_a_server_never_serving_is_late(tmp_path):
    from kvmtune import workloads
    guest = _guest(tmp_path, role='server')
    guest.missed = 60
    row = local._measured(guest, workloads.get('sockperf-tcp-rr'), 'tcg').row
    assert (row.status, row.reason) == \
        ('late', 'not serving within 60 s of launch')
    assert not row.measuring


def test_a_failed_signal_is_an_error(tmp_path):
    from kvmtune import workloads
    guest = _guest(tmp_path)
    _say(guest, _status(guest, 'ready uptime=5.0 time=1700000000'))
    guest.signal_error = 'QMP: cannot connect: Connection refused'
    row = local._measured(guest, workloads.get('fio-randread-4k'), 'tcg').row
    assert row.status == 'error'
    assert row.reason == ('no start signal: QMP: cannot connect: '
                          'Connection refused')
    assert row.ready_s == 5.0


def test_ready_and_signalled_but_no_verdict_is_a_timeout(tmp_path):
    from kvmtune import workloads
    guest = _guest(tmp_path)
    _say(guest, _status(guest, 'ready uptime=5.0 time=1700000000'))
    guest.ready_seen, guest.signalled = 106.0, 106.5
    seen = local._measured(guest, workloads.get('fio-randread-4k'), 'tcg')
    # never a status 'ready' row
    assert seen.row.status == 'no-result'
    assert seen.row.reason.startswith('timed out after its start signal '
                                      '(it said ready)')
    assert (seen.row.seen_ready_s, seen.signal_s) == (6.0, 6.5)
    # --json: the Row's columns, and what bench local alone knows
    flat = seen.flat()
    assert list(flat) == ['vm', *rows.COLUMNS, 'signal_s']
    assert (flat['vm'], flat['signal_s']) == (0, 6.5)


def test_times_of_a_started_guest(tmp_path):
    guest = _guest(tmp_path)
    _say(guest, _status(guest, 'ready uptime=5.25 time=1700000000'))
    _say(guest, _status(guest, 'ok ready=5.25 start=9.50 '
                        'start_time=1700000004 end=12.0'))
    guest.ready_seen, guest.signalled = 106.0, 109.25
    assert local._times(guest, guest.console_text()) == {
        'ready_s': 5.25, 'start_s': 9.5, 'seen_ready_s': 6.0,
        'signal_s': 9.25}


def test_start_modes_are_checked_before_anything_boots():
    from kvmtune import workloads
    fio = workloads.get('fio-randread-4k')
    with pytest.raises(KvmtuneError, match='unknown start mode'):
        local.run(fio, local.Settings(vms=1, start='later'))
    with pytest.raises(KvmtuneError, match='for --start at only'):
        local.run(fio, local.Settings(vms=1, start='signal', delay=30))


def _args(*argv):
    import argparse

    from kvmtune.cmd import bench_local
    parser = argparse.ArgumentParser()
    bench_local.add_arguments(parser)
    return parser.parse_args(['--vms', '1', '--workload', 'fio-randread-4k',
                              *argv])


def test_cli_starts_on_the_signal_by_default():
    from kvmtune.cmd import bench_local
    args = _args()
    assert args.start == 'signal' and args.ready_timeout is None
    bench_local._check(args)
    bench_local._check(_args('--start', 'at', '--start-delay', '90'))
    bench_local._check(_args('--ready-timeout', '300'))


@pytest.mark.parametrize('argv,problem', [
    (('--start-delay', '90'), '--start-delay: a start delay is for '
                              '--start at only'),
    (('--start', 'at', '--ready-timeout', '9'), '--ready-timeout: a ready '
                                                'timeout is for --start '
                                                'signal only'),
    (('--ready-timeout', '0'), '--ready-timeout: must be positive'),
])
def test_cli_refuses_options_of_the_other_mode(argv, problem):
    from kvmtune.cmd import bench_local
    with pytest.raises(KvmtuneError, match=f'^{re.escape(problem)}') as caught:
        bench_local._check(_args(*argv))
    assert caught.value.line().startswith(problem)
