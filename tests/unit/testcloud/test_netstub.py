"""The network stub answers Nova's port reads and refuses everything else.

Runs the real stub (kvmtune/testcloud/netstub.py, as ``kvmtune cloud up``
starts it) on a free 127.0.0.1 port; needs no cloud.
"""

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest


@pytest.fixture(scope='module')
def stub():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, '-m',
                             'kvmtune.testcloud.netstub', '--port', str(port)],
                            stdout=subprocess.PIPE, text=True)
    url = 'http://127.0.0.1:%d' % port
    deadline = time.monotonic() + 10
    while True:
        try:
            urllib.request.urlopen(url + '/', timeout=1).close()
            break
        except OSError:
            # hang bound: it starts in well under a second
            assert time.monotonic() < deadline, 'stub did not start'
            time.sleep(0.1)
    yield url
    proc.terminate()
    proc.wait(10)


def _get(url):
    with urllib.request.urlopen(url, timeout=5) as resp:
        return resp.status, json.loads(resp.read())


def test_port_reads_answer_empty_lists(stub):
    # The two reads Nova makes for a port-less server.
    assert _get(stub + '/v2.0/ports?device_id=abc&fields=id') == (
        200, {'ports': []})
    assert _get(stub + '/v2.0/ports.json?device_id=abc') == (
        200, {'ports': []})
    assert _get(stub + '/v2.0/security-groups') == (
        200, {'security_groups': []})


def test_single_resource_is_not_found(stub):
    with pytest.raises(urllib.error.HTTPError,
                       match='HTTP Error 404: Not Found') as e:
        _get(stub + '/v2.0/ports/3f1c')
    assert e.value.code == 404
    assert json.loads(e.value.read())['NeutronError']['type'] == 'NotFound'


def test_writes_are_refused(stub):
    req = urllib.request.Request(stub + '/v2.0/ports', method='POST',
                                 data=b'{"port": {}}')
    with pytest.raises(urllib.error.HTTPError,
                       match='HTTP Error 501: Not Implemented') as e:
        urllib.request.urlopen(req, timeout=5)
    assert e.value.code == 501
