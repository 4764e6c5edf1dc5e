"""How bench local's clients start together (design.md 6): the boot
allowance and ready timeout, when a guest said ready or is done, the NMIs
sent back to back, and the whole signal start through QMP."""

import pytest

from kvmtune.bench import syncstart
from kvmtune.errors import KvmtuneError
from tests import hang
from tests.unit.bench.test_local import _guest
from tests.unit.bench.test_local import _say
from tests.unit.bench.test_local import _status


def test_start_delay_grows_with_guests():
    assert syncstart.start_delay('tcg', 4) > \
        syncstart.start_delay('tcg', 1) > syncstart.start_delay('kvm', 1)


def test_ready_timeout_grows_with_guests_and_exceeds_the_allowance():
    assert syncstart.ready_timeout('tcg', 4) > \
        syncstart.ready_timeout('tcg', 1)
    for accel in ('tcg', 'kvm'):
        for vms in (1, 2, 10):
            assert syncstart.ready_timeout(accel, vms) > \
                syncstart.start_delay(accel, vms)


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
    assert syncstart._done(_Running(text)) is done


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


def test_wait_ready_until_all_said_ready_or_serving(tmp_path):
    (tmp_path / 'a').mkdir()
    (tmp_path / 'b').mkdir()
    a = _guest(tmp_path / 'a', text='[    4.1] Run /init\r\n')
    b = _guest(tmp_path / 'b', 1, role='server')
    clock = _Clock(events={
        101.0: lambda: _say(a, _status(a, 'ready uptime=4.5 time=1')),
        103.0: lambda: _say(b, _status(b, 'serving uptime=6.1 time=1'))})
    missing = syncstart._wait_ready([a, b], 200.0, clock=clock,
                                    sleep=clock.sleep)
    assert missing == []
    # seen on the first poll after each said it, the run goes on at once
    assert 101.0 <= a.ready_seen < 101.0 + 2 * syncstart.READY_POLL
    assert 103.0 <= b.ready_seen < 103.0 + 2 * syncstart.READY_POLL
    assert clock.now < 103.0 + 2 * syncstart.READY_POLL


def test_wait_ready_gives_up_at_the_deadline(tmp_path):
    (tmp_path / 'a').mkdir()
    (tmp_path / 'b').mkdir()
    a = _guest(tmp_path / 'a', text='')
    b = _guest(tmp_path / 'b', 1, text='')
    _say(b, _status(b, 'error target /dev/vdb is not a block device here'))
    clock = _Clock()
    missing = syncstart._wait_ready([a, b], 110.0, clock=clock,
                                    sleep=clock.sleep)
    # a verdict before the signal counts as ready: nothing more comes
    assert missing == [a] and b.ready_seen == 100.0
    assert 110.0 <= clock.now < 110.0 + 2 * syncstart.READY_POLL
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
    sent = syncstart._signal([a, b, c, d], clock=lambda: next(times))
    assert log == [('open', 'a'), ('open', 'b'), ('open', 'd'),
                   ('nmi', 'a'), ('nmi', 'b')]
    assert sent == [a, b] and (a.signalled, b.signalled) == (1.0, 1.001)
    assert c.signal_error == 'QMP: cannot connect'
    assert d.signal_error == 'QMP: inject-nmi failed'
    assert all(g.session.closed for g in (a, b, d))


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

    monkeypatch.setattr(syncstart, 'READY_POLL', 0.05)
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
        hang.call(lambda: syncstart.start_on_signal(guests, 3, 600, 1,
                                                    lines.append, 'tcg'))
        # lower bound: it waited the whole ready timeout from the launch
        # its deadline counts from (a slow host only adds to this)
        assert time.monotonic() - launched >= 1.0
        assert guests[2].missed == 1 and guests[2].signalled is None
        assert all(g.signalled >= g.ready_seen for g in ready)
        assert all(syncstart._done(g) for g in ready)
        assert lines[0] == '1 guest(s) not ready within 1 s: left out'
        assert lines[1].startswith('ready ') and \
            'start signal (NMI) to 2 client(s) within' in lines[1]
    finally:
        for thread in threads:
            thread.join(5)
        for listener in listeners:
            listener.close()
        shutil.rmtree(short, ignore_errors=True)
