"""kvmtune test cloud: a real single-host OpenStack on 127.0.0.1.

Keystone, Placement, Glance, Nova (API, conductor, scheduler, compute) and
Neutron (ML2/OVS, userspace datapath) from PyPI in their own venv, MariaDB,
RabbitMQ and Open vSwitch from Debian, state under $KVMTUNE_CLOUD_DIR
(default /var/lib/kvmtune-cloud). See README.md.

  install                 install what is missing (apt, venv, fake driver)
  up [--compute MODE]     fresh cloud; MODE fake (default) or libvirt
     [--network NET]      neutron (default with libvirt) or stub (fake)
  down                    stop exactly what `up` started
  env                     shell exports for tests (no secrets)
  restart-compute         restart nova-compute, wait for its inventory
  status                  what runs, PIDs, memory
"""

import argparse
import base64
import concurrent.futures
import glob
import json
import os
import re
import secrets as secrets_mod
import shutil
import socket
import subprocess
import sys
import time

import cloudconf
import netcloud
import procs
import rest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir, os.pardir))
VENV = cloudconf.VENV
DRIVER_SOURCE = os.path.join(HERE, 'kvmtune_numa_fake.py')

APT_BASE = ('mariadb-server', 'rabbitmq-server', 'python3-venv')
APT_LIBVIRT = ('libvirt-daemon', 'libvirt-daemon-driver-qemu',
               'libvirt-clients', 'qemu-system-x86', 'qemu-utils',
               'genisoimage', 'pkg-config', 'libvirt-dev') + netcloud.APT
QEMU_CONF = '/etc/libvirt/qemu.conf'
QEMU_CONF_BLOCK = """
# kvmtune test cloud: root-run QEMU without cgroups or a security driver
cgroup_controllers = [ ]
user = "root"
group = "root"
security_driver = "none"
"""
# The OVS agent and the RPC server ignored SIGTERM for 15 s (seen); they
# hold no state.
STOP_TIMEOUT = {'nova-compute': 60, 'neutron-openvswitch-agent': 5,
                'neutron-rpc-server': 5}
DEFAULT_STOP_TIMEOUT = 15


class CloudError(Exception):
    pass


def layout():
    return cloudconf.Layout(os.environ.get('KVMTUNE_CLOUD_DIR',
                                           '/var/lib/kvmtune-cloud'))


def bin_(name):
    return os.path.join(VENV, 'bin', name)


class Timer:
    """Named phase durations, for the summary and timings.json."""

    def __init__(self):
        self.start = time.monotonic()
        self.phases = {}

    def phase(self, name, since):
        self.phases[name] = round(time.monotonic() - since, 1)

    def total(self):
        return round(time.monotonic() - self.start, 1)


# --- install -------------------------------------------------------------

def _dpkg_installed(package):
    out = subprocess.run(['dpkg-query', '-W', '-f=${Status}', package],
                         capture_output=True, text=True).stdout
    return out.endswith('installed') and 'not-installed' not in out


def _apt_install(packages):
    missing = [p for p in packages if not _dpkg_installed(p)]
    if not missing:
        print('apt: all present (%s)' % ' '.join(packages))
        return
    print('apt: installing %s' % ' '.join(missing))
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    policy = subprocess.run(['apt-cache', 'policy', missing[0]],
                            capture_output=True, text=True).stdout
    if 'Candidate: (none)' in policy or not policy.strip():
        subprocess.check_call(['apt-get', 'update', '-q'], env=env)
    subprocess.check_call(['apt-get', '-o', 'DPkg::Lock::Timeout=300',
                           'install', '-y', '-q',
                           '--no-install-recommends'] + missing, env=env)


def _venv_satisfied(requirements):
    check = ('import importlib.metadata as m, sys\n'
             'for line in open(sys.argv[1]):\n'
             '    line = line.split("#")[0].strip()\n'
             '    if not line: continue\n'
             '    name, _, version = line.partition("==")\n'
             '    try: have = m.version(name)\n'
             '    except m.PackageNotFoundError: sys.exit(1)\n'
             '    if version and have != version: sys.exit(1)\n')
    return os.path.exists(bin_('python')) and subprocess.call(
        [bin_('python'), '-c', check, requirements]) == 0


def driver_target():
    """nova/virt/ of the venv, whichever Python version built the venv."""
    virt = glob.glob(os.path.join(VENV, 'lib', 'python3*', 'site-packages',
                                  'nova', 'virt'))
    if len(virt) != 1:
        raise CloudError('%s: no single nova/virt package (run: cloud '
                         'install)' % VENV)
    return os.path.join(virt[0], 'kvmtune_numa_fake.py')


def install_driver():
    """Copy the fake NUMA driver into nova.virt (Nova loads only there)."""
    target = driver_target()
    with open(DRIVER_SOURCE) as f:
        source = f.read()
    try:
        with open(target) as f:
            if f.read() == source:
                return False
    except FileNotFoundError:
        pass
    procs.write_file(target, source)
    return True


def cmd_install(args):
    timer = Timer()
    t = time.monotonic()
    _apt_install(APT_BASE + (() if args.no_libvirt else APT_LIBVIRT))
    timer.phase('apt', t)
    t = time.monotonic()
    requirements = os.path.join(HERE, 'requirements.txt')
    constraints = os.path.join(HERE, 'constraints.txt')
    wanted = [requirements]
    if not args.no_libvirt:
        wanted.append(os.path.join(HERE, 'requirements-libvirt.txt'))
    if all(_venv_satisfied(r) for r in wanted):
        print('venv: %s has the pinned services' % VENV)
    else:
        if not os.path.exists(bin_('python')):
            subprocess.check_call([sys.executable, '-m', 'venv', VENV])
        pip = [bin_('pip'), 'install', '-q', '-c', constraints]
        for r in wanted:
            pip += ['-r', r]
        print('venv: pip install into %s' % VENV)
        subprocess.check_call(pip)
    timer.phase('venv', t)
    changed = install_driver()
    print('driver: %s %s' % (driver_target(), 'installed' if changed
                             else 'up to date'))
    if not args.no_libvirt:
        _qemu_conf()
        _libvirt_accounts()
    print('install: %.1f s (%s)' % (timer.total(), ', '.join(
        '%s %.1f s' % kv for kv in timer.phases.items())))
    return 0


def _qemu_conf():
    # libvirt-daemon-system ships the file; the bare daemon runs without.
    try:
        with open(QEMU_CONF) as f:
            text = f.read()
    except FileNotFoundError:
        text = ''
    if QEMU_CONF_BLOCK.strip() in text:
        return
    procs.write_file(QEMU_CONF, text + QEMU_CONF_BLOCK, 0o600)
    print('libvirt: %s: root QEMU, no cgroups, no security driver'
          % QEMU_CONF)


# --- MariaDB, RabbitMQ, libvirt ------------------------------------------

def _port_open(port):
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((cloudconf.HOST, port)) == 0


def _mysql(sql):
    out = subprocess.run(['mariadb', '-uroot', '-N', '-B', '-e', sql],
                         capture_output=True, text=True)
    if out.returncode:
        raise CloudError('mariadb: %s' % out.stderr.strip())
    return out.stdout


def _mysql_up():
    return subprocess.call(['mariadb', '-uroot', '-e', 'SELECT 1'],
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL) == 0


def _process_exists(predicate):
    for entry in os.listdir('/proc'):
        if entry.isdigit():
            try:
                with open('/proc/%s/cmdline' % entry, 'rb') as f:
                    if predicate(f.read().split(b'\0')):
                        return True
            except OSError:
                continue
    return False


def _mariadbd(argv):
    return argv[0] == b'/usr/sbin/mariadbd'


def _rabbit(argv):
    return b'rabbit' in argv and b'boot' in argv and b'-s' in argv


def ensure_mariadb():
    """Start MariaDB unless its server process exists; True if started.

    Decided by the process, not by a query: a slow server is not a
    stopped one, and `down` stops only what `up` started.
    """
    started = not _process_exists(_mariadbd)
    if started:
        os.makedirs('/run/mysqld', exist_ok=True)
        shutil.chown('/run/mysqld', 'mysql', 'mysql')
        subprocess.check_call(['start-stop-daemon', '--start', '--oknodo',
                               '--background', '--exec',
                               '/usr/sbin/mariadbd'])
    procs.wait_until(_mysql_up, 60, 'MariaDB')
    return started


def _rabbit_up():
    return _port_open(5672) and subprocess.call(
        ['rabbitmqctl', '-q', 'await_startup'], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL) == 0


def ensure_rabbitmq():
    started = not _process_exists(_rabbit)
    if started:
        # epmd binds 0.0.0.0 unless told otherwise.
        env = dict(os.environ, ERL_EPMD_ADDRESS=cloudconf.HOST,
                   RABBITMQ_NODE_IP_ADDRESS=cloudconf.HOST)
        subprocess.check_call(['rabbitmq-server', '-detached'], env=env)
    procs.wait_until(_rabbit_up, 90, 'RabbitMQ')
    return started


def reset_databases(secrets):
    """Drop and create the cloud's databases and its DB user's grants."""
    sql = []
    for db in cloudconf.DATABASES:
        sql.append('DROP DATABASE IF EXISTS `%s`; CREATE DATABASE `%s` '
                   'CHARACTER SET utf8mb4;' % (db, db))
    for host in ('127.0.0.1', 'localhost'):
        user = "'%s'@'%s'" % (cloudconf.DB_USER, host)
        sql.append("CREATE USER IF NOT EXISTS %s; ALTER USER %s "
                   "IDENTIFIED BY '%s';" % (user, user, secrets['db']))
        sql += ['GRANT ALL PRIVILEGES ON `%s`.* TO %s;' % (db, user)
                for db in cloudconf.DATABASES]
    _mysql(' '.join(sql))


def reset_rabbit_vhost():
    vhost = cloudconf.RABBIT_VHOST
    subprocess.call(['rabbitmqctl', '-q', 'delete_vhost', vhost],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for argv in (['add_vhost', vhost],
                 ['set_permissions', '-p', vhost, 'guest', '.*', '.*',
                  '.*']):
        subprocess.check_call(['rabbitmqctl', '-q'] + argv,
                              stdout=subprocess.DEVNULL)


def _virsh(*argv):
    return subprocess.run(['virsh', '-c', 'qemu:///system'] + list(argv),
                          capture_output=True, text=True)


def _libvirt_accounts():
    """The accounts libvirt-daemon-system would create (that package also
    pulls in systemd, which this tool avoids). libvirtd resolves its
    built-in default user before it reads qemu.conf's `user = "root"`."""
    for group in ('kvm', 'libvirt', 'libvirt-qemu'):
        if subprocess.call(['getent', 'group', group],
                           stdout=subprocess.DEVNULL):
            subprocess.check_call(['groupadd', '--system', group])
    if subprocess.call(['getent', 'passwd', 'libvirt-qemu'],
                       stdout=subprocess.DEVNULL):
        subprocess.check_call([
            'useradd', '--system', '--no-create-home', '--gid',
            'libvirt-qemu', '--groups', 'kvm', '--home-dir',
            '/var/lib/libvirt', '--shell', '/usr/sbin/nologin',
            'libvirt-qemu'])


HUGEPAGES_SYSFS = '/sys/kernel/mm/hugepages'


def _hugetlbfs_mounts():
    """{page size in kB: mount point} of the hugetlbfs mounts."""
    found = {}
    default_kb = _default_hugepage_kb()
    with open('/proc/mounts') as f:
        for line in f:
            fields = line.split()
            if fields[2] != 'hugetlbfs':
                continue
            size = re.search(r'pagesize=(\d+)([KMG])', fields[3])
            kb = (int(size.group(1)) * {'K': 1, 'M': 1024,
                                        'G': 1024 * 1024}[size.group(2)]
                  if size else default_kb)
            found.setdefault(kb, fields[1])
    return found


def _default_hugepage_kb():
    with open('/proc/meminfo') as f:
        return int(re.search(r'Hugepagesize:\s+(\d+)', f.read()).group(1))


def _mount_hugetlbfs():
    """One hugetlbfs mount per page-size pool, as systemd would mount the
    default one: libvirtd reads the mounts only when it starts, and a guest
    whose hw:mem_page_size has no mount fails to start ("Unable to find any
    usable hugetlbfs mount"), e.g. 2 MB guests on a host booted with
    default_hugepagesz=1G."""
    mounted = _hugetlbfs_mounts()
    default_kb = _default_hugepage_kb()
    for entry in sorted(os.listdir(HUGEPAGES_SYSFS)):
        kb = int(re.match(r'hugepages-(\d+)kB', entry).group(1))
        if kb in mounted:
            continue
        path = ('/dev/hugepages' if kb == default_kb
                else '/dev/hugepages-%dkB' % kb)
        os.makedirs(path, exist_ok=True)
        subprocess.run(['mount', '-t', 'hugetlbfs', '-o', 'pagesize=%dK' % kb,
                        'hugetlbfs', path], check=True, timeout=30)


def ensure_libvirtd(lay):
    """Start virtlogd and libvirtd unless running. Returns started names."""
    if _virsh('version').returncode == 0:
        return []
    _qemu_conf()
    _libvirt_accounts()
    # libvirt-daemon-system would create these.
    for path in ('/var/log/libvirt/qemu', '/var/lib/libvirt/qemu',
                 '/var/cache/libvirt/qemu', '/run/libvirt'):
        os.makedirs(path, exist_ok=True)
    _mount_hugetlbfs()
    started = []
    for daemon in ('virtlogd', 'libvirtd'):
        procs.run(lay, daemon, [daemon, '-d'])
        started.append(daemon)
    procs.wait_until(lambda: _virsh('version').returncode == 0, 30,
                     'libvirtd')
    return started


def detect_virt_type():
    """kvm only with hardware virtualization and a /dev/kvm that creates a
    VM; PVM-backed /dev/kvm does not boot stock guest kernels
    (FIELD-NOTES), so it counts as absent."""
    with open('/proc/cpuinfo') as f:
        flags = set(re.findall(r'\b(vmx|svm)\b', f.read()))
    if not flags or os.path.exists('/sys/module/kvm_pvm'):
        return 'qemu'
    # the probe `kvmtune host inspect` makes (stdlib only, like this tool)
    sys.path.insert(0, REPO)
    from kvmtune.facts import virt
    return 'kvm' if virt.probe_kvm()['usable'] else 'qemu'


# --- up --------------------------------------------------------------------

def _new_secrets():
    return {k: secrets_mod.token_urlsafe(18) for k in
            ('db', 'admin', 'member') + cloudconf.SERVICE_USERS}


def write_configs(lay, secrets, mode, virt_type, network):
    files = {
        lay.keystone_conf: cloudconf.keystone(lay, secrets),
        os.path.join(lay.placement_dir, 'placement.conf'):
            cloudconf.placement(lay, secrets),
        os.path.join(lay.glance_dir, 'glance-api.conf'):
            cloudconf.glance(lay, secrets),
        lay.nova_conf: cloudconf.nova(lay, secrets, network),
        lay.compute_conf: cloudconf.compute(lay, mode, virt_type),
    }
    for path, sections in files.items():
        procs.write_file(path, cloudconf.render(sections), 0o600)
    shutil.copy(os.path.join(VENV, 'etc', 'nova', 'api-paste.ini'),
                lay.nova_dir)
    shutil.copy(os.path.join(VENV, 'etc', 'glance', 'glance-api-paste.ini'),
                lay.glance_dir)
    for sub in ('glance/images', 'glance/staging', 'glance/tasks',
                'glance/lock', 'nova/lock', 'nova/instances'):
        os.makedirs(os.path.join(lay.data, sub), exist_ok=True)
    if network == 'neutron':
        netcloud.write_configs(lay, secrets)


def _gunicorn(lay, name, target, env, threads=4):
    # --keep-alive 0: every response closes its connection. With gunicorn's
    # 2 s keep-alive, a client reusing a pooled connection at the moment
    # the server drops it as idle gets "Remote end closed connection
    # without response" (seen once in CI on a DELETE); on loopback a new
    # connection per request costs nothing.
    argv = [bin_('gunicorn'), '--bind', '%s:%d' % (
        cloudconf.HOST, cloudconf.PORTS[name]), '--workers', '1',
        '--threads', str(threads), '--timeout', '300',
        '--graceful-timeout', '5', '--keep-alive', '0',
        '--pythonpath', HERE, '--name', 'kvmtune-' + name,
        'kvmtune_wsgi:application']
    env = dict(env, KVMTUNE_WSGI_TARGET=target, KVMTUNE_WSGI_PROG=name)
    return procs.start(lay, name, argv, env)


def _write_key_repository(path):
    """What `keystone-manage fernet_setup` leaves: a staged key (0) and a
    primary key (1), each 32 random bytes in URL-safe base64, in a 0700
    directory; written here to save two keystone-manage runs."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    for index in ('0', '1'):
        key = base64.urlsafe_b64encode(os.urandom(32)).decode()
        procs.write_file(os.path.join(path, index), key, 0o600)


def _keystone_chain(lay, secrets, pids, network):
    conf = ['--config-file', lay.keystone_conf]
    km = bin_('keystone-manage')
    procs.run(lay, 'keystone-manage', [km] + conf + ['db_sync'])
    keys = os.path.dirname(lay.keystone_conf)
    for repository in ('fernet-keys', 'credential-keys'):
        _write_key_repository(os.path.join(keys, repository))
    ks = cloudconf.url('keystone', '/v3')
    procs.run(lay, 'keystone-manage', [km] + conf + [
        'bootstrap', '--bootstrap-password', secrets['admin'],
        '--bootstrap-admin-url', ks, '--bootstrap-public-url', ks,
        '--bootstrap-internal-url', ks,
        '--bootstrap-region-id', cloudconf.REGION])
    # One process, one thread: see the [cache] note in cloudconf.keystone.
    pids['keystone'] = _gunicorn(
        lay, 'keystone',
        'keystone.server.wsgi:initialize_public_application()',
        {'OS_KEYSTONE_CONFIG_FILES': lay.keystone_conf}, threads=1)
    rest.wait_http(cloudconf.url('keystone', '/v3'), 60)
    keystone = rest.Keystone(ks, secrets['admin'])
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        service_project = pool.submit(keystone.project, 'service')
        member_project = pool.submit(keystone.project, 'kvmtune-member')
        roles = {r: pool.submit(keystone.role, r)
                 for r in ('admin', 'service', 'member')}
        services = [pool.submit(keystone.service, name, type_, endpoint,
                                cloudconf.REGION)
                    for name, type_, endpoint in cloudconf.catalog(network)]
        users = [pool.submit(keystone.user, user, secrets[user],
                             service_project.result(),
                             [roles['admin'].result(),
                              roles['service'].result()])
                 for user in cloudconf.SERVICE_USERS]
        users.append(pool.submit(
            keystone.user, 'kvmtune-member', secrets['member'],
            member_project.result(), [roles['member'].result()]))
        for future in services + users:
            future.result()


def _placement_chain(lay, pids):
    procs.run(lay, 'placement-manage', [
        bin_('placement-manage'), '--config-dir', lay.placement_dir,
        'db', 'sync'])
    pids['placement'] = _gunicorn(
        lay, 'placement', 'placement.wsgi.api:application',
        {'OS_PLACEMENT_CONFIG_DIR': lay.placement_dir})


def _glance_chain(lay, pids):
    procs.run(lay, 'glance-manage', [
        bin_('glance-manage'), '--config-file',
        os.path.join(lay.glance_dir, 'glance-api.conf'), 'db_sync'])
    pids['glance'] = _gunicorn(
        lay, 'glance', 'glance.wsgi.api:application',
        {'OS_GLANCE_CONFIG_DIR': lay.glance_dir})


def _nova_manage(lay, *argv):
    procs.run(lay, 'nova-manage', [bin_('nova-manage'), '--config-file',
                                   lay.nova_conf] + list(argv))


def _nova_chain(lay, pids):
    _nova_manage(lay, 'api_db', 'sync')
    _nova_manage(lay, 'cell_v2', 'map_cell0')
    _nova_manage(lay, 'cell_v2', 'create_cell', '--name', 'cell1')
    _nova_manage(lay, 'db', 'sync')
    pids['nova-api'] = _gunicorn(
        lay, 'nova-api', 'nova.wsgi.osapi_compute:application',
        {'OS_NOVA_CONFIG_DIR': lay.nova_dir})


def _neutron_chain(lay, pids):
    netcloud.db_sync(lay, bin_)
    pids['neutron-api'] = _gunicorn(lay, 'network',
                                    'neutron.wsgi.api:application',
                                    netcloud.api_env(lay))
    netcloud.start_rpc_and_agent(lay, pids, bin_)


def start_compute(lay, state):
    env = {}
    if state.get('facts'):
        env['KVMTUNE_FAKE_FACTS'] = state['facts']
    return procs.start(lay, 'nova-compute', [
        bin_('nova-compute'), '--config-file', lay.nova_conf,
        '--config-file', lay.compute_conf], env)


def _admin_token(secrets):
    return rest.Keystone(cloudconf.url('keystone', '/v3'),
                         secrets['admin']).token


def wait_provider(token, timeout):
    placement = cloudconf.url('placement')
    found = []

    def exists():
        found[:] = rest.placement_providers(placement, token)
        return bool(found)
    procs.wait_until(exists, timeout,
                     'nova-compute resource provider')
    return found[0]


def _host_mapped(host):
    return host in _mysql('SELECT host FROM nova_api.host_mappings').split()


def map_host(lay, host, timeout):
    deadline = time.monotonic() + timeout
    while not _host_mapped(host):
        if time.monotonic() > deadline:
            raise CloudError('host %s not mapped after %d s'
                             % (host, timeout))
        _nova_manage(lay, 'cell_v2', 'discover_hosts')


def _running_services(lay):
    state = procs.load_state(lay)
    return {n: p for n, p in state.get('services', {}).items()
            if procs.alive(p)}


def cmd_up(args):
    lay = layout()
    if _running_services(lay) or procs.owned_pids(lay):
        raise CloudError('a cloud is already up in %s (run: cloud down)'
                         % lay.root)
    if args.facts and not os.path.isfile(args.facts):
        raise CloudError('%s: no such facts file' % args.facts)
    timer = Timer()
    virt_type = args.virt_type or detect_virt_type()
    network = args.network or ('neutron' if args.compute == 'libvirt'
                               else 'stub')
    state = {'mode': args.compute, 'network': network, 'services': {},
             'virt_type': virt_type if args.compute == 'libvirt' else None,
             'facts': os.path.abspath(args.facts) if args.facts else None}
    for sub in ('etc', 'data', 'log', 'run'):
        shutil.rmtree(os.path.join(lay.root, sub), ignore_errors=True)
        os.makedirs(os.path.join(lay.root, sub), exist_ok=True)
    os.chmod(lay.root, 0o700)
    secrets = _new_secrets()
    procs.write_file(lay.secrets, json.dumps(secrets), 0o600)
    pids = state['services']

    t = time.monotonic()
    state['started_mariadb'] = ensure_mariadb()
    procs.save_state(lay, state)
    state['started_rabbitmq'] = ensure_rabbitmq()
    procs.save_state(lay, state)
    install_driver()
    write_configs(lay, secrets, args.compute, virt_type, network)
    procs.save_state(lay, state)
    timer.phase('prepare', t)

    t = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        vhost = pool.submit(reset_rabbit_vhost)
        ovs = (pool.submit(netcloud.start_ovs, lay, pids)
               if network == 'neutron' else None)
        try:
            reset_databases(secrets)
            if args.compute == 'libvirt':
                state['started_daemons'] = ensure_libvirtd(lay)
            vhost.result()
            if ovs:
                state['started_ovs'] = ovs.result()
        finally:
            procs.save_state(lay, state)
    if network == 'stub':
        pids['network'] = procs.start(lay, 'network', [
            sys.executable, os.path.join(HERE, 'netstub.py'),
            '--port', str(cloudconf.PORTS['network'])])
    timer.phase('databases' + (', ovs' if network == 'neutron' else ''), t)

    t = time.monotonic()

    def timed(name, chain, *chain_args):
        chain(*chain_args)
        timer.phase('sync+start ' + name, t)

    with concurrent.futures.ThreadPoolExecutor(5) as pool:
        chains = [
            pool.submit(timed, 'keystone', _keystone_chain, lay, secrets,
                        pids, network),
            pool.submit(timed, 'placement', _placement_chain, lay, pids),
            pool.submit(timed, 'glance', _glance_chain, lay, pids),
            pool.submit(timed, 'nova', _nova_chain, lay, pids)]
        if network == 'neutron':
            chains.append(pool.submit(timed, 'neutron', _neutron_chain, lay,
                                      pids))
        try:
            for future in chains:
                future.result()
        finally:
            procs.save_state(lay, state)

    t = time.monotonic()
    # They authenticate to Keystone when they start: users must exist.
    for service in ('nova-conductor', 'nova-scheduler'):
        pids[service] = procs.start(lay, service, [
            bin_(service), '--config-file', lay.nova_conf])
    pids['nova-compute'] = start_compute(lay, state)
    procs.save_state(lay, state)
    for service in ('placement', 'glance', 'nova-api', 'network'):
        rest.wait_http(cloudconf.url(service), 60)
    token = _admin_token(secrets)
    provider = wait_provider(token, 180)
    map_host(lay, provider['name'], 120)
    state['compute_host'] = provider['name']
    state['provider'] = provider['uuid']
    timer.phase('compute registered+mapped', t)
    if network == 'neutron':
        t = time.monotonic()
        netcloud.wait_agent(token, 120, pids['neutron-openvswitch-agent'])
        timer.phase('neutron ovs agent alive', t)

    procs.write_file(lay.clouds_yaml, cloudconf.clouds_yaml(secrets), 0o600)
    state['up_seconds'] = timer.total()
    procs.save_state(lay, state)
    timings = {'mode': args.compute, 'network': network,
               'up_seconds': state['up_seconds'],
               'phases': timer.phases, 'at': time.time()}
    procs.write_file(lay.timings, json.dumps(timings, indent=2))
    inventory = rest.placement_inventories(
        cloudconf.url('placement'), token, provider['uuid'])['inventories']
    print('kvmtune test cloud up (%s compute%s, network %s) in %.1f s' % (
        args.compute, ', virt_type=%s' % virt_type
        if args.compute == 'libvirt' else '', network, state['up_seconds']))
    for phase, seconds in timer.phases.items():
        print('  %-28s %6.1f s' % (phase, seconds))
    print('  compute host %s, provider %s'
          % (provider['name'], provider['uuid']))
    print('  inventory: %s' % ', '.join(
        '%s=%d' % (rc, inv['total']) for rc, inv in sorted(
            inventory.items())))
    print('  clouds.yaml: %s (kvmtune-admin, kvmtune-member)'
          % lay.clouds_yaml)
    print('  compute config: %s' % lay.compute_conf)
    return 0


# --- down, restart-compute, status, env ----------------------------------

def _libvirt_domains_of_cloud():
    """UUIDs of libvirt domains that are instances of this cloud."""
    try:
        ours = set(_mysql('SELECT uuid FROM nova.instances').split())
    except CloudError:
        return []
    listed = _virsh('list', '--all', '--uuid')
    return [u for u in listed.stdout.split() if u in ours]


def cmd_down(args):
    lay = layout()
    state = procs.load_state(lay)
    services = state.get('services', {})
    if state.get('mode') == 'libvirt' and _virsh('version').returncode == 0:
        for domain in _libvirt_domains_of_cloud():
            _virsh('destroy', domain)
            _virsh('undefine', domain, '--nvram')
            print('destroyed domain %s' % domain)
    order = ['nova-compute', 'nova-api', 'nova-conductor', 'nova-scheduler',
             'glance', 'placement', 'keystone', 'network']
    order += list(netcloud.STOP_ORDER)
    stopped = []
    ovs = ('ovs-vswitchd', 'ovsdb-server')
    for name in order + sorted(set(services) - set(order) - set(ovs)):
        pid = services.get(name)
        if pid and procs.alive(pid):
            killed = procs.terminate([pid], STOP_TIMEOUT.get(
                name, DEFAULT_STOP_TIMEOUT))
            stopped.append(name + (' (SIGKILL)' if killed else ''))
    if state.get('network') == 'neutron':
        stopped += netcloud.stop_ovs(state, lambda pids: procs.terminate(
            pids, DEFAULT_STOP_TIMEOUT))
    # What is left with our marker: gunicorn workers, privsep daemons,
    # virtlogd/libvirtd when this cloud started them.
    leftovers = procs.owned_pids(lay)
    if leftovers:
        procs.terminate(leftovers, DEFAULT_STOP_TIMEOUT)
        stopped.append('%d helper processes' % len(leftovers))
    if state.get('started_rabbitmq'):
        subprocess.call(['rabbitmqctl', '-q', 'stop'])
        subprocess.call(['epmd', '-kill'], stderr=subprocess.DEVNULL)
        stopped.append('rabbitmq')
    if state.get('started_mariadb'):
        with open('/run/mysqld/mysqld.pid') as f:
            procs.terminate([int(f.read())], 60)
        stopped.append('mariadb')
    if os.path.exists(lay.ledger):
        os.remove(lay.ledger)
    if state:
        state['services'] = {}
        state['started_mariadb'] = state['started_rabbitmq'] = False
        state['started_ovs'] = False
        procs.save_state(lay, state)
    print('stopped: %s' % (', '.join(stopped) or 'nothing was running'))
    return 0


def _compute_inventory_logged(log, offset, provider):
    with open(log, 'rb') as f:
        f.seek(offset)
        text = f.read().decode(errors='replace')
    return re.search(r'(Inventory has not changed|Updated inventory) for '
                     r'provider %s' % provider, text) is not None


def cmd_restart_compute(args):
    lay = layout()
    state = procs.load_state(lay)
    pid = state.get('services', {}).get('nova-compute')
    if not pid:
        raise CloudError('no cloud is up in %s (run: cloud up)' % lay.root)
    started = time.monotonic()
    log = lay.log_file('nova-compute')
    if procs.alive(pid):
        procs.terminate([pid], STOP_TIMEOUT['nova-compute'])
    offset = os.path.getsize(log)
    install_driver()
    pid = state['services']['nova-compute'] = start_compute(lay, state)
    procs.save_state(lay, state)

    def reported():
        if not procs.alive(pid):
            raise CloudError('nova-compute exited (bad configuration?): '
                             'see %s' % log)
        return _compute_inventory_logged(log, offset, state['provider'])
    procs.wait_until(reported, 180, 'nova-compute inventory report')
    with open(lay.secrets) as f:
        token = _admin_token(json.load(f))
    inventory = rest.placement_inventories(
        cloudconf.url('placement'), token, state['provider'])['inventories']
    print('nova-compute restarted in %.1f s; inventory: %s' % (
        time.monotonic() - started, ', '.join(
            '%s=%d' % (rc, inv['total'])
            for rc, inv in sorted(inventory.items()))))
    return 0


def cmd_status(args):
    lay = layout()
    state = procs.load_state(lay)
    services = state.get('services', {})
    if not services:
        print('no cloud up in %s' % lay.root)
        return 1
    print('cloud in %s: %s compute, network %s' % (
        lay.root, state.get('mode'), state.get('network', 'stub')))
    total_rss = total_pss = 0
    owned = procs.owned_pids(lay)
    for pid in sorted(owned):
        rss, pss = procs.memory_kb(pid)
        total_rss += rss
        total_pss += pss
        name = next((n for n, p in services.items() if p == pid), '')
        print('  %7d %-15s rss %6.0f MiB pss %6.0f MiB  %s' % (
            pid, name, rss / 1024, pss / 1024, procs.cmdline(pid)[:70]))
    down = [n for n, p in services.items() if not procs.alive(p)]
    print('total: %d processes, rss %.0f MiB, pss %.0f MiB%s' % (
        len(owned), total_rss / 1024, total_pss / 1024,
        '; NOT RUNNING: %s' % ', '.join(down) if down else ''))
    return 2 if down else 0


def cmd_env(args):
    lay = layout()
    state = procs.load_state(lay)
    print('export KVMTUNE_CLOUD_DIR=%s' % lay.root)
    print('export OS_CLIENT_CONFIG_FILE=%s' % lay.clouds_yaml)
    print('export OS_CLOUD=kvmtune-admin')
    print('export KVMTUNE_NOVA_CONF=%s' % lay.compute_conf)
    print('export KVMTUNE_CLOUD_MODE=%s' % state.get('mode', ''))
    print('export KVMTUNE_CLOUD_NETWORK=%s' % state.get('network', ''))
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='cloud', description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest='command', required=True)
    p = sub.add_parser('install', help='install what is missing')
    p.add_argument('--no-libvirt', action='store_true',
                   help='skip libvirt/QEMU packages (fake mode only)')
    p.set_defaults(func=cmd_install)
    p = sub.add_parser('up', help='start a fresh cloud')
    p.add_argument('--compute', choices=('fake', 'libvirt'), default='fake')
    p.add_argument('--facts', help='kvmtune facts JSON: host shape of the '
                   'fake driver (default: 2 nodes x 2 cores x 2 threads)')
    p.add_argument('--network', choices=cloudconf.NETWORKS,
                   help='network endpoint: real Neutron (ML2/OVS, '
                   'userspace datapath) or the read-only stub (default: '
                   'neutron with libvirt, stub with fake)')
    p.add_argument('--virt-type', choices=('kvm', 'qemu'),
                   help='libvirt virt_type (default: detected)')
    p.set_defaults(func=cmd_up)
    for name, func in (('down', cmd_down), ('env', cmd_env),
                       ('restart-compute', cmd_restart_compute),
                       ('status', cmd_status)):
        sub.add_parser(name).set_defaults(func=func)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (CloudError, RuntimeError, TimeoutError, OSError,
            rest.HTTPError, subprocess.CalledProcessError) as e:
        print('cloud %s: error: %s' % (args.command, e), file=sys.stderr)
        return 2


if __name__ == '__main__':
    sys.exit(main())
