"""Just enough Keystone and Placement REST for setting up the test cloud.

Plain urllib: one openstack CLI call costs seconds of imports, and setup
makes a few dozen calls.
"""

from collections.abc import Iterable
from collections.abc import Mapping
from email.message import Message
import json
import time
from typing import Any
from typing import cast
import urllib.error
import urllib.request


class HTTPError(Exception):
    def __init__(self, status: int, body: str) -> None:
        super().__init__('HTTP %d: %s' % (status, body[:300]))
        self.status = status


def call(method: str, url: str, body: Any = None, token: str | None = None,
         headers: Mapping[str, str] | None = None, timeout: float = 30
         ) -> tuple[int, Message, Any]:
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


def wait_http(url: str, timeout: float) -> None:
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
    def __init__(self, url: str, password: str) -> None:
        self.url = url
        _, headers, _ = call('POST', url + '/auth/tokens', {'auth': {
            'identity': {'methods': ['password'], 'password': {'user': {
                'name': 'admin', 'domain': {'id': 'default'},
                'password': password}}},
            'scope': {'project': {'name': 'admin',
                                  'domain': {'id': 'default'}}}}})
        self.token = headers['X-Subject-Token']

    def _create(self, kind: str, plural: str, attrs: Mapping[str, Any]
                ) -> str:
        _, _, body = call('POST', '%s/%s' % (self.url, plural),
                          {kind: attrs}, self.token)
        return cast(str, body[kind]['id'])

    def find(self, plural: str, name: str) -> str | None:
        _, _, body = call('GET', '%s/%s?name=%s' % (self.url, plural, name),
                          token=self.token)
        return cast(str, body[plural][0]['id']) if body[plural] else None

    def ensure(self, kind: str, plural: str, name: str, **attrs: Any) -> str:
        return (self.find(plural, name) or
                self._create(kind, plural, dict(attrs, name=name)))

    def project(self, name: str) -> str:
        return self.ensure('project', 'projects', name, domain_id='default')

    def role(self, name: str) -> str:
        return self.ensure('role', 'roles', name)

    def user(self, name: str, password: str, project_id: str,
             role_ids: Iterable[str]) -> str:
        user_id = self._create('user', 'users', {
            'name': name, 'password': password, 'domain_id': 'default',
            'default_project_id': project_id})
        for role_id in role_ids:
            self.grant(project_id, user_id, role_id)
        return user_id

    def grant(self, project_id: str, user_id: str, role_id: str) -> None:
        call('PUT', '%s/projects/%s/users/%s/roles/%s' % (
            self.url, project_id, user_id, role_id), token=self.token)

    def service(self, name: str, type_: str, endpoint: str,
                region: str) -> None:
        service_id = self._create('service', 'services',
                                  {'name': name, 'type': type_})
        # Public only: services try internal, then public.
        self._create('endpoint', 'endpoints', {
            'service_id': service_id, 'interface': 'public',
            'url': endpoint, 'region_id': region})


def placement_providers(url: str, token: str) -> list[dict[str, Any]]:
    _, _, body = call('GET', url + '/resource_providers', token=token,
                      headers={'OpenStack-API-Version': 'placement 1.14'})
    return cast(list[dict[str, Any]], body['resource_providers'])


def placement_inventories(url: str, token: str, rp_uuid: str
                          ) -> dict[str, Any]:
    _, _, body = call('GET', '%s/resource_providers/%s/inventories' % (
        url, rp_uuid), token=token,
        headers={'OpenStack-API-Version': 'placement 1.14'})
    return cast(dict[str, Any], body)
