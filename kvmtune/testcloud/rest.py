"""Just enough Keystone and Placement REST for setting up the test cloud.

Plain urllib: one openstack CLI call costs seconds of imports, and setup
makes a few dozen calls.
"""

import json
import time
import urllib.error
import urllib.request


class HTTPError(Exception):
    def __init__(self, status, body):
        super().__init__('HTTP %d: %s' % (status, body[:300]))
        self.status = status


def call(method, url, body=None, token=None, headers=None, timeout=30):
    """(status, headers, decoded JSON or None)."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header('Accept', 'application/json')
    if data is not None:
        req.add_header('Content-Type', 'application/json')
    if token:
        req.add_header('X-Auth-Token', token)
    for key, value in (headers or {}).items():
        req.add_header(key, value)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
            return resp.status, resp.headers, json.loads(raw) if raw else None
    except urllib.error.HTTPError as e:
        raise HTTPError(e.code, e.read().decode(errors='replace'))


def wait_http(url, timeout):
    """Wait until ``url`` answers anything over HTTP (any status)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=5).close()
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError('%s did not answer in %d s' % (
                    url, timeout))
            time.sleep(0.3)


class Keystone:
    def __init__(self, url, password):
        self.url = url
        _, headers, _ = call('POST', url + '/auth/tokens', {'auth': {
            'identity': {'methods': ['password'], 'password': {'user': {
                'name': 'admin', 'domain': {'id': 'default'},
                'password': password}}},
            'scope': {'project': {'name': 'admin',
                                  'domain': {'id': 'default'}}}}})
        self.token = headers['X-Subject-Token']

    def _create(self, kind, plural, attrs):
        _, _, body = call('POST', '%s/%s' % (self.url, plural),
                          {kind: attrs}, self.token)
        return body[kind]['id']

    def find(self, plural, name):
        _, _, body = call('GET', '%s/%s?name=%s' % (self.url, plural, name),
                          token=self.token)
        return body[plural][0]['id'] if body[plural] else None

    def ensure(self, kind, plural, name, **attrs):
        return (self.find(plural, name) or
                self._create(kind, plural, dict(attrs, name=name)))

    def project(self, name):
        return self.ensure('project', 'projects', name, domain_id='default')

    def role(self, name):
        return self.ensure('role', 'roles', name)

    def user(self, name, password, project_id, role_ids):
        user_id = self._create('user', 'users', {
            'name': name, 'password': password, 'domain_id': 'default',
            'default_project_id': project_id})
        for role_id in role_ids:
            self.grant(project_id, user_id, role_id)
        return user_id

    def grant(self, project_id, user_id, role_id):
        call('PUT', '%s/projects/%s/users/%s/roles/%s' % (
            self.url, project_id, user_id, role_id), token=self.token)

    def service(self, name, type_, endpoint, region):
        service_id = self._create('service', 'services',
                                  {'name': name, 'type': type_})
        # Public only: services try internal, then public.
        self._create('endpoint', 'endpoints', {
            'service_id': service_id, 'interface': 'public',
            'url': endpoint, 'region_id': region})


def placement_providers(url, token):
    _, _, body = call('GET', url + '/resource_providers', token=token,
                      headers={'OpenStack-API-Version': 'placement 1.14'})
    return body['resource_providers']


def placement_inventories(url, token, rp_uuid):
    _, _, body = call('GET', '%s/resource_providers/%s/inventories' % (
        url, rp_uuid), token=token,
        headers={'OpenStack-API-Version': 'placement 1.14'})
    return body
