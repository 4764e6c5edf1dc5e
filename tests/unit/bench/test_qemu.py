"""kvmtune.bench.qemu: a guest's QEMU command line and the QMP exchange of
its start signal, against a fake QMP server on a unix socket."""

import json
import shutil
import socket
import tempfile
import threading

import pytest

from kvmtune.bench import qemu
from kvmtune.errors import KvmtuneError

ID = '0a0a0a0a-0000-4000-8000-000000000001'
GREETING = {'QMP': {'version': {'qemu': {'major': 7, 'minor': 2,
                                         'micro': 22}},
                    'capabilities': ['oob']}}


@pytest.fixture
def workdir():
    # short: a unix socket path must fit in 108 bytes, tmp_path may not
    path = tempfile.mkdtemp(prefix='qmp', dir='/tmp')
    yield path
    shutil.rmtree(path, ignore_errors=True)


def ok(request):
    return [{'return': {}, 'id': request['id']}]


class FakeQmp(threading.Thread):
    """Serves one connection as QEMU's QMP would: the greeting (unless
    None), then for each request line the lines ``replies[i](request)``
    gives (None: hang up). Keeps the requests it read."""

    def __init__(self, path, replies, greeting=GREETING):
        super().__init__(daemon=True)
        self.replies = list(replies)
        self.greeting = greeting
        self.requests = []
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(1)
        self.start()

    def run(self):
        conn, _ = self.listener.accept()
        with conn, conn.makefile('rwb') as stream:
            if self.greeting is not None:
                self._send(stream, [self.greeting])
            for reply in self.replies:
                line = stream.readline()
                if not line:
                    return
                request = json.loads(line)
                self.requests.append(request)
                lines = reply(request)
                if lines is None:
                    return
                self._send(stream, lines)
            stream.readline()   # until the client closes

    @staticmethod
    def _send(stream, messages):
        for message in messages:
            data = message if isinstance(message, bytes) else \
                json.dumps(message).encode()
            stream.write(data + b'\r\n')   # QEMU ends its lines so
        stream.flush()

    def close(self):
        self.join(5)
        self.listener.close()


def test_argv_has_a_qmp_socket_in_the_workdir_and_no_monitor(workdir):
    guest = qemu.Guest(0, ID, workdir)
    argv = guest.argv('tcg', 1, 256, '/img', None, 'raw', 'none')
    assert guest.qmp_path == f'{workdir}/qmp.sock'
    assert argv[argv.index('-qmp') + 1] == \
        f'unix:{workdir}/qmp.sock,server=on,wait=off'
    # the human monitor stays off: QMP is the only one
    assert argv[argv.index('-monitor') + 1] == 'none'
    assert argv.count('-qmp') == 1


def test_inject_nmi_negotiates_then_injects(workdir):
    guest = qemu.Guest(0, ID, workdir)
    server = FakeQmp(guest.qmp_path, [ok, ok])
    guest.inject_nmi()
    server.close()
    assert [r['execute'] for r in server.requests] == \
        ['qmp_capabilities', 'inject-nmi']
    assert server.requests[0]['id'] != server.requests[1]['id']


def test_an_open_session_is_reused_and_events_are_skipped(workdir):
    guest = qemu.Guest(0, ID, workdir)
    event = {'event': 'RESUME', 'timestamp': {'seconds': 1,
                                              'microseconds': 2}}
    server = FakeQmp(guest.qmp_path,
                     [ok, lambda r: [event] + ok(r), ok])
    with guest.qmp() as session:
        guest.inject_nmi(session)
        assert session.command('query-status') == {}
    server.close()
    assert [r['execute'] for r in server.requests] == \
        ['qmp_capabilities', 'inject-nmi', 'query-status']


def test_an_error_reply_is_a_clear_error(workdir):
    guest = qemu.Guest(0, ID, workdir)
    server = FakeQmp(guest.qmp_path, [ok, lambda r: [{
        'error': {'class': 'GenericError',
                  'desc': 'Injecting an NMI is not supported'},
        'id': r['id']}]])
    with pytest.raises(KvmtuneError,
                       match='inject-nmi failed: GenericError: Injecting an '
                             'NMI is not supported') as caught:
        guest.inject_nmi()
    server.close()
    line = caught.value.line()
    assert 'inject-nmi failed: GenericError: Injecting an NMI is not ' \
        'supported' in line and guest.qmp_path in line


@pytest.mark.parametrize('greeting,replies,problem', [
    # QEMU hangs up after the greeting
    (GREETING, [lambda r: None], 'QEMU closed the socket'),
    (b'hello', [], 'not JSON: hello'),
    ({'return': {}}, [], 'no QMP greeting'),
    (GREETING, [lambda r: [[1, 2]]], 'not a JSON object'),
    (GREETING, [lambda r: [{'return': {}, 'id': 99}]],
     'reply to another command'),
    (GREETING, [lambda r: [{'id': r['id']}]], 'unexpected reply'),
])
def test_bad_exchanges_raise(workdir, greeting, replies, problem):
    guest = qemu.Guest(0, ID, workdir)
    server = FakeQmp(guest.qmp_path, replies, greeting=greeting)
    with pytest.raises(KvmtuneError, match=problem):
        guest.inject_nmi()
    server.close()


def test_no_socket_says_so(workdir):
    guest = qemu.Guest(0, ID, workdir)
    with pytest.raises(KvmtuneError, match='cannot connect: No such file'):
        guest.inject_nmi()


def test_silence_times_out(workdir):
    guest = qemu.Guest(0, ID, workdir)
    server = FakeQmp(guest.qmp_path, [], greeting=None)
    with pytest.raises(KvmtuneError, match='no reply in time'):
        guest.qmp(timeout=0.3)
    server.close()


@pytest.mark.parametrize('build', ['kvmtune image build',
                                   'kvmtune image build --nested'])
def test_check_image_names_the_missing_file_and_the_build(tmp_path, build):
    from kvmtune import image

    (tmp_path / image.KERNEL).write_bytes(b'k')
    with pytest.raises(KvmtuneError) as raised:
        qemu.check_image(str(tmp_path), build)
    assert raised.value.line() == (
        f'{tmp_path}: {image.INITRD} missing (fix: run {build})')
