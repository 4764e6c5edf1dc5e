"""Configuration files of the test cloud (paths, ports, contents).

Everything binds to 127.0.0.1. One ``Layout`` names every path under the
state directory, the services' virtualenv and the API ports (options of
``[testcloud]`` in kvmtune.conf, see kvmtune/conf/testcloud.py), so ``up``,
``down``, ``status``, ``env`` and doc/testcloud.md agree. Pure functions:
nothing here reads or writes a file.
"""

from collections.abc import Mapping
import configparser
import hashlib
import io
import os
from typing import Any

HOST = '127.0.0.1'
DEFAULT_VENV = '/opt/kvmtune-cloud/venv'
DEFAULT_STATE_DIR = '/var/lib/kvmtune-cloud'
# service -> default port; the [testcloud] <service>_port options
DEFAULT_PORTS = {'keystone': 5000, 'placement': 8778, 'glance': 9292,
                 'nova-api': 8774, 'network': 9696}
DATABASES = ('keystone', 'placement', 'glance', 'nova_api', 'nova',
             'nova_cell0', 'neutron')
DB_USER = 'kvmtune_cloud'
RABBIT_VHOST = 'kvmtune_cloud'
# The default cloud's lock (doc/design.md 9.7); another state directory's
# cloud has its own (Layout.lock).
DEFAULT_LOCK = '/run/lock/kvmtune-testcloud.lock'
REGION = 'RegionOne'
# the test cloud's admin in its own clouds.yaml (and its OS_CLOUD)
ADMIN_CLOUD = 'kvmtune-admin'
SERVICE_USERS = ('nova', 'placement', 'glance', 'neutron')
NETWORKS = ('neutron', 'stub')
# (name, type, service, path): Keystone's own comes from bootstrap
CATALOG = (('nova', 'compute', 'nova-api', '/v2.1'),
           ('placement', 'placement', 'placement', ''),
           ('glance', 'image', 'glance', ''))
FAKE_DRIVER = 'kvmtune_numa_fake.KvmtuneNUMAFakeDriver'
LIBVIRT_DRIVER = 'libvirt.LibvirtDriver'
# {section: {option: value}}: what render() writes
Conf = dict[str, dict[str, Any]]


def filters() -> str:
    """The scheduler's enabled_filters: Nova's default (the release
    table, kvmtune.nova_releases) and the NUMA filter the tuned flavors
    need, as a plan writes them (Tuner.numa_filters)."""
    from kvmtune import nova_releases
    from kvmtune.tuning.tuners.base import NUMA_FILTER

    return ','.join(nova_releases.get().default_filters() + [NUMA_FILTER])


def catalog(layout: 'Layout', network: str
            ) -> tuple[tuple[str, str, str], ...]:
    """(name, type, URL) of the services: CATALOG plus the network
    endpoint, real Neutron or netstub.py (not Neutron, see
    doc/testcloud.md), both on the same port."""
    name = 'neutron' if network == 'neutron' else 'kvmtune-netstub'
    return tuple((n, t, layout.url(service, path))
                 for n, t, service, path in CATALOG) + (
        (name, 'network', layout.url('network')),)


class Layout:
    """One test cloud: its state directory ``root`` (every path under
    it), the services' virtualenv ``venv`` and the API ``ports``
    ({service: port}, DEFAULT_PORTS for the ones not given)."""

    def __init__(self, root: str = DEFAULT_STATE_DIR,
                 venv: str = DEFAULT_VENV,
                 ports: Mapping[str, int] | None = None) -> None:
        self.root = root
        self.venv = venv
        self.ports = dict(DEFAULT_PORTS, **(ports or {}))
        # What MariaDB, RabbitMQ and the lock directory share between
        # clouds, named after the state directory (cloud_suffix): two
        # clouds in two directories run side by side.
        self.suffix = cloud_suffix(root)
        self.databases = {db: db + self.suffix for db in DATABASES}
        # `nova-manage cell_v2 map_cell0` names cell0's database after
        # [database] connection's, plus _cell0 (nova/cmd/manage.py,
        # CellV2Commands._map_cell0).
        self.databases['nova_cell0'] = self.databases['nova'] + '_cell0'
        self.db_user = DB_USER + self.suffix
        self.rabbit_vhost = RABBIT_VHOST + self.suffix
        self.lock = (DEFAULT_LOCK if not self.suffix else
                     '/run/lock/kvmtune-testcloud%s.lock' % self.suffix)
        self.etc = os.path.join(root, 'etc')
        self.log = os.path.join(root, 'log')
        self.run = os.path.join(root, 'run')
        self.data = os.path.join(root, 'data')
        self.state = os.path.join(self.run, 'state.json')
        self.ledger = os.path.join(self.run, 'pids')
        self.secrets = os.path.join(root, 'secrets.json')
        self.clouds_yaml = os.path.join(root, 'clouds.yaml')
        self.timings = os.path.join(root, 'timings.json')
        self.keystone_conf = os.path.join(self.etc, 'keystone',
                                          'keystone.conf')
        self.placement_dir = os.path.join(self.etc, 'placement')
        self.glance_dir = os.path.join(self.etc, 'glance')
        self.nova_dir = os.path.join(self.etc, 'nova')
        self.nova_conf = os.path.join(self.nova_dir, 'nova.conf')
        # The file tests edit with `kvmtune nova-conf apply`.
        self.compute_conf = os.path.join(self.nova_dir, 'nova-compute.conf')

    # Computes 2..N (``--computes N``): each its own file, state path
    # (compute_id, so its own resource provider), facts copy, log and
    # ledger name.
    def extra_compute_conf(self, index: int) -> str:
        return os.path.join(self.nova_dir, 'nova-compute-%d.conf' % index)

    def extra_compute_facts(self, index: int) -> str:
        return os.path.join(self.nova_dir, 'facts-compute-%d.json' % index)

    def extra_state_path(self, index: int) -> str:
        return os.path.join(self.data, 'nova-compute-%d' % index)

    def log_file(self, name: str) -> str:
        return os.path.join(self.log, name + '.log')

    def bin(self, name: str) -> str:
        """A program of the services' virtualenv."""
        return os.path.join(self.venv, 'bin', name)

    @property
    def python(self) -> str:
        """The services' Python (it can import nova)."""
        return self.bin('python3')

    def url(self, service: str, path: str = '') -> str:
        return 'http://%s:%d%s' % (HOST, self.ports[service], path)


def cloud_suffix(root: str) -> str:
    """'' for the default state directory (today's names: databases
    ``nova``, user and vhost ``kvmtune_cloud``, DEFAULT_LOCK), else ``_``
    and 8 hex digits of the SHA-256 of its normalized path: a name
    MariaDB, RabbitMQ and a file name take (a database name has at most
    64 characters, a path may have 4096)."""
    path = os.path.normpath(os.path.abspath(root))
    if path == os.path.normpath(DEFAULT_STATE_DIR):
        return ''
    return '_' + hashlib.sha256(path.encode()).hexdigest()[:8]


def db_url(layout: 'Layout', secrets: Mapping[str, str], name: str) -> str:
    """The connection URL of this cloud's database ``name`` (one of
    DATABASES)."""
    return 'mysql+pymysql://%s:%s@%s/%s?charset=utf8' % (
        layout.db_user, secrets['db'], HOST, layout.databases[name])


def render(sections: Mapping[str, Mapping[str, Any]]) -> str:
    """INI text from {section: {key: value}}, keys in given order."""
    parser = configparser.RawConfigParser()
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    for section, values in sections.items():
        if section != 'DEFAULT':
            parser.add_section(section)
        for key, value in values.items():
            parser.set(section, key, str(value))
    out = io.StringIO()
    parser.write(out)
    return out.getvalue()


def authtoken(layout: 'Layout', secrets: Mapping[str, str],
              user: str) -> dict[str, str]:
    keystone = layout.url('keystone', '/v3')
    return {'www_authenticate_uri': keystone,
            'auth_url': keystone, 'auth_type': 'password',
            'project_domain_name': 'Default', 'user_domain_name': 'Default',
            'project_name': 'service', 'username': user,
            'password': secrets[user]}


def service_auth(layout: 'Layout', secrets: Mapping[str, str],
                 user: str) -> dict[str, str]:
    auth = authtoken(layout, secrets, user)
    del auth['www_authenticate_uri']
    auth['region_name'] = REGION
    return auth


def keystone(layout: 'Layout', secrets: Mapping[str, str]) -> Conf:
    keys = os.path.join(layout.etc, 'keystone')
    return {'DEFAULT': {'max_token_size': 255},
            'database': {'connection':
                         db_url(layout, secrets, 'keystone')},
            'token': {'provider': 'fernet'},
            # Throw-away passwords: the cheapest bcrypt cost keeps user
            # creation and token requests fast on 2 shared cores.
            'identity': {'password_hash_rounds': 4},
            'fernet_tokens': {'key_repository':
                              os.path.join(keys, 'fernet-keys')},
            # Receipts (MFA) have their own repository option, checked by
            # `keystone-manage bootstrap`; its default /etc/keystone/... is
            # missing on a fresh machine.
            'fernet_receipts': {'key_repository':
                                os.path.join(keys, 'fernet-keys')},
            'credential': {'key_repository':
                           os.path.join(keys, 'credential-keys')},
            # Uncached, a token request makes ~130 SQL queries (~1 s here);
            # cached, ~40 ms. The in-process cache is coherent only within
            # one process, and keystone 30 answered spurious 403s to
            # concurrent requests on a cold memory cache: so keystone runs
            # as one single-threaded gunicorn worker.
            'cache': {'enabled': 'true',
                      'backend': 'dogpile.cache.memory'}}


def placement(layout: 'Layout', secrets: Mapping[str, str]) -> Conf:
    return {'api': {'auth_strategy': 'keystone'},
            'keystone_authtoken': authtoken(layout, secrets, 'placement'),
            'placement_database': {'connection':
                                   db_url(layout, secrets, 'placement')}}


def glance(layout: 'Layout', secrets: Mapping[str, str]) -> Conf:
    data = os.path.join(layout.data, 'glance')
    return {'DEFAULT': {'enabled_backends': 'fs:file',
                        'worker_self_reference_url': layout.url('glance')},
            'glance_store': {'default_backend': 'fs'},
            'fs': {'filesystem_store_datadir': os.path.join(data, 'images')},
            'os_glance_staging_store': {
                'filesystem_store_datadir': os.path.join(data, 'staging')},
            'os_glance_tasks_store': {
                'filesystem_store_datadir': os.path.join(data, 'tasks')},
            'database': {'connection': db_url(layout, secrets, 'glance')},
            'keystone_authtoken': authtoken(layout, secrets, 'glance'),
            'paste_deploy': {'flavor': 'keystone'},
            'oslo_concurrency': {'lock_path': os.path.join(data, 'lock')}}


def transport_url(layout: 'Layout') -> str:
    return 'rabbit://guest:guest@%s:5672/%s' % (HOST, layout.rabbit_vhost)


def nova(layout: 'Layout', secrets: Mapping[str, str], network: str
         ) -> Conf:
    """Settings every nova service reads (API, conductor, scheduler)."""
    state = os.path.join(layout.data, 'nova')
    neutron = service_auth(layout, secrets, 'neutron')
    if network == 'stub':
        # See netstub.py: the network endpoint answers port reads only.
        # (It is in the catalog too; this saves Nova the lookup.)
        neutron['endpoint_override'] = layout.url('network')
    return {
        'DEFAULT': {
            'transport_url': transport_url(layout),
            'my_ip': HOST, 'state_path': state,
            # `down` waits for this, then SIGKILLs.
            'graceful_shutdown_timeout': 10,
        },
        'api': {'auth_strategy': 'keystone'},
        'wsgi': {'api_paste_config':
                 os.path.join(layout.nova_dir, 'api-paste.ini')},
        'api_database': {'connection':
                         db_url(layout, secrets, 'nova_api')},
        'database': {'connection': db_url(layout, secrets, 'nova')},
        'keystone_authtoken': authtoken(layout, secrets, 'nova'),
        'placement': service_auth(layout, secrets, 'placement'),
        'glance': {'endpoint_override': layout.url('glance')},
        # Real Neutron is found in the catalog.
        'neutron': neutron,
        # Neutron 29's policy lets a member delete a port of a server
        # (device_owner compute:*) only with a service token carrying the
        # `service` role: Nova deletes the ports it made for a server this
        # way (seen: 403 "rule:delete_port is disallowed by policy", the
        # server in ERROR, when Rally booted with nics=[net-id]).
        'service_user': dict(service_auth(layout, secrets, 'nova'),
                             send_service_user_token='true'),
        'conductor': {'workers': 1},
        'scheduler': {'workers': 1,
                      'discover_hosts_in_cells_interval': -1},
        'filter_scheduler': {'enabled_filters': filters()},
        'quota': {'instances': -1, 'cores': -1, 'ram': -1},
        # Without it Placement is asked for VCPU when PCPU does not fit.
        'workarounds': {'disable_fallback_pcpu_query': 'true'},
        'oslo_concurrency': {'lock_path': os.path.join(state, 'lock')},
        'oslo_messaging_notifications': {'driver': 'noop'},
    }


def compute(layout: 'Layout', mode: str, virt_type: str | None) -> Conf:
    """nova-compute's own file, read after nova.conf (it wins).

    ``kvmtune nova-conf apply`` edits this file; ``kvmtune cloud
    restart-compute`` makes nova-compute read it again.
    """
    helper = '%s --config-file %s --config-file %s' % (
        layout.bin('privsep-helper'), layout.nova_conf, layout.compute_conf)
    conf: Conf = {
        'DEFAULT': {
            'compute_driver': FAKE_DRIVER if mode == 'fake'
            else LIBVIRT_DRIVER,
            # Unpinned guests share CPUs generously on this small host;
            # pinned guests take PCPUs, which are never overcommitted.
            'cpu_allocation_ratio': 16.0, 'ram_allocation_ratio': 1.5,
            'disk_allocation_ratio': 2.0, 'reserved_host_memory_mb': 512,
            # restart-compute waits for the DEBUG inventory report line.
            'debug': 'true',
            # The periodic tasks start when the service does, not after
            # a random delay of up to 60 s (Nova's default, against many
            # computes restarting at once; here a restart is followed by
            # what its periodic tasks do, such as the deleted-guest reaper
            # below).
            'periodic_fuzzy_delay': 0,
        },
        'compute': {},
    }
    if mode == 'libvirt':
        conf['DEFAULT'].update({'force_config_drive': 'true',
                                'mkisofs_cmd': 'genisoimage',
                                # A guest Nova deleted while this compute
                                # was down (a local delete) keeps running
                                # until the compute's reaper destroys it
                                # (default every 1800 s).
                                'running_deleted_instance_poll_interval':
                                    30})
        conf['libvirt'] = {'virt_type': virt_type}
        # TCP serial consoles on loopback log through virtlogd, so the
        # console log API still answers after the guest powered off (a
        # pty console has no path then: 404 "no console available").
        conf['serial_console'] = {'enabled': 'true',
                                  'proxyclient_address': HOST,
                                  'port_range': '10000:10099'}
        # No sudo here: privsep daemons are started directly (as root).
        for group in ('nova_sys_admin', 'vif_plug_ovs_privileged',
                      'vif_plug_linux_bridge_privileged'):
            conf[group] = {'helper_command': helper}
    return conf


# --- computes 2..N: the NUMA fake driver under their own host names --------


def clouds_yaml(layout: 'Layout', secrets: Mapping[str, str]) -> str:
    """clouds.yaml text (YAML written by hand: the passwords are
    URL-safe tokens, quoted)."""
    def cloud(name: str, user: str, project: str, password: str) -> str:
        return ('  %s:\n    auth:\n      auth_url: %s\n'
                '      username: %s\n      password: "%s"\n'
                '      project_name: %s\n'
                '      user_domain_name: Default\n'
                '      project_domain_name: Default\n'
                '    region_name: %s\n    identity_api_version: 3\n'
                '    interface: public\n' % (name,
                                             layout.url('keystone', '/v3'),
                                             user, password, project,
                                             REGION))
    return ('clouds:\n' +
            cloud(ADMIN_CLOUD, 'admin', 'admin', secrets['admin']) +
            cloud('kvmtune-member', 'kvmtune-member', 'kvmtune-member',
                  secrets['member']))
