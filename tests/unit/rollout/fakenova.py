"""A Nova that answers the rollout's requests from a small model: its
services, servers and migrations, in the shapes compute API 2.86 gives
them (api-ref: os-services, servers/detail, os-migrations). A live or
cold migration moves the server after ``delay`` polls of the host's
servers; ``fail`` names servers whose migration fails (back on the host,
migration status ``error``). Pure logic: no HTTP."""

import copy
import urllib.parse

from kvmtune.errors import CloudError


def server(uuid, host, status='ACTIVE', flavor='m1', vcpus=1, ram=512,
           specs=None):
    return {'id': uuid, 'name': f'vm-{uuid[:4]}', 'status': status,
            'OS-EXT-STS:task_state': None, 'OS-EXT-SRV-ATTR:host': host,
            'OS-EXT-SRV-ATTR:hypervisor_hostname': host,
            'flavor': {'original_name': flavor, 'vcpus': vcpus, 'ram': ram,
                       'disk': 1, 'ephemeral': 0, 'swap': 0,
                       'extra_specs': dict(specs or {})}}


class FakeNova:
    name = 'fake'

    def __init__(self, hosts, servers=(), delay=1, fail=(), page=1000):
        self.services = {h: {'id': f'svc-{h}', 'host': h,
                             'binary': 'nova-compute', 'status': 'enabled',
                             'state': 'up', 'disabled_reason': None}
                         for h in hosts}
        self.servers = {s['id']: copy.deepcopy(s) for s in servers}
        self.migrations = []
        self.delay = delay
        self.fail = set(fail)
        self.page = page
        self.writes = []
        self.moving = {}        # server id -> (polls left, kind, dest)
        self.confirming = set()
        self.resizing = set()
        self.halfway = set()

    # -- the model ----------------------------------------------------

    def _dest(self, source):
        others = sorted(h for h, s in self.services.items()
                        if h != source and s['status'] == 'enabled')
        return others[0] if others else None

    def _tick(self, host):
        for uuid, (left, kind, dest) in list(self.moving.items()):
            srv = self.servers[uuid]
            if srv['OS-EXT-SRV-ATTR:host'] != host:
                continue
            if left > 1:
                self.moving[uuid] = (left - 1, kind, dest)
                continue
            del self.moving[uuid]
            migration = self.migrations[-1] if False else next(
                m for m in reversed(self.migrations)
                if m['instance_uuid'] == uuid)
            srv['OS-EXT-STS:task_state'] = None
            if uuid in self.fail or dest is None:
                migration['status'] = 'error'
                continue
            srv['OS-EXT-SRV-ATTR:host'] = dest
            srv['OS-EXT-SRV-ATTR:hypervisor_hostname'] = dest
            if kind == 'live-migration':
                migration['status'] = 'completed'
            else:
                # Nova's finish_resize saves the migration finished first,
                # the server's vm_state resized after (a confirm between
                # the two is HTTP 409)
                migration['status'] = 'finished'
                self.resizing.add(uuid)

    # -- the API ------------------------------------------------------

    def _confirmed(self):
        for uuid in self.confirming:
            self.servers[uuid]['status'] = 'SHUTOFF'
            for m in self.migrations:
                if m['instance_uuid'] == uuid and \
                        m['status'] == 'confirming':
                    m['status'] = 'confirmed'
        self.confirming.clear()

    def compute(self, method, path, body=None):
        if method == 'GET' and path.startswith('/servers'):
            self._confirmed()
        if method == 'GET' and path.startswith('/servers/') and \
                not path.startswith('/servers/detail'):
            uuid = path.split('/')[2]
            if uuid in self.resizing and \
                    self.servers[uuid]['status'] == 'SHUTOFF':
                # first read: still stopped; the next one: resized
                self.resizing.discard(uuid)
                self.halfway.add(uuid)
            elif uuid in self.halfway:
                self.halfway.discard(uuid)
                self.servers[uuid]['status'] = 'VERIFY_RESIZE'
        parts = urllib.parse.urlsplit(path)
        query = dict(urllib.parse.parse_qsl(parts.query))
        route = parts.path
        if method != 'GET':
            self.writes.append((method, route, copy.deepcopy(body)))
        if method == 'GET' and route == '/os-services':
            return {'services': [copy.deepcopy(s) for s in
                                 self.services.values()
                                 if s['binary'] == query.get('binary',
                                                             s['binary'])]}
        if method == 'PUT' and route.startswith('/os-services/'):
            sid = route.rsplit('/', 1)[1]
            svc = next(s for s in self.services.values() if s['id'] == sid)
            svc['status'] = body['status']
            svc['disabled_reason'] = body.get('disabled_reason') \
                if body['status'] == 'disabled' else None
            return {'service': copy.deepcopy(svc)}
        if method == 'GET' and route == '/servers/detail':
            host = query.get('host')
            self._tick(host)
            found = sorted((s for s in self.servers.values()
                            if s['OS-EXT-SRV-ATTR:host'] == host),
                           key=lambda s: s['id'])
            start = 0
            if 'marker' in query:
                start = [s['id'] for s in found].index(query['marker']) + 1
            chunk = found[start:start + self.page]
            links = []
            if start + self.page < len(found):
                links = [{'rel': 'next', 'href':
                          'http://nova:8774/v2.1/servers/detail?'
                          + urllib.parse.urlencode(
                              {**query, 'marker': chunk[-1]['id']})}]
            return {'servers': copy.deepcopy(chunk), 'servers_links': links}
        if method == 'GET' and route.startswith('/servers/'):
            return {'server': copy.deepcopy(
                self.servers[route.split('/')[2]])}
        if method == 'POST' and route.endswith('/action'):
            return self._action(route.split('/')[2], body)
        if method == 'GET' and route == '/os-migrations':
            found = [m for m in self.migrations
                     if all(str(m.get(k)) == v for k, v in query.items())]
            return {'migrations': copy.deepcopy(found)}
        raise CloudError(f'HTTP 404: {method} {path}', source='cloud fake')

    def _action(self, uuid, body):
        srv = self.servers[uuid]
        (name, _), = body.items()
        source = srv['OS-EXT-SRV-ATTR:host']
        if name == 'confirmResize' and srv['status'] != 'VERIFY_RESIZE':
            raise CloudError(f"HTTP 409: Cannot 'confirmResize' instance "
                             f"{uuid} while it is in vm_state stopped")
        if name == 'confirmResize':
            # Nova's API: the migration 'finished' or HTTP 400; it is
            # 'confirming' when the API answers, the compute then confirms
            # (the server SHUTOFF at the next read here)
            waiting = [m for m in self.migrations
                       if m['instance_uuid'] == uuid and
                       m['status'] == 'finished']
            if not waiting:
                raise CloudError('HTTP 400: Instance has not been resized.')
            waiting[0]['status'] = 'confirming'
            self.confirming.add(uuid)
            return None
        kind = {'os-migrateLive': 'live-migration',
                'migrate': 'migration'}[name]
        want = 'ACTIVE' if kind == 'live-migration' else 'SHUTOFF'
        if srv['status'] != want or srv['OS-EXT-STS:task_state']:
            raise CloudError(f'HTTP 409: server is {srv["status"]}')
        srv['OS-EXT-STS:task_state'] = ('migrating' if kind ==
                                        'live-migration' else 'resize_prep')
        self.migrations.append({
            'id': len(self.migrations) + 1, 'instance_uuid': uuid,
            'source_compute': source, 'migration_type': kind,
            'status': 'running', 'created_at': f'{len(self.migrations):04d}',
            'dest_compute': self._dest(source)})
        self.moving[uuid] = (self.delay, kind, self._dest(source))
        return None
