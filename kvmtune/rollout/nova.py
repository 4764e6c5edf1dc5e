"""A compute host in Nova during a rollout: its service and its servers.

Every call goes through kvmtune's cloud connection
(kvmtune.openstack.connection.Cloud, compute API 2.86): a read is retried,
a write goes once and a failure is one CloudError line naming the request
and its request id. Each step converges when it is run again, so a write
that failed half-way is mended by running the same step again:

- ``disable(cloud, host, reason)``: ``PUT /os-services/{id}`` with status
  ``disabled`` and ``disabled_reason`` (Nova's compute API, "Update
  Compute Service", 2.53+). A host already disabled with this reason is
  left as it is; one disabled with any other reason (an operator's, or
  another rollout's) is refused: it is not this rollout's to take.
- ``enable(cloud, host, run_id)``: the reverse, only for a host disabled
  by this run (its reason starts with ``reason_prefix(run_id)``).
- ``servers(cloud, host)``: the servers on it (all projects); the
  drain (kvmtune.rollout.drain) moves them off.
"""

from collections.abc import Iterable
import dataclasses
from typing import Any
import urllib.parse

from kvmtune.errors import CloudError
from kvmtune.errors import InputError

BINARY = 'nova-compute'
REASON_PREFIX = 'kvmtune rollout'


def reason_prefix(run_id: str) -> str:
    """'kvmtune rollout RUN:': the start of every disabled_reason of one
    run."""
    return f'{REASON_PREFIX} {run_id}:'


def reason(run_id: str, profile: str) -> str:
    """The disabled_reason a rollout gives the hosts it takes out:
    'kvmtune rollout RUN: PROFILE' (alert rules find it with
    ``disabledReason=~"kvmtune.*"``, FLEET-NOTES section 4)."""
    return f'{reason_prefix(run_id)} {profile}'


@dataclasses.dataclass
class Service:
    """A nova-compute service as os-services shows it."""
    id: str
    host: str
    status: str                 # enabled | disabled
    state: str                  # up | down
    disabled_reason: str | None

    @classmethod
    def from_api(cls, body: dict[str, Any]) -> 'Service':
        return cls(id=str(body['id']), host=body['host'],
                   status=body['status'], state=body.get('state') or '',
                   disabled_reason=body.get('disabled_reason'))

    def ours(self, run_id: str) -> bool:
        """Disabled by the rollout ``run_id``."""
        return self._disabled_by(reason_prefix(run_id))

    def by_a_rollout(self) -> bool:
        """Disabled by a kvmtune rollout, whichever run."""
        return self._disabled_by(REASON_PREFIX + ' ')

    def _disabled_by(self, prefix: str) -> bool:
        return (self.status == 'disabled' and
                (self.disabled_reason or '').startswith(prefix))


@dataclasses.dataclass
class Server:
    """A server on a host, as the drain and preflight need it."""
    id: str
    name: str
    status: str
    task_state: str | None
    host: str | None
    node: str | None
    flavor: dict[str, Any]      # the embedded flavor (2.47+)

    @classmethod
    def from_api(cls, body: dict[str, Any]) -> 'Server':
        return cls(id=body['id'], name=body.get('name') or '',
                   status=body.get('status') or '',
                   task_state=body.get('OS-EXT-STS:task_state'),
                   host=body.get('OS-EXT-SRV-ATTR:host'),
                   node=body.get('OS-EXT-SRV-ATTR:hypervisor_hostname'),
                   flavor=dict(body.get('flavor') or {}))

    @property
    def flavor_name(self) -> str:
        return str(self.flavor.get('original_name') or '?')

    def to_dict(self) -> dict[str, Any]:
        return {'id': self.id, 'name': self.name, 'status': self.status,
                'task_state': self.task_state, 'host': self.host,
                'flavor': self.flavor_name}


def services(cloud: Any) -> list[Service]:
    """Every nova-compute service of the cloud."""
    query = urllib.parse.urlencode({'binary': BINARY})
    body = cloud.compute('GET', f'/os-services?{query}')
    return [Service.from_api(s) for s in body['services']]


def service(cloud: Any, host: str) -> Service:
    """The nova-compute service of ``host``.

    :raises InputError: Nova knows no nova-compute on that host (one line
        naming it and the hosts it knows)
    """
    found = services(cloud)
    for item in found:
        if item.host == host:
            return item
    known = ', '.join(sorted(s.host for s in found)) or 'none'
    raise InputError(f'Nova knows no {BINARY} on host {host!r} '
                     f'(its computes: {known})', source=f'cloud {cloud.name}',
                     key='--host', fix='name the host as "openstack compute '
                     'service list" does, or leave it out of the inventory')


def check_hosts(cloud: Any, hosts: Iterable[str]) -> dict[str, Service]:
    """Every nova-compute service by host, or InputError for the first of
    ``hosts`` Nova does not know (nothing is changed either way)."""
    found = {s.host: s for s in services(cloud)}
    for host in hosts:
        if host not in found:
            known = ', '.join(sorted(found)) or 'none'
            raise InputError(
                f'Nova knows no {BINARY} on host {host!r} (its computes: '
                f'{known})', source=f'cloud {cloud.name}', key=host,
                fix='name the host as "openstack compute service list" '
                'does, or leave it out of the inventory')
    return found


def _put(cloud: Any, item: Service, body: dict[str, Any]) -> Service:
    answer = cloud.compute('PUT', f'/os-services/{item.id}', body)
    return Service.from_api(answer['service'])


def disable(cloud: Any, host: str, why: str) -> tuple[Service, bool]:
    """Disable the host's nova-compute with ``why`` as its reason.

    :returns: (the service, whether this call changed it)
    :raises CloudError: it is disabled already with another reason
    """
    item = service(cloud, host)
    if item.status == 'disabled':
        if item.disabled_reason == why:
            return item, False
        raise CloudError(
            f'nova-compute is disabled already, with the reason '
            f'{item.disabled_reason!r}, not {why!r}: this rollout does not '
            'take a host someone else took out', source=f'host {host}',
            key='disabled_reason',
            fix='finish that maintenance and enable the host ("openstack '
                'compute service set --enable HOST nova-compute"), or leave '
                'the host out of the inventory')
    return _put(cloud, item, {'status': 'disabled',
                              'disabled_reason': why}), True


def enable(cloud: Any, host: str, run_id: str) -> tuple[Service, bool]:
    """Enable the host's nova-compute when this run disabled it.

    :returns: (the service, whether this call changed it)
    :raises CloudError: it is disabled by someone else (another reason)
    """
    item = service(cloud, host)
    if item.status == 'enabled':
        return item, False
    if not item.ours(run_id):
        raise CloudError(
            f'nova-compute is disabled with the reason '
            f'{item.disabled_reason!r}, not by rollout run {run_id}: '
            'it is not this rollout\'s to enable', source=f'host {host}',
            key='disabled_reason',
            fix='enable it by hand when its maintenance is over')
    return _put(cloud, item, {'status': 'enabled'}), True


def servers(cloud: Any, host: str) -> list[Server]:
    """Every server Nova places on ``host`` (all projects), following the
    API's pages."""
    query = urllib.parse.urlencode({'all_tenants': 1, 'host': host})
    path = f'/servers/detail?{query}'
    found: list[Server] = []
    seen: set[str] = set()
    while path:
        body = cloud.compute('GET', path)
        page = [Server.from_api(s) for s in body.get('servers') or ()]
        found += [s for s in page if s.id not in seen]
        seen |= {s.id for s in page}
        path = _next_page(body.get('servers_links') or ())
        if not page:
            break
    return found


def _next_page(links: Iterable[dict[str, Any]]) -> str:
    """The path and query of the 'next' link, or ''."""
    for link in links:
        if link.get('rel') == 'next' and link.get('href'):
            parts = urllib.parse.urlsplit(link['href'])
            # the link names the whole URL under the endpoint's version
            path = str(parts.path)
            at = path.find('/servers/')
            return path[at:] + (f'?{parts.query}' if parts.query else '')
    return ''


def unconfirmed(cloud: Any, host: str) -> list[dict[str, Any]]:
    """The cold migrations away from ``host`` that wait for their resize to
    be confirmed (migration status ``finished``), e.g. left by a killed
    drain: the server is on its new host already, so the host's server
    list no longer shows it."""
    query = urllib.parse.urlencode({'source_compute': host,
                                    'migration_type': 'migration',
                                    'status': 'finished'})
    body = cloud.compute('GET', f'/os-migrations?{query}')
    return [m for m in body.get('migrations') or ()
            if m.get('source_compute') == host and
            m.get('status') == 'finished' and
            m.get('migration_type', 'migration') == 'migration']


def last_migration(cloud: Any, server_id: str) -> dict[str, Any] | None:
    """The newest migration of a server, or None."""
    query = urllib.parse.urlencode({'instance_uuid': server_id})
    body = cloud.compute('GET', f'/os-migrations?{query}')
    found = sorted(body.get('migrations') or (),
                   key=lambda m: (m.get('created_at') or '', m.get('id', 0)))
    return found[-1] if found else None
