"""Pure logic of bench local: the accelerator choice, each guest's Row,
when a client is done, the network_data.json it writes."""

import pytest
import re

from kvmtune.bench import local
from kvmtune.bench import qemu
from kvmtune.errors import KvmtuneError
from kvmtune.results import row as rows
from tests import hang

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


def test_start_delay_grows_with_guests():
    assert local.start_delay('tcg', 4) > local.start_delay('tcg', 1) > \
        local.start_delay('kvm', 1)


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


class _Running:
    """A guest whose QEMU still runs, with this console text."""
    instance_id = '0a0a0a0a-0000-4000-8000-000000000001'

    def __init__(self, text):
        self.text = text

    def poll(self):
        return None

    def console_text(self):
        return self.text


@pytest.mark.parametrize('text,done', [
    ('', False),
    ('KVMTUNE-STATUS 0a0a0a0a-0000-4000-8000-000000000001 serving\r\n',
     False),
    # a held guest stays up after its verdict: waiting for it to exit
    # would hang until the deadline
    ('KVMTUNE-STATUS 0a0a0a0a-0000-4000-8000-000000000001 error refusing '
     '/dev/vda: it holds this image\r\n', True),
    ('KVMTUNE-STATUS 0a0a0a0a-0000-4000-8000-000000000001 ok\r\n', True),
])
def test_a_client_is_done_at_its_verdict_or_exit(text, done):
    assert local._done(_Running(text)) is done


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


# --- the start signal (design.md 6) -------------------------------------

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


class _Clock:
    """A fake monotonic clock that sleep() moves, running ``events``
    ({time: callable}) once their time has come."""

    def __init__(self, now=100.0, events=None):
        self.now = now
        self.events = dict(events or {})
        self.slept = 0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.slept += 1
        self.now += seconds
        for when in sorted(self.events):
            if when <= self.now:
                self.events.pop(when)()


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


def test_wait_ready_until_all_said_ready_or_serving(tmp_path):
    (tmp_path / 'a').mkdir()
    (tmp_path / 'b').mkdir()
    a = _guest(tmp_path / 'a', text='[    4.1] Run /init\r\n')
    b = _guest(tmp_path / 'b', 1, role='server')
    clock = _Clock(events={
        101.0: lambda: _say(a, _status(a, 'ready uptime=4.5 time=1')),
        103.0: lambda: _say(b, _status(b, 'serving uptime=6.1 time=1'))})
    missing = local._wait_ready([a, b], 200.0, clock=clock,
                                sleep=clock.sleep)
    assert missing == []
    # seen on the first poll after each said it, the run goes on at once
    assert 101.0 <= a.ready_seen < 101.0 + 2 * local.READY_POLL
    assert 103.0 <= b.ready_seen < 103.0 + 2 * local.READY_POLL
    assert clock.now < 103.0 + 2 * local.READY_POLL


def test_wait_ready_gives_up_at_the_deadline(tmp_path):
    (tmp_path / 'a').mkdir()
    (tmp_path / 'b').mkdir()
    a = _guest(tmp_path / 'a', text='')
    b = _guest(tmp_path / 'b', 1, text='')
    _say(b, _status(b, 'error target /dev/vdb is not a block device here'))
    clock = _Clock()
    missing = local._wait_ready([a, b], 110.0, clock=clock,
                                sleep=clock.sleep)
    # a verdict before the signal counts as ready: nothing more comes
    assert missing == [a] and b.ready_seen == 100.0
    assert 110.0 <= clock.now < 110.0 + 2 * local.READY_POLL
    assert getattr(a, 'ready_seen', None) is None


class _Session:
    def __init__(self, log):
        self.log = log
        self.closed = False

    def close(self):
        self.closed = True


class _Signalled:
    """A guest whose QMP works, or fails with ``fail`` at ``where``."""

    def __init__(self, name, log, fail=None, where=None):
        self.name, self.log, self.fail, self.where = name, log, fail, where
        self.session = None
        self.signalled = self.signal_error = None     # as qemu.Guest's

    def qmp(self):
        if self.where == 'connect':
            raise KvmtuneError(self.fail)
        self.session = _Session(self.log)
        self.log.append(('open', self.name))
        return self.session

    def inject_nmi(self, session):
        assert session is self.session and not session.closed
        if self.where == 'nmi':
            raise KvmtuneError(self.fail)
        self.log.append(('nmi', self.name))


def test_signal_opens_every_session_then_sends_the_nmis_back_to_back():
    log = []
    a, b = _Signalled('a', log), _Signalled('b', log)
    c = _Signalled('c', log, 'QMP: cannot connect', 'connect')
    d = _Signalled('d', log, 'QMP: inject-nmi failed', 'nmi')
    times = iter([1.0, 1.001])
    sent = local._signal([a, b, c, d], clock=lambda: next(times))
    assert log == [('open', 'a'), ('open', 'b'), ('open', 'd'),
                   ('nmi', 'a'), ('nmi', 'b')]
    assert sent == [a, b] and (a.signalled, b.signalled) == (1.0, 1.001)
    assert c.signal_error == 'QMP: cannot connect'
    assert d.signal_error == 'QMP: inject-nmi failed'
    assert all(g.session.closed for g in (a, b, d))


def test_a_guest_never_ready_is_late_and_says_why(tmp_path):
    from kvmtune import workloads
    guest = _guest(tmp_path, text='[    4.1] Run /init as init process\r\n')
    guest.missed = 180
    row = local._verdict(guest, workloads.get('fio-randread-4k'), 'tcg').row
    assert row.status == 'late' and row.iops is None
    assert row.reason.startswith('not ready within 180 s of launch: '
                                 'no start signal, not measured')
    assert 'console ends: [    4.1] Run /init' in row.reason
    assert row.accel == 'emulated (TCG)' and row.measuring


def test_a_server_never_serving_is_late(tmp_path):
    from kvmtune import workloads
    guest = _guest(tmp_path, role='server')
    guest.missed = 60
    row = local._verdict(guest, workloads.get('sockperf-tcp-rr'), 'tcg').row
    assert (row.status, row.reason) == \
        ('late', 'not serving within 60 s of launch')
    assert not row.measuring


def test_a_failed_signal_is_an_error(tmp_path):
    from kvmtune import workloads
    guest = _guest(tmp_path)
    _say(guest, _status(guest, 'ready uptime=5.0 time=1700000000'))
    guest.signal_error = 'QMP: cannot connect: Connection refused'
    row = local._verdict(guest, workloads.get('fio-randread-4k'), 'tcg').row
    assert row.status == 'error'
    assert row.reason == ('no start signal: QMP: cannot connect: '
                          'Connection refused')
    assert row.ready_s == 5.0


def test_ready_and_signalled_but_no_verdict_is_a_timeout(tmp_path):
    from kvmtune import workloads
    guest = _guest(tmp_path)
    _say(guest, _status(guest, 'ready uptime=5.0 time=1700000000'))
    guest.ready_seen, guest.signalled = 106.0, 106.5
    seen = local._verdict(guest, workloads.get('fio-randread-4k'), 'tcg')
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


def test_start_on_signal_through_qmp(tmp_path, monkeypatch):
    """Two clients and a guest that never boots: the ready ones get their
    NMI over their QMP socket (fake QEMUs that then print the verdict),
    the other is left out, and nothing waits for the runtime."""
    import json
    import os
    import shutil
    import socket
    import tempfile
    import threading
    import time

    monkeypatch.setattr(local, 'READY_POLL', 0.05)
    short = tempfile.mkdtemp(prefix='sig', dir='/tmp')
    threads, listeners = [], []
    try:
        guests = []
        for index in range(3):
            workdir = f'{short}/vm{index}'
            os.makedirs(workdir)
            guest = _guest(workdir, index)
            guest.started = time.monotonic()
            guests.append(guest)
        ready = guests[:2]

        def fake_qemu(guest, listener):
            conn, _ = listener.accept()
            with conn, conn.makefile('rwb') as stream:
                stream.write(b'{"QMP": {"version": {}, "capabilities": []}}'
                             b'\r\n')
                stream.flush()
                for _ in range(2):
                    request = json.loads(stream.readline())
                    if request['execute'] == 'inject-nmi':
                        _say(guest, _status(guest, 'ok ready=5.0 '
                                            'start=7.0 end=9.0'))
                    stream.write(json.dumps({'return': {}, 'id': request[
                        'id']}).encode() + b'\r\n')
                    stream.flush()

        for guest in ready:
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(guest.qmp_path)
            listener.listen(1)
            listeners.append(listener)
            thread = threading.Thread(target=fake_qemu,
                                      args=(guest, listener), daemon=True)
            thread.start()
            threads.append(thread)
            _say(guest, _status(guest, 'ready uptime=5.0 time=1'))
        lines = []
        launched = min(g.started for g in guests)
        # ready timeout 1 s, then the verdicts came at once: had it waited
        # the runtime (600 s), the guard would fail the test
        hang.call(lambda: local._start_on_signal(guests, 3, 600, 1,
                                                 lines.append))
        # lower bound: it waited the whole ready timeout from the launch
        # its deadline counts from (a slow host only adds to this)
        assert time.monotonic() - launched >= 1.0
        assert guests[2].missed == 1 and guests[2].signalled is None
        assert all(g.signalled >= g.ready_seen for g in ready)
        assert all(local._done(g) for g in ready)
        assert lines[0] == '1 guest(s) not ready within 1 s: left out'
        assert lines[1].startswith('ready ') and \
            'start signal (NMI) to 2 client(s) within' in lines[1]
    finally:
        for thread in threads:
            thread.join(5)
        for listener in listeners:
            listener.close()
        shutil.rmtree(short, ignore_errors=True)


def test_start_modes_are_checked_before_anything_boots():
    from kvmtune import workloads
    fio = workloads.get('fio-randread-4k')
    with pytest.raises(KvmtuneError, match='unknown start mode'):
        local.run(fio, 1, start='later')
    with pytest.raises(KvmtuneError, match='for --start at only'):
        local.run(fio, 1, start='signal', delay=30)


def test_ready_timeout_grows_with_guests_and_exceeds_the_allowance():
    assert local.ready_timeout('tcg', 4) > local.ready_timeout('tcg', 1)
    for accel in ('tcg', 'kvm'):
        for vms in (1, 2, 10):
            assert local.ready_timeout(accel, vms) > \
                local.start_delay(accel, vms)


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
