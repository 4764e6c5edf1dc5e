"""A keystoneauth session hardened by kvmtune.openstack.retries, in a
child process against a local HTTP server that fails on purpose: a read
is retried with one line each, a write goes once."""

import subprocess
import sys
import textwrap

from tests import paths


# A keystoneauth Session (what openstacksdk sends through) hardened as
# Cloud does it, against a local server that answers 503 to the first
# ``FAIL`` requests, then 200; it prints what it saw.
_HARDENED = textwrap.dedent('''
    import http.server, json, sys, threading
    from keystoneauth1 import session as ks_session
    from kvmtune.openstack import connection
    from kvmtune.openstack import retries

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
    sent = retries.harden(session, 'c')
    import logging
    logging.getLogger('keystoneauth').addHandler(retries.RETRY_LINES)
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
