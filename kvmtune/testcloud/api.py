"""The embedded single-host test cloud: a real OpenStack on 127.0.0.1.

Keystone, Placement, Glance, Nova (API, conductor, scheduler, compute) and
Neutron (ML2/OVS, userspace datapath) from PyPI in their own virtualenv,
MariaDB, RabbitMQ and Open vSwitch from Debian. doc/testcloud.md describes
what runs and why.

The library behind ``kvmtune cloud``, called alike by that command, the
main job and the functional tests; plain arguments, results as data:

  layout(config_files=None)   where it lives: [testcloud] options of
                              kvmtune.conf, KVMTUNE_CLOUD_DIR and
                              KVMTUNE_CLOUD_VENV take precedence
  install(libvirt=True)       what is missing (apt, venv, fake driver)
  up(compute='fake', network=None, facts=None, virt_type=None)
                              a fresh cloud; returns its figures
  down()                      stop exactly what up() started
  status()                    what runs, its ports, memory; None if down
  env()                       {name: value} for tests (no secrets)
  restart_compute()           after editing env()['KVMTUNE_NOVA_CONF']

Every function takes ``layout=None`` (then ``layout()``) and ``say``, a
callable given each progress line (default: say nothing).
"""

import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import time

from kvmtune.errors import CloudError
from kvmtune.errors import InputError
from kvmtune.testcloud import config
from kvmtune.testcloud import host
from kvmtune.testcloud import neutron
from kvmtune.testcloud import procs
from kvmtune.testcloud import rest
from kvmtune.testcloud import services

COMPUTE_MODES = ('fake', 'libvirt')
NETWORKS = config.NETWORKS
VIRT_TYPES = ('kvm', 'qemu')
STOP_HINT = 'kvmtune cloud down'
# The OVS agent and the RPC server ignored SIGTERM for 15 s (seen); they
# hold no state.
STOP_TIMEOUT = {'nova-compute': 60, 'neutron-openvswitch-agent': 5,
                'neutron-rpc-server': 5}
DEFAULT_STOP_TIMEOUT = 15
# the services `down` stops first, in this order; the switch comes last
STOP_ORDER = ('nova-compute', 'nova-api', 'nova-conductor',
              'nova-scheduler', 'glance', 'placement', 'keystone',
              'network') + neutron.STOP_ORDER


def _quiet(line):
    pass


def layout(config_files=None):
    """The test cloud's Layout from kvmtune.conf's [testcloud] options.

    ``KVMTUNE_CLOUD_DIR`` and ``KVMTUNE_CLOUD_VENV`` in the environment
    take precedence over ``state_dir`` and ``venv`` (the functional tests
    and CI set them).

    :param config_files: kvmtune.conf paths (``--config-file``); default
        /etc/kvmtune/kvmtune.conf when it exists.
    """
    from kvmtune import conf
    from kvmtune.conf import testcloud as opts

    group = conf.load(config_files).testcloud
    try:    # oslo.config checks a value when it is read
        ports = {service: getattr(group, name)
                 for name, service in opts.PORT_OPTS.items()}
        state_dir, venv = group.state_dir, group.venv
    except ValueError as exc:   # ConfigFileValueError is one
        raise InputError(str(exc), source=', '.join(config_files or ()) or
                         'kvmtune.conf', key='[testcloud]',
                         fix='correct the option as its help text says')
    if len(set(ports.values())) != len(ports):
        raise InputError('two services on one port: %s' % ', '.join(
            '%s=%d' % (name, getattr(group, name))
            for name in sorted(opts.PORT_OPTS)),
            source='kvmtune.conf', key='[testcloud] *_port',
            fix='give each service its own port')
    root = os.environ.get('KVMTUNE_CLOUD_DIR') or state_dir
    venv = os.environ.get('KVMTUNE_CLOUD_VENV') or venv
    for name, path in (('state_dir', root), ('venv', venv)):
        if not os.path.isabs(path):
            raise InputError('not an absolute path: %r' % path,
                             source='kvmtune.conf', key='[testcloud] ' + name,
                             fix='give an absolute directory path')
    return config.Layout(root, venv, ports)


def _resolve(given):
    return given if given is not None else layout()


class Timer:
    """Named phase durations, for the summary and timings.json."""

    def __init__(self):
        self.start = time.monotonic()
        self.phases = {}

    def phase(self, name, since):
        self.phases[name] = round(time.monotonic() - since, 1)

    def total(self):
        return round(time.monotonic() - self.start, 1)


# --- install ---------------------------------------------------------------

def install(libvirt=True, layout=None, say=_quiet, output=None):
    """Install what is missing: Debian packages, the services' venv
    (pinned by files/constraints.txt), the fake driver; with ``libvirt``
    also QEMU, libvirt and Open vSwitch. A second run only checks.

    :param output: file object for apt's and pip's own output (default:
        this process's stdout)
    :returns: {'seconds': total, 'phases': {name: seconds},
               'changed': [what was installed]}
    """
    lay = _resolve(layout)
    timer = Timer()
    changed = []
    t = time.monotonic()
    packages = host.APT_BASE + (host.APT_LIBVIRT if libvirt else ())
    missing = [p for p in packages if not host.dpkg_installed(p)]
    host.apt_install(packages, say, output)
    if missing:
        changed.append('apt: ' + ' '.join(missing))
    timer.phase('apt', t)
    t = time.monotonic()
    wanted = [os.path.join(services.FILES, 'requirements.txt')]
    if libvirt:
        wanted.append(os.path.join(services.FILES,
                                   'requirements-libvirt.txt'))
    if all(host.venv_satisfied(lay, r) for r in wanted):
        say('venv: %s has the pinned services' % lay.venv)
    else:
        if not os.path.exists(lay.python):
            subprocess.check_call([sys.executable, '-m', 'venv', lay.venv],
                                  stdout=output, stderr=output)
        pip = [lay.bin('pip'), 'install', '-q', '-c',
               os.path.join(services.FILES, 'constraints.txt')]
        for r in wanted:
            pip += ['-r', r]
        say('venv: pip install into %s' % lay.venv)
        subprocess.check_call(pip, stdout=output, stderr=output)
        changed.append('venv ' + lay.venv)
    timer.phase('venv', t)
    if services.install_driver(lay):
        changed.append('driver')
        say('driver: %s installed' % services.driver_target(lay))
    else:
        say('driver: %s up to date' % services.driver_target(lay))
    if libvirt:
        host.qemu_conf(say)
        host.libvirt_accounts()
    return {'seconds': timer.total(), 'phases': timer.phases,
            'changed': changed}


# --- up ----------------------------------------------------------------------

def _running_services(lay):
    state = procs.load_state(lay)
    return {n: p for n, p in state.get('services', {}).items()
            if procs.alive(p)}


def _check_ports_free(lay):
    taken = ['%s %d' % (service, port)
             for service, port in sorted(lay.ports.items())
             if host.port_open(port)]
    if taken:
        raise CloudError('port in use on %s: %s'
                         % (config.HOST, ', '.join(taken)),
                         source='kvmtune.conf', key='[testcloud] *_port',
                         fix='stop what listens there, or choose other '
                             'ports')


def up(compute='fake', network=None, facts=None, virt_type=None,
       layout=None, say=_quiet):
    """Start a fresh cloud: databases, RabbitMQ vhost and state directory
    are emptied first. Returns when nova-compute's resource provider is in
    Placement (and, with Neutron, the OVS agent is alive).

    :param compute: 'fake' (Nova's fake driver reporting a real NUMA
        topology) or 'libvirt' (real QEMU guests)
    :param network: 'neutron' or 'stub'; default neutron with libvirt,
        stub with fake
    :param facts: a kvmtune facts JSON file: the fake compute's host shape
    :param virt_type: libvirt's 'kvm' or 'qemu'; default: detected
    :returns: {'mode', 'network', 'virt_type', 'seconds', 'phases',
               'compute_host', 'provider', 'inventory': {class: total},
               'clouds_yaml', 'compute_conf'}
    """
    lay = _resolve(layout)
    if compute not in COMPUTE_MODES:
        raise InputError('unknown compute mode %r' % compute, key='compute',
                         fix='one of: %s' % ', '.join(COMPUTE_MODES))
    network = network or ('neutron' if compute == 'libvirt' else 'stub')
    if network not in NETWORKS:
        raise InputError('unknown network %r' % network, key='network',
                         fix='one of: %s' % ', '.join(NETWORKS))
    if virt_type not in (None,) + VIRT_TYPES:
        raise InputError('unknown virt type %r' % virt_type,
                         key='virt_type',
                         fix='one of: %s' % ', '.join(VIRT_TYPES))
    if _running_services(lay) or procs.owned_pids(lay):
        raise CloudError('a cloud is already up', source=lay.root,
                         fix='run: %s' % STOP_HINT)
    if facts and not os.path.isfile(facts):
        raise InputError('no such facts file', source=facts,
                         fix='give a file from kvmtune host inspect '
                             '--format json')
    _check_ports_free(lay)
    timer = Timer()
    virt_type = virt_type or host.detect_virt_type()
    state = {'mode': compute, 'network': network, 'services': {},
             'virt_type': virt_type if compute == 'libvirt' else None,
             'facts': os.path.abspath(facts) if facts else None,
             'ports': lay.ports}
    for sub in ('etc', 'data', 'log', 'run'):
        shutil.rmtree(os.path.join(lay.root, sub), ignore_errors=True)
        os.makedirs(os.path.join(lay.root, sub), exist_ok=True)
    os.chmod(lay.root, 0o700)
    secrets = services.new_secrets()
    procs.write_file(lay.secrets, json.dumps(secrets), 0o600)
    pids = state['services']

    t = time.monotonic()
    state['started_mariadb'] = host.ensure_mariadb()
    procs.save_state(lay, state)
    state['started_rabbitmq'] = host.ensure_rabbitmq()
    procs.save_state(lay, state)
    services.install_driver(lay)
    services.write_configs(lay, secrets, compute, virt_type, network)
    procs.save_state(lay, state)
    timer.phase('prepare', t)

    t = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        vhost = pool.submit(host.reset_rabbit_vhost)
        ovs = (pool.submit(neutron.start_ovs, lay, pids)
               if network == 'neutron' else None)
        try:
            host.reset_databases(secrets)
            if compute == 'libvirt':
                state['started_daemons'] = host.ensure_libvirtd(lay, say)
            vhost.result()
            if ovs:
                state['started_ovs'] = ovs.result()
        finally:
            procs.save_state(lay, state)
    if network == 'stub':
        pids['network'] = procs.start(lay, 'network', [
            sys.executable, '-m', 'kvmtune.testcloud.netstub',
            '--port', str(lay.ports['network'])])
    timer.phase('databases' + (', ovs' if network == 'neutron' else ''), t)

    t = time.monotonic()

    def timed(name, chain, *chain_args):
        chain(*chain_args)
        timer.phase('sync+start ' + name, t)

    with concurrent.futures.ThreadPoolExecutor(5) as pool:
        chains = [
            pool.submit(timed, 'keystone', services.keystone_chain, lay,
                        secrets, pids, network),
            pool.submit(timed, 'placement', services.placement_chain, lay,
                        pids),
            pool.submit(timed, 'glance', services.glance_chain, lay, pids),
            pool.submit(timed, 'nova', services.nova_chain, lay, pids)]
        if network == 'neutron':
            chains.append(pool.submit(timed, 'neutron',
                                      services.neutron_chain, lay, pids))
        try:
            for future in chains:
                future.result()
        finally:
            procs.save_state(lay, state)

    t = time.monotonic()
    # They authenticate to Keystone when they start: users must exist.
    for service in ('nova-conductor', 'nova-scheduler'):
        pids[service] = procs.start(lay, service, [
            lay.bin(service), '--config-file', lay.nova_conf])
    pids['nova-compute'] = services.start_compute(lay, state)
    procs.save_state(lay, state)
    for service in ('placement', 'glance', 'nova-api', 'network'):
        rest.wait_http(lay.url(service), 60)
    token = services.admin_token(lay, secrets)
    provider = services.wait_provider(lay, token, 180)
    services.map_host(lay, provider['name'], 120)
    state['compute_host'] = provider['name']
    state['provider'] = provider['uuid']
    timer.phase('compute registered+mapped', t)
    if network == 'neutron':
        t = time.monotonic()
        neutron.wait_agent(lay, token, 120, pids['neutron-openvswitch-agent'])
        timer.phase('neutron ovs agent alive', t)

    procs.write_file(lay.clouds_yaml, config.clouds_yaml(lay, secrets),
                     0o600)
    state['up_seconds'] = timer.total()
    procs.save_state(lay, state)
    timings = {'mode': compute, 'network': network,
               'up_seconds': state['up_seconds'],
               'phases': timer.phases, 'at': time.time()}
    procs.write_file(lay.timings, json.dumps(timings, indent=2))
    inventory = rest.placement_inventories(
        lay.url('placement'), token, provider['uuid'])['inventories']
    return {'mode': compute, 'network': network,
            'virt_type': state['virt_type'],
            'seconds': state['up_seconds'], 'phases': timer.phases,
            'compute_host': provider['name'], 'provider': provider['uuid'],
            'inventory': {rc: inv['total']
                          for rc, inv in sorted(inventory.items())},
            'clouds_yaml': lay.clouds_yaml,
            'compute_conf': lay.compute_conf}


# --- down, restart-compute, status, env --------------------------------------

def _libvirt_domains_of_cloud():
    """UUIDs of libvirt domains that are instances of this cloud."""
    try:
        ours = set(host.mysql('SELECT uuid FROM nova.instances').split())
    except CloudError:
        return []
    listed = host.virsh('list', '--all', '--uuid')
    return [u for u in listed.stdout.split() if u in ours]


def down(layout=None, say=_quiet):
    """Stop exactly what up() started (its ledger and marked processes),
    and MariaDB, RabbitMQ, Open vSwitch only when up() started them.

    :returns: the names of what was stopped (empty when nothing ran)
    """
    lay = _resolve(layout)
    state = procs.load_state(lay)
    pids = state.get('services', {})
    if state.get('mode') == 'libvirt' and \
            host.virsh('version').returncode == 0:
        for domain in _libvirt_domains_of_cloud():
            host.virsh('destroy', domain)
            host.virsh('undefine', domain, '--nvram')
            say('destroyed domain %s' % domain)
    stopped = []
    ovs = ('ovs-vswitchd', 'ovsdb-server')
    for name in STOP_ORDER + tuple(sorted(set(pids) - set(STOP_ORDER) -
                                          set(ovs))):
        pid = pids.get(name)
        if pid and procs.alive(pid):
            killed = procs.terminate([pid], STOP_TIMEOUT.get(
                name, DEFAULT_STOP_TIMEOUT))
            stopped.append(name + (' (SIGKILL)' if killed else ''))
    if state.get('network') == 'neutron':
        stopped += neutron.stop_ovs(state, lambda p: procs.terminate(
            p, DEFAULT_STOP_TIMEOUT))
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
    return stopped


def _compute_inventory_logged(log, offset, provider):
    import re

    with open(log, 'rb') as f:
        f.seek(offset)
        text = f.read().decode(errors='replace')
    return re.search(r'(Inventory has not changed|Updated inventory) for '
                     r'provider %s' % provider, text) is not None


def restart_compute(layout=None, say=_quiet):
    """Restart nova-compute (it reads its nova.conf again) and wait until
    it has reported its inventory to Placement.

    :returns: {'seconds': float, 'inventory': {class: total}}
    """
    lay = _resolve(layout)
    state = procs.load_state(lay)
    pid = state.get('services', {}).get('nova-compute')
    if not pid:
        raise CloudError('no cloud is up', source=lay.root,
                         fix='run: kvmtune cloud up')
    started = time.monotonic()
    log = lay.log_file('nova-compute')
    if procs.alive(pid):
        procs.terminate([pid], STOP_TIMEOUT['nova-compute'])
    offset = os.path.getsize(log)
    services.install_driver(lay)
    pid = state['services']['nova-compute'] = services.start_compute(
        lay, state)
    procs.save_state(lay, state)

    def reported():
        if not procs.alive(pid):
            raise CloudError('nova-compute exited (bad configuration?)',
                             source=log, fix='read the end of this log')
        return _compute_inventory_logged(log, offset, state['provider'])
    procs.wait_until(reported, 180, 'nova-compute inventory report')
    with open(lay.secrets) as f:
        token = services.admin_token(lay, json.load(f))
    inventory = rest.placement_inventories(
        lay.url('placement'), token, state['provider'])['inventories']
    return {'seconds': round(time.monotonic() - started, 1),
            'inventory': {rc: inv['total']
                          for rc, inv in sorted(inventory.items())}}


def status(layout=None):
    """What runs, its ports and memory; None when no cloud is up.

    :returns: {'root', 'mode', 'network', 'virt_type', 'up_seconds',
               'processes': [{'pid', 'name', 'rss_kb', 'pss_kb',
               'cmdline'}], 'rss_kb', 'pss_kb',
               'ports': {service: (port, listening)},
               'not_running': [service names], 'clouds_yaml', 'stop'}
    """
    lay = _resolve(layout)
    state = procs.load_state(lay)
    pids = state.get('services', {})
    if not pids:
        return None
    names = {p: n for n, p in pids.items()}
    processes = []
    for pid in sorted(procs.owned_pids(lay)):
        rss, pss = procs.memory_kb(pid)
        processes.append({'pid': pid, 'name': names.get(pid, ''),
                          'rss_kb': rss, 'pss_kb': pss,
                          'cmdline': procs.cmdline(pid)})
    # the ports this cloud was started with (the options may have changed)
    ports = state.get('ports') or lay.ports
    return {'root': lay.root, 'mode': state.get('mode'),
            'network': state.get('network', 'stub'),
            'virt_type': state.get('virt_type'),
            'up_seconds': state.get('up_seconds'),
            'processes': processes,
            'rss_kb': sum(p['rss_kb'] for p in processes),
            'pss_kb': sum(p['pss_kb'] for p in processes),
            'ports': {service: (port, host.port_open(port))
                      for service, port in sorted(ports.items())},
            'not_running': sorted(n for n, p in pids.items()
                                  if not procs.alive(p)),
            'clouds_yaml': lay.clouds_yaml, 'stop': STOP_HINT}


def env(layout=None):
    """What tests and tools need to use the cloud, as {name: value}
    (never a password): KVMTUNE_CLOUD_DIR, OS_CLIENT_CONFIG_FILE,
    OS_CLOUD, KVMTUNE_NOVA_CONF (the compute's own nova.conf),
    KVMTUNE_CLOUD_MODE, KVMTUNE_CLOUD_NETWORK, KVMTUNE_CLOUD_VENV."""
    lay = _resolve(layout)
    state = procs.load_state(lay)
    return {'KVMTUNE_CLOUD_DIR': lay.root,
            'OS_CLIENT_CONFIG_FILE': lay.clouds_yaml,
            'OS_CLOUD': 'kvmtune-admin',
            'KVMTUNE_NOVA_CONF': lay.compute_conf,
            'KVMTUNE_CLOUD_MODE': state.get('mode', ''),
            'KVMTUNE_CLOUD_NETWORK': state.get('network', ''),
            'KVMTUNE_CLOUD_VENV': lay.venv}


def python(layout=None):
    """The services' Python (it imports nova): Nova's own checks of
    nova.conf values run under it."""
    return _resolve(layout).python
