"""kvmtune.openstack.connection: the request log and its test-only kill
hook."""

import signal
import subprocess
import sys
import textwrap

from kvmtune.openstack import connection
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


# A keystoneauth Session (what openstacksdk sends through) hardened as
# Cloud does it, against a local server that answers 503 to the first
# ``FAIL`` requests, then 200; it prints what it saw.
_HARDENED = textwrap.dedent('''
    import http.server, json, sys, threading
    from keystoneauth1 import session as ks_session
    from kvmtune.openstack import connection

    FAIL = int(sys.argv[1])
    seen = []

    class Server(http.server.BaseHTTPRequestHandler):
        def _any(self):
            seen.append((self.command, self.path,
                         self.headers.get('X-OpenStack-Request-ID')))
            code = 503 if len(seen) <= FAIL else 200
            self.send_response(code)
            self.send_header('Content-Length', '0')
            self.end_headers()
        do_GET = do_POST = _any
        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(('127.0.0.1', 0), Server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    session = ks_session.Session()
    sent = connection._harden(session, 'c')
    import logging
    logging.getLogger('keystoneauth').addHandler(connection._RETRY_LINES)
    url = f'http://127.0.0.1:{server.server_port}/v2.1/things'
    answer = session.request(url, sys.argv[2], raise_exc=False)
    print(json.dumps({'status': answer.status_code, 'seen': seen,
                      'sent': [sent.request, sent.request_id,
                               sent.retries]}))
''')


def _hardened(fail, method):
    import json
    import os

    done = subprocess.run([sys.executable, '-c', _HARDENED, str(fail),
                           method], capture_output=True, text=True,
                          timeout=60,
                          env={**os.environ, 'PYTHONPATH': str(paths.REPO)})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


def test_a_read_through_the_session_is_retried_with_a_line_each():
    # openstacksdk's own GETs (the main job's image list) as Cloud's.
    found, err = _hardened(2, 'GET')
    assert found['status'] == 200
    assert [m for m, _, _ in found['seen']] == ['GET'] * 3
    ids = {request_id for _, _, request_id in found['seen']}
    assert len(ids) == 1 and ids.pop().startswith('req-')
    assert err.splitlines() == [
        'kvmtune: cloud c: GET /v2.1/things: HTTP 503; retry 1 of 3 in '
        '0.5 s',
        'kvmtune: cloud c: GET /v2.1/things: HTTP 503; retry 2 of 3 in '
        '1.0 s']
    assert found['sent'][0] == 'GET /v2.1/things'
    assert found['sent'][1] == found['seen'][0][2] and \
        found['sent'][2] == 2


def test_a_write_through_the_session_goes_once():
    found, err = _hardened(2, 'POST')
    assert found['status'] == 503 and err == ''
    assert [m for m, _, _ in found['seen']] == ['POST']
    assert found['sent'][1] == found['seen'][0][2]
    assert found['sent'][2] == 0


def test_a_failed_write_is_one_line_naming_endpoint_and_id():
    from openstack import exceptions as sdk_exc

    class Conn:
        config = type('Config', (), {'config': {'auth': {}}})()
        session = type('Session', (), {'auth': None})()

    cloud = connection.Cloud.__new__(connection.Cloud)
    cloud.name, cloud.conn = 'c', Conn()
    cloud.requests = connection.RequestLog()
    cloud.sent = connection.Sent()
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
