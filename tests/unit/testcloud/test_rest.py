"""kvmtune.testcloud.rest: the few Keystone and Placement calls the test
cloud's setup makes, against a local HTTP server that answers as Keystone
v3 and Placement do (the real services: tests/functional/ through
`kvmtune cloud up`)."""

import http.server
import json
import socket
import threading

import pytest

from kvmtune.testcloud import rest


class Keystone(http.server.BaseHTTPRequestHandler):
    """Keystone v3 and Placement, in memory; requests recorded."""

    def log_message(self, *args):
        pass

    def _answer(self, status, body=None, headers=()):
        raw = json.dumps(body).encode() if body is not None else b''
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header('Content-Length', str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _record(self):
        length = int(self.headers.get('Content-Length') or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        # the headers as a Message: looked up whatever the case
        self.server.seen.append((self.command, self.path, body,
                                 self.headers))
        return body

    def do_POST(self):
        body = self._record()
        store = self.server.store
        if self.path == '/v3/auth/tokens':
            password = body['auth']['identity']['password']['user'][
                'password']
            if password != 'secret':
                return self._answer(401, {'error': {'message': 'bad'}})
            return self._answer(201, {'token': {}},
                                [('X-Subject-Token', 'tok-1')])
        plural = self.path.rsplit('/', 1)[1]
        kind = plural[:-1]
        made = dict(body[kind], id=f'{kind}-{len(store[plural]) + 1}')
        store[plural].append(made)
        return self._answer(201, {kind: made})

    def do_GET(self):
        self._record()
        if self.path.startswith('/placement/resource_providers'):
            if self.path.endswith('/inventories'):
                return self._answer(200, {'inventories': {'VCPU': {
                    'total': 2}}, 'resource_provider_generation': 3})
            return self._answer(200, {'resource_providers': [
                {'uuid': 'rp-1', 'name': 'vm'}]})
        plural, _, query = self.path.rsplit('/', 1)[1].partition('?')
        if plural not in self.server.store:
            return self._answer(404, {'error': {'code': 404}})
        name = query.partition('=')[2]
        found = [e for e in self.server.store[plural] if e['name'] == name]
        return self._answer(200, {plural: found})

    def do_PUT(self):
        self._record()
        return self._answer(204)


@pytest.fixture
def server():
    httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Keystone)
    httpd.seen = []
    httpd.store = {p: [] for p in ('projects', 'roles', 'users',
                                   'services', 'endpoints')}
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    httpd.url = f'http://127.0.0.1:{httpd.server_address[1]}'
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def test_a_token_then_projects_roles_users_found_or_made(server):
    keystone = rest.Keystone(server.url + '/v3', 'secret')
    assert keystone.token == 'tok-1'
    project = keystone.project('demo')
    assert keystone.project('demo') == project      # found, not made again
    assert len(server.store['projects']) == 1
    assert server.store['projects'][0]['domain_id'] == 'default'
    role = keystone.role('member')
    user = keystone.user('bob', 'pw', project, [role])
    assert server.store['users'][0]['default_project_id'] == project
    grant = server.seen[-1]
    assert grant[:2] == ('PUT', f'/v3/projects/{project}/users/{user}'
                                f'/roles/{role}')
    assert grant[3]['X-Auth-Token'] == 'tok-1'


def test_a_service_gets_one_public_endpoint(server):
    keystone = rest.Keystone(server.url + '/v3', 'secret')
    keystone.service('nova', 'compute', 'http://127.0.0.1:8774/v2.1',
                     'RegionOne')
    [service] = server.store['services']
    assert server.store['endpoints'] == [{
        'service_id': service['id'], 'interface': 'public',
        'url': 'http://127.0.0.1:8774/v2.1', 'region_id': 'RegionOne',
        'id': 'endpoint-1'}]


def test_an_http_error_has_its_status_and_body(server):
    with pytest.raises(rest.HTTPError) as err:
        rest.Keystone(server.url + '/v3', 'wrong')
    assert err.value.status == 401
    assert str(err.value) == 'HTTP 401: {"error": {"message": "bad"}}'


def test_call_sends_json_and_reads_json(server):
    status, headers, body = rest.call(
        'POST', server.url + '/v3/roles', {'role': {'name': 'r'}},
        token='t', headers={'X-Extra': '1'})
    assert status == 201 and body['role']['name'] == 'r'
    method, path, sent, sent_headers = server.seen[-1]
    assert sent == {'role': {'name': 'r'}}
    assert sent_headers['Content-Type'] == 'application/json'
    assert sent_headers['Accept'] == 'application/json'
    assert (sent_headers['X-Auth-Token'], sent_headers['X-Extra']) == (
        't', '1')
    # an empty answer is None
    assert rest.call('PUT', server.url + '/v3/x')[2] is None


def test_placement_reads_ask_for_1_14(server):
    assert rest.placement_providers(server.url + '/placement', 't') == [
        {'uuid': 'rp-1', 'name': 'vm'}]
    assert server.seen[-1][3]['OpenStack-API-Version'] == 'placement 1.14'
    assert rest.placement_inventories(server.url + '/placement', 't',
                                      'rp-1')['inventories'] == {
        'VCPU': {'total': 2}}


def test_wait_http_returns_on_any_answer(server):
    # a 404 is an answer: the service is up
    rest.wait_http(server.url + '/v3/nothing-here', timeout=5)
    assert server.seen[-1][:2] == ('GET', '/v3/nothing-here')


def test_wait_http_gives_up_on_a_closed_port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        port = probe.getsockname()[1]
    with pytest.raises(TimeoutError, match=f':{port}/ did not answer in 0'):
        rest.wait_http(f'http://127.0.0.1:{port}/', timeout=0.5)
