"""kvmtune.openstack.connection: the request log and its test-only kill
hook."""

import signal
import subprocess
import sys
import textwrap

from kvmtune.openstack import connection
from kvmtune.openstack import retries
from tests import paths

# A process that serves HTTP on a thread and sends three GETs through a
# requests.Session counted by RequestLog (the transport kvmtune uses).
_CLIENT = textwrap.dedent('''
    import http.server, threading, requests
    from kvmtune.openstack.connection import RequestLog

    class Ok(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header('Content-Length', '0')
            self.end_headers()
        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(('127.0.0.1', 0), Ok)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    session = requests.Session()
    log = RequestLog()
    log.install(session)
    for n in (1, 2, 3):
        session.get(f'http://127.0.0.1:{server.server_port}/v2.1/r{n}')
        print('answered', n, flush=True)
''')


def _run(env):
    import os

    return subprocess.run([sys.executable, '-c', _CLIENT],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, 'PYTHONPATH': str(paths.REPO),
                               **env})


def test_kill_hook_sigkills_after_the_nth_answer():
    done = _run({connection.KILL_AFTER_CALL_ENV: '2'})
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert done.stdout.split('\n')[:-1] == ['answered 1']
    assert done.stderr == (f'kvmtune: test hook '
                           f'{connection.KILL_AFTER_CALL_ENV}: SIGKILL '
                           'after request 2 (GET /v2.1/r2)\n')


def test_kill_hook_is_off_unless_set_to_a_count():
    for value in ('', '0', 'two'):
        done = _run({connection.KILL_AFTER_CALL_ENV: value})
        assert done.returncode == 0, (value, done.stderr)
        assert done.stdout.count('answered') == 3


def test_request_log_counts_writes_apart_from_the_token():
    log = connection.RequestLog()
    log.record('post', 'http://k/v3/auth/tokens')
    log.record('GET', 'http://n/v2.1/flavors')
    log.record('DELETE', 'http://n/v2.1/flavors/1')
    assert (log.total, log.writes, log.token_requests) == (3, 1, 1)
    assert log.summary() == ('3 requests (DELETE 1, GET 1, POST 1: 1 for a '
                             'Keystone token), 1 writes')


def test_a_failed_write_is_one_line_naming_endpoint_and_id():
    from openstack import exceptions as sdk_exc

    class Conn:
        config = type('Config', (), {'config': {'auth': {}}})()
        session = type('Session', (), {'auth': None})()

    cloud = connection.Cloud.__new__(connection.Cloud)
    cloud.name, cloud.conn = 'c', Conn()
    cloud.requests = connection.RequestLog()
    cloud.sent = retries.Sent()
    cloud.requests.record('POST', 'http://127.0.0.1:8774/v2.1/flavors')
    cloud.sent.request = 'POST /v2.1/flavors'
    cloud.sent.request_id = 'req-1234'
    raised = sdk_exc.HttpException(message='Service Unavailable')
    raised.status_code = 503
    error = cloud.failure(raised)
    assert error.line() == (
        'cloud c: POST /v2.1/flavors: HTTP 503: Service Unavailable '
        '(request req-1234); a write goes once, not retried (POST '
        'http://127.0.0.1:8774/v2.1/flavors) (fix: the cloud failed; see '
        'its service logs; then run the same command again: it converges)')
