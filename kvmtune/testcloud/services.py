"""The OpenStack services of the test cloud: their configuration files,
database syncs, processes and first REST calls (Keystone users, services
and endpoints), and the fake NUMA driver copied into the services' venv.
"""

import base64
from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Mapping
from collections.abc import MutableMapping
import concurrent.futures
import glob
import os
import re
import secrets as secrets_mod
import shutil
import time
from typing import Any

from kvmtune.errors import CloudError
from kvmtune.testcloud import config
from kvmtune.testcloud import neutron
from kvmtune.testcloud import procs
from kvmtune.testcloud import rest
from kvmtune.testcloud import system

FILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'files')
DRIVER_SOURCE = os.path.join(FILES, 'kvmtune_numa_fake.py')


def driver_target(lay: config.Layout) -> str:
    """nova/virt/ of the venv, whichever Python version built the venv."""
    virt = glob.glob(os.path.join(lay.venv, 'lib', 'python3*',
                                  'site-packages', 'nova', 'virt'))
    if len(virt) != 1:
        raise CloudError('no single nova/virt package', source=lay.venv,
                         fix='run: kvmtune cloud install')
    return os.path.join(virt[0], 'kvmtune_numa_fake.py')


def install_driver(lay: config.Layout) -> bool:
    """Copy the fake NUMA driver into nova.virt (Nova loads only there);
    True when the file changed."""
    with open(DRIVER_SOURCE) as f:
        return procs.write_if_changed(driver_target(lay), f.read())


SECRET_NAMES = ('db', 'admin', 'member') + config.SERVICE_USERS
_HEX_SECRET = re.compile(r'[0-9a-f]{36}')
# What a rotation makes stale, for the line `cloud up` prints.
ROTATION_INVALIDATES = ('every copy of its clouds.yaml made before and '
                        'every Rally environment made from it (refresh '
                        'one: kvmtune rally env)')


def new_secrets() -> dict[str, str]:
    # Hex, never token_urlsafe: a secret starting with '-' was read as an
    # option by keystone-manage bootstrap --bootstrap-password (seen: cloud
    # up failed, "expected one argument"); hex needs no quoting anywhere.
    return {k: secrets_mod.token_hex(18) for k in SECRET_NAMES}


def load_secrets(path: str, rotate: bool = False
                 ) -> tuple[dict[str, str], str]:
    """The cloud's passwords for an ``up``, and how they came:
    ``(secrets, 'kept' | 'new' | 'rotated')``.

    The ones in ``path`` (secrets.json, 0600, beside the state) are kept across
    down and up, a reboot included, so that copies of clouds.yaml and the Rally
    environments made from them keep working
    (tests/functional/test_rally_env.py). A name the file lacks (a newer
    kvmtune's service user) gets a new one; a value that is not one of
    new_secrets()'s hex strings (a hand-edited file: it goes into SQL and
    command lines) is replaced. No file, or no usable value in it: 'new'.
    ``rotate``: every one is new ('rotated' when there were some), which
    invalidates ROTATION_INVALIDATES.
    """
    import json

    try:
        with open(path) as f:
            old = json.load(f)
    except (OSError, ValueError):
        old = {}
    if not isinstance(old, dict):
        old = {}
    fresh = new_secrets()
    if rotate:
        return fresh, 'rotated' if old else 'new'
    kept = {k: v for k, v in old.items()
            if k in SECRET_NAMES and isinstance(v, str)
            and _HEX_SECRET.fullmatch(v)}
    return dict(fresh, **kept), 'kept' if kept else 'new'


def write_configs(lay: config.Layout, secrets: Mapping[str, str], mode: str,
                  virt_type: str | None, network: str) -> None:
    files = {
        lay.keystone_conf: config.keystone(lay, secrets),
        os.path.join(lay.placement_dir, 'placement.conf'):
            config.placement(lay, secrets),
        os.path.join(lay.glance_dir, 'glance-api.conf'):
            config.glance(lay, secrets),
        lay.nova_conf: config.nova(lay, secrets, network),
        lay.compute_conf: config.compute(lay, mode, virt_type),
    }
    for path, sections in files.items():
        procs.write_file(path, config.render(sections), 0o600)
    shutil.copy(os.path.join(lay.venv, 'etc', 'nova', 'api-paste.ini'),
                lay.nova_dir)
    shutil.copy(os.path.join(lay.venv, 'etc', 'glance',
                             'glance-api-paste.ini'), lay.glance_dir)
    for sub in ('glance/images', 'glance/staging', 'glance/tasks',
                'glance/lock', 'nova/lock', 'nova/instances'):
        os.makedirs(os.path.join(lay.data, sub), exist_ok=True)
    if network == 'neutron':
        neutron.write_configs(lay, secrets)


def _gunicorn(lay: config.Layout, name: str, target: str,
              env: Mapping[str, str], threads: int = 4) -> int:
    # --keep-alive 0: every response closes its connection. With gunicorn's
    # 2 s keep-alive, a client reusing a pooled connection at the moment
    # the server drops it as idle gets "Remote end closed connection
    # without response" (seen once in CI on a DELETE); on loopback a new
    # connection per request costs nothing.
    argv = [lay.bin('gunicorn'), '--bind', '%s:%d' % (
        config.HOST, lay.ports[name]), '--workers', '1',
        '--threads', str(threads), '--timeout', '300',
        '--graceful-timeout', '5', '--keep-alive', '0',
        '--pythonpath', FILES, '--name', 'kvmtune-' + name,
        'kvmtune_wsgi:application']
    env = dict(env, KVMTUNE_WSGI_TARGET=target, KVMTUNE_WSGI_PROG=name)
    return procs.start(lay, name, argv, env)


def _write_key_repository(path: str) -> None:
    """What `keystone-manage fernet_setup` leaves: a staged key (0) and a
    primary key (1), each 32 random bytes in URL-safe base64, in a 0700
    directory; written here to save two keystone-manage runs."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    for index in ('0', '1'):
        key = base64.urlsafe_b64encode(os.urandom(32)).decode()
        procs.write_file(os.path.join(path, index), key, 0o600)


def keystone_chain(lay: config.Layout, secrets: Mapping[str, str],
                   pids: MutableMapping[str, int], network: str) -> None:
    conf = ['--config-file', lay.keystone_conf]
    km = lay.bin('keystone-manage')
    procs.run(lay, 'keystone-manage', [km] + conf + ['db_sync'])
    keys = os.path.dirname(lay.keystone_conf)
    for repository in ('fernet-keys', 'credential-keys'):
        _write_key_repository(os.path.join(keys, repository))
    ks = lay.url('keystone', '/v3')
    procs.run(lay, 'keystone-manage', [km] + conf + [
        'bootstrap', '--bootstrap-password', secrets['admin'],
        '--bootstrap-admin-url', ks, '--bootstrap-public-url', ks,
        '--bootstrap-internal-url', ks,
        '--bootstrap-region-id', config.REGION])
    # One process, one thread: see the [cache] note in config.keystone.
    pids['keystone'] = _gunicorn(
        lay, 'keystone',
        'keystone.server.wsgi:initialize_public_application()',
        {'OS_KEYSTONE_CONFIG_FILES': lay.keystone_conf}, threads=1)
    rest.wait_http(ks, 60)
    keystone = rest.Keystone(ks, secrets['admin'])
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        service_project = pool.submit(keystone.project, 'service')
        member_project = pool.submit(keystone.project, 'kvmtune-member')
        roles = {r: pool.submit(keystone.role, r)
                 for r in ('admin', 'service', 'member')}
        services = [pool.submit(keystone.service, name, type_, endpoint,
                                config.REGION)
                    for name, type_, endpoint in config.catalog(lay,
                                                                network)]
        users = [pool.submit(keystone.user, user, secrets[user],
                             service_project.result(),
                             [roles['admin'].result(),
                              roles['service'].result()])
                 for user in config.SERVICE_USERS]
        users.append(pool.submit(
            keystone.user, 'kvmtune-member', secrets['member'],
            member_project.result(), [roles['member'].result()]))
        for future in services + users:
            future.result()


def placement_chain(lay: config.Layout, pids: MutableMapping[str, int]
                    ) -> None:
    procs.run(lay, 'placement-manage', [
        lay.bin('placement-manage'), '--config-dir', lay.placement_dir,
        'db', 'sync'])
    pids['placement'] = _gunicorn(
        lay, 'placement', 'placement.wsgi.api:application',
        {'OS_PLACEMENT_CONFIG_DIR': lay.placement_dir})


def glance_chain(lay: config.Layout, pids: MutableMapping[str, int]) -> None:
    procs.run(lay, 'glance-manage', [
        lay.bin('glance-manage'), '--config-file',
        os.path.join(lay.glance_dir, 'glance-api.conf'), 'db_sync'])
    pids['glance'] = _gunicorn(
        lay, 'glance', 'glance.wsgi.api:application',
        {'OS_GLANCE_CONFIG_DIR': lay.glance_dir})


def _nova_manage(lay: config.Layout, *argv: str) -> None:
    procs.run(lay, 'nova-manage', [lay.bin('nova-manage'), '--config-file',
                                   lay.nova_conf] + list(argv))


def nova_chain(lay: config.Layout, pids: MutableMapping[str, int]) -> None:
    _nova_manage(lay, 'api_db', 'sync')
    _nova_manage(lay, 'cell_v2', 'map_cell0')
    _nova_manage(lay, 'cell_v2', 'create_cell', '--name', 'cell1')
    _nova_manage(lay, 'db', 'sync')
    pids['nova-api'] = _gunicorn(
        lay, 'nova-api', 'nova.wsgi.osapi_compute:application',
        {'OS_NOVA_CONFIG_DIR': lay.nova_dir})


def neutron_chain(lay: config.Layout, pids: MutableMapping[str, int]) -> None:
    neutron.db_sync(lay)
    pids['neutron-api'] = _gunicorn(lay, 'network',
                                    'neutron.wsgi.api:application',
                                    neutron.api_env(lay))
    neutron.start_rpc_and_agent(lay, pids)


def start_compute(lay: config.Layout, state: Mapping[str, Any]) -> int:
    env: dict[str, str] = {}
    if state.get('facts'):
        env['KVMTUNE_FAKE_FACTS'] = state['facts']
    return procs.start(lay, 'nova-compute', [
        lay.bin('nova-compute'), '--config-file', lay.nova_conf,
        '--config-file', lay.compute_conf], env)


def start_extra_compute(lay: config.Layout, compute: Mapping[str, Any]) -> int:
    """Start compute 2..N (an entry of state['computes']) on the NUMA
    fake driver: nova.conf, then its own file; its facts by
    $KVMTUNE_FAKE_FACTS."""
    return procs.start(lay, compute['service'], [
        lay.bin('nova-compute'), '--config-file', lay.nova_conf,
        '--config-file', compute['conf']],
        {'KVMTUNE_FAKE_FACTS': compute['facts']})


def admin_token(lay: config.Layout, secrets: Mapping[str, str]) -> str:
    return rest.Keystone(lay.url('keystone', '/v3'), secrets['admin']).token


def wait_providers(lay: config.Layout, token: str, names: Collection[str],
                   count: int, timeout: float,
                   alive: Callable[[], object] | None = None
                   ) -> dict[str, dict[str, Any]]:
    """Wait until Placement has ``count`` resource providers, ``names``
    among them, each with inventory; return them as {name: provider}.
    ``alive()`` (optional) is called each round: it raises when a compute
    died, rather than waiting out the timeout."""
    placement = lay.url('placement')
    found: dict[str, dict[str, Any]] = {}

    def ready() -> bool:
        if alive:
            alive()
        providers = rest.placement_providers(placement, token)
        found.clear()
        found.update((p['name'], p) for p in providers)
        if len(found) < count or not set(names) <= set(found):
            return False
        return all(rest.placement_inventories(
            placement, token, p['uuid'])['inventories']
            for p in found.values())
    procs.wait_until(ready, timeout,
                     '%d nova-compute resource providers' % count)
    return found


def _host_mapped(lay: config.Layout, name: str) -> bool:
    return name in system.mysql(
        'SELECT host FROM `%s`.host_mappings'
        % lay.databases['nova_api']).split()


def map_host(lay: config.Layout, name: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not _host_mapped(lay, name):
        if time.monotonic() > deadline:
            raise CloudError('host %s not mapped after %d s'
                             % (name, timeout), source=lay.log,
                             fix='read nova-manage.log there')
        _nova_manage(lay, 'cell_v2', 'discover_hosts')
