"""The embedded test cloud: a real OpenStack on 127.0.0.1, one or more
nova-computes (``computes``).

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
  up(compute='fake', network=None, facts=None, virt_type=None,
     computes=1, compute_facts=None, rotate_credentials=False)
                              a fresh cloud (the last up's passwords
                              unless rotated); returns its figures
  down()                      stop exactly what up() started
  status()                    what runs, its ports, memory, computes;
                              None if down
  env()                       {name: value} for tests (no secrets)
  restart_compute(host=None)  after editing env()['KVMTUNE_NOVA_CONF']
                              (or, with host, that compute's file)

Every function takes ``layout=None`` (then ``layout()``) and ``say``, a
callable given each progress line (default: say nothing).
"""

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
import concurrent.futures
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from typing import Any
from typing import IO
from typing import TYPE_CHECKING

from kvmtune.errors import CloudError
from kvmtune.errors import InputError
from kvmtune.testcloud import config
from kvmtune.testcloud import host
from kvmtune.testcloud import neutron
from kvmtune.testcloud import procs
from kvmtune.testcloud import rest
from kvmtune.testcloud import services

if TYPE_CHECKING:
    from kvmtune.facts.types import Facts

COMPUTE_MODES = ('fake', 'libvirt')
NETWORKS = config.NETWORKS
VIRT_TYPES = ('kvm', 'qemu')
STOP_HINT = 'kvmtune cloud down'
# How long `down` waits for a service to end on SIGTERM before it
# SIGKILLs it and says so. Each stops within its own grace: Nova and
# Neutron (oslo.service) [DEFAULT] graceful_shutdown_timeout = 10 s
# (config.nova, neutron.neutron_conf; Neutron's default of 60 s made `down`
# SIGKILL the RPC server and the OVS agent), the WSGI services (gunicorn)
# --graceful-timeout 5 s; nova-compute may also be destroying guests.
STOP_GRACE = 20
# The OVS agent quits its loop and its RPC within quitting_rpc_timeout
# (10 s) of SIGTERM, but its process never ends: os-ken's native hub
# cannot stop the OpenFlow listener's thread (os_ken/lib/hub.py: kill() is
# a no-op, StreamServer.serve_forever loops on accept()). It holds no
# state: `down` SIGKILLs it once its own shutdown is over, and says so.
STOP_TIMEOUT = {'nova-compute': 60, 'neutron-openvswitch-agent': 15}
STOP_NOTE = {'neutron-openvswitch-agent':
             "expected: os-ken's OpenFlow listener thread never ends"}
DEFAULT_STOP_TIMEOUT = STOP_GRACE
# the services `down` stops first, in this order; the switch comes last
STOP_ORDER = ('nova-compute', 'nova-api', 'nova-conductor',
              'nova-scheduler', 'glance', 'placement', 'keystone',
              'network') + neutron.STOP_ORDER
# how progress lines are told (print, a log's, or _quiet)
Say = Callable[[str], object]


def _quiet(line: str) -> None:
    pass


def layout(config_files: Iterable[str] | None = None) -> config.Layout:
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


def _resolve(given: config.Layout | None) -> config.Layout:
    return given if given is not None else layout()


class Timer:
    """Named phase durations, for the summary and timings.json."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.phases: dict[str, float] = {}

    def phase(self, name: str, since: float) -> None:
        self.phases[name] = round(time.monotonic() - since, 1)

    def total(self) -> float:
        return round(time.monotonic() - self.start, 1)


# --- install ---------------------------------------------------------------

def install(libvirt: bool = True, layout: config.Layout | None = None,
            say: Say = _quiet, output: IO[Any] | None = None
            ) -> dict[str, Any]:
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
    changed: list[str] = []
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

def _running_services(lay: config.Layout) -> dict[str, int]:
    state = procs.load_state(lay)
    return {n: p for n, p in state.get('services', {}).items()
            if procs.alive(p)}


def _check_ports_free(lay: config.Layout) -> None:
    taken = ['%s %d' % (service, port)
             for service, port in sorted(lay.ports.items())
             if host.port_open(port)]
    if taken:
        raise CloudError('port in use on %s: %s'
                         % (config.HOST, ', '.join(taken)),
                         source='kvmtune.conf', key='[testcloud] *_port',
                         fix='stop what listens there, or choose other '
                             'ports')


def _extra_facts(computes: int, compute_facts: Iterable[str] | None
                 ) -> list[tuple[int, str, 'Facts']]:
    """[(index, path, facts)] of computes 2..``computes``: the files given
    first, then the shipped shapes (config.EXTRA_SHAPES); InputError for
    a count out of range, a missing, unreadable or shapeless file."""
    from kvmtune import facts as facts_mod

    if isinstance(computes, bool) or not isinstance(computes, int) or \
            not 1 <= computes <= config.MAX_COMPUTES:
        raise InputError('--computes %r out of range' % (computes,),
                         key='computes',
                         fix='give 1 to %d (each extra compute takes ~150 '
                             'MB)' % config.MAX_COMPUTES)
    given = list(compute_facts or ())
    if len(given) > computes - 1:
        raise InputError('%d --compute-facts files for %d extra computes'
                         % (len(given), computes - 1),
                         key='compute_facts',
                         fix='give at most one file per extra compute '
                             '(--computes N has N-1), or raise --computes')
    extras: list[tuple[int, str, 'Facts']] = []
    for index in range(2, computes + 1):
        if given:
            path = os.path.abspath(given.pop(0))
        else:
            path = config.default_extra_facts(index, services.FILES)
        if not os.path.isfile(path):
            raise InputError('no such facts file', source=path,
                             fix='give a file from kvmtune host inspect '
                                 '--format json')
        facts = facts_mod.load(path)    # InputError naming the problem
        problem = config.check_extra_facts(facts)
        if problem:
            raise InputError('facts unusable for a fake compute: %s'
                             % problem, source=path,
                             fix='give a file from kvmtune host inspect '
                                 '--format json of a host with NUMA nodes')
        extras.append((index, path, facts))
    return extras


def _check_host_name(name: str, indexes: Iterable[int]) -> None:
    """The first compute takes this machine's host name: an extra compute
    must not have it too."""
    taken = [config.extra_host(i) for i in indexes
             if config.extra_host(i) == name]
    if taken:
        raise InputError('this machine is named %s, the host name of an '
                         'extra compute' % name, key='computes',
                         fix='rename the machine or use fewer --computes')


def _prepare_extra_computes(lay: config.Layout,
                            extras: Iterable[tuple[int, str, 'Facts']]
                            ) -> list[dict[str, Any]]:
    """Write each extra compute's facts copy and file; its state entry."""
    computes: list[dict[str, Any]] = []
    for index, source, facts in extras:
        shared, dedicated = config.extra_cpu_sets(facts)
        entry: dict[str, Any] = {
            'index': index, 'host': config.extra_host(index),
            'driver': 'fake', 'service': config.extra_service(index),
            'conf': lay.extra_compute_conf(index),
            'facts': lay.extra_compute_facts(index),
            'facts_source': source,
            'state_path': lay.extra_state_path(index),
            'cpu_shared_set': shared, 'cpu_dedicated_set': dedicated,
            'provider': None}
        procs.write_file(entry['facts'], json.dumps(facts, indent=2))
        procs.write_file(entry['conf'], config.render(config.extra_compute(
            lay, index, shared, dedicated)), 0o600)
        os.makedirs(os.path.join(entry['state_path'], 'lock'),
                    exist_ok=True)
        computes.append(entry)
    return computes


def up(compute: str = 'fake', network: str | None = None,
       facts: str | None = None, virt_type: str | None = None,
       layout: config.Layout | None = None, say: Say = _quiet,
       computes: int = 1, compute_facts: Iterable[str] | None = None,
       rotate_credentials: bool = False) -> dict[str, Any]:
    """Start a fresh cloud: databases, RabbitMQ vhost and state directory
    are emptied first. Returns when every nova-compute's resource provider
    is in Placement with its inventory and its host is mapped to cell1
    (and, with Neutron, the OVS agent is alive).

    The passwords (admin, kvmtune-member, the services', the database's)
    are the last up's, from secrets.json: clouds.yaml copies and Rally
    environments made from it keep working across down and up
    (services.load_secrets). ``rotate_credentials`` makes new ones.

    With ``computes`` N > 1, N-1 more nova-compute services run beside
    the first (``compute``'s driver), all on the NUMA fake driver, each
    with host name ``kvmtune-compute-<i>`` (i = 2..N), its own file
    etc/nova/nova-compute-<i>.conf, state path data/nova-compute-<i> (so
    its own compute_id and resource provider) and log. Its shape is a
    facts JSON: the files of ``compute_facts`` in order, then the shapes
    shipped in files/hosts/ (config.EXTRA_SHAPES: compute 2 a 2-socket
    Intel with 1 GiB pages, compute 3 a 4-node AMD EPYC with 2 MiB
    pages, compute 4 a real 2-socket Intel capture). Its [compute]
    cpu_shared_set is the first online CPU of a NUMA node and its thread
    siblings (VCPU), cpu_dedicated_set every other online CPU in a node
    (PCPU): config.extra_cpu_sets.

    :param compute: 'fake' (Nova's fake driver reporting a real NUMA
        topology) or 'libvirt' (real QEMU guests)
    :param network: 'neutron' or 'stub'; default neutron with libvirt,
        stub with fake
    :param facts: a kvmtune facts JSON file: the fake compute's host shape
    :param virt_type: libvirt's 'kvm' or 'qemu'; default: detected
    :param computes: how many nova-compute services (1 to
        config.MAX_COMPUTES)
    :param compute_facts: facts JSON files of computes 2, 3, ...
    :param rotate_credentials: new passwords instead of the last up's
    :returns: {'mode', 'network', 'virt_type', 'seconds', 'phases',
               'credentials' ('kept', 'new' or 'rotated'),
               'compute_host', 'provider', 'inventory': {class: total},
               'clouds_yaml', 'compute_conf',
               'computes': [{'host', 'driver', 'provider', 'conf',
               'inventory', 'rss_kb' (extra computes; the first: None),
               ...}] (the first compute first)}
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
    extras = _extra_facts(computes, compute_facts)
    _check_host_name(socket.gethostname(), [i for i, _, _ in extras])
    if _running_services(lay):
        raise CloudError('a cloud is already up', source=lay.root,
                         fix='run: %s' % STOP_HINT)
    _clean_after_crash(lay, say)
    if facts and not os.path.isfile(facts):
        raise InputError('no such facts file', source=facts,
                         fix='give a file from kvmtune host inspect '
                             '--format json')
    _check_ports_free(lay)
    timer = Timer()
    virt_type = virt_type or host.detect_virt_type()
    state: dict[str, Any] = {
             'mode': compute, 'network': network, 'services': {},
             'virt_type': virt_type if compute == 'libvirt' else None,
             'facts': os.path.abspath(facts) if facts else None,
             'ports': lay.ports}
    for sub in ('etc', 'data', 'log', 'run'):
        shutil.rmtree(os.path.join(lay.root, sub), ignore_errors=True)
        os.makedirs(os.path.join(lay.root, sub), exist_ok=True)
    os.chmod(lay.root, 0o700)
    secrets, credentials = services.load_secrets(lay.secrets,
                                                 rotate_credentials)
    procs.write_file(lay.secrets, json.dumps(secrets), 0o600)
    pids = state['services']

    t = time.monotonic()
    state['started_mariadb'] = host.ensure_mariadb()
    procs.save_state(lay, state)
    state['started_rabbitmq'] = host.ensure_rabbitmq()
    procs.save_state(lay, state)
    services.install_driver(lay)
    services.write_configs(lay, secrets, compute, virt_type, network)
    state['computes'] = _prepare_extra_computes(lay, extras)
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

    def timed(name: str, chain: Callable[..., None], *chain_args: Any
              ) -> None:
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
    for extra in state['computes']:
        pids[extra['service']] = services.start_extra_compute(lay, extra)
    procs.save_state(lay, state)
    for service in ('placement', 'glance', 'nova-api', 'network'):
        rest.wait_http(lay.url(service), 60)
    token = services.admin_token(lay, secrets)
    extra_hosts = [extra['host'] for extra in state['computes']]

    def computes_alive() -> None:
        for service in ['nova-compute'] + [
                extra['service'] for extra in state['computes']]:
            if not procs.alive(pids[service]):
                raise CloudError('%s exited while registering' % service,
                                 source=lay.log_file(service),
                                 fix='read the end of this log')
    # Three nova-computes starting on 2 shared cores take longer.
    providers = services.wait_providers(
        lay, token, extra_hosts, 1 + len(extra_hosts),
        180 + 60 * len(extra_hosts), computes_alive)
    first = [p for name, p in sorted(providers.items())
             if name not in extra_hosts]
    if len(first) != 1:
        raise CloudError('resource providers %s: not one first compute '
                         'beside %s' % (', '.join(sorted(providers)),
                                        ', '.join(extra_hosts)),
                         source=lay.root, fix='run: %s; then up again'
                         % STOP_HINT)
    provider = first[0]
    for name in [provider['name']] + extra_hosts:
        services.map_host(lay, name, 120)
    state['compute_host'] = provider['name']
    state['provider'] = provider['uuid']
    for extra in state['computes']:
        extra['provider'] = providers[extra['host']]['uuid']
    procs.save_state(lay, state)
    timer.phase('compute%s registered+mapped' % (
        's' if extra_hosts else ''), t)
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
    listed = []
    for entry in procs.computes_of(state, lay):
        listed.append(dict(entry, inventory=_totals(
            lay, token, entry['provider']), rss_kb=procs.tree_rss_kb(
            pids[entry['service']]) if entry['index'] > 1 else None))
    return {'mode': compute, 'network': network,
            'virt_type': state['virt_type'], 'credentials': credentials,
            'seconds': state['up_seconds'], 'phases': timer.phases,
            'compute_host': provider['name'], 'provider': provider['uuid'],
            'inventory': listed[0]['inventory'],
            'clouds_yaml': lay.clouds_yaml,
            'compute_conf': lay.compute_conf, 'computes': listed}


def _clean_after_crash(lay: config.Layout, say: Say) -> None:
    """Clean up after a cloud whose services all died (SIGKILL, OOM, a
    reboot) without `down`: what still runs with its marker (helpers,
    libvirtd), its guests' libvirt domains (read from its Nova database
    before up() empties it), its bridges and stale pid ledger. Nothing
    to do after a `down`."""
    state = procs.load_state(lay)
    if not (state.get('services') or procs.owned_pids(lay) or
            os.path.exists(lay.ledger)):
        return
    say('a cloud in %s was not taken down (its services died): cleaning '
        'up what it left' % lay.root)
    if state.get('mode') == 'libvirt' and \
            host.virsh('version').returncode != 0:
        # QEMU guests outlive libvirtd; only it can destroy them.
        host.ensure_libvirtd(lay, say)
    stopped = down(layout=lay, say=say)
    say('cleaned up: %s' % (', '.join(stopped) or 'stale state only'))


def _totals(lay: config.Layout, token: str, provider: str) -> dict[str, int]:
    """{resource class: total} of a provider."""
    inventory = rest.placement_inventories(
        lay.url('placement'), token, provider)['inventories']
    return {rc: inv['total'] for rc, inv in sorted(inventory.items())}


# --- down, restart-compute, status, env --------------------------------------

def _libvirt_domains_of_cloud() -> list[str]:
    """UUIDs of libvirt domains that are instances of this cloud."""
    try:
        ours = set(host.mysql('SELECT uuid FROM nova.instances').split())
    except CloudError:
        return []
    listed = host.virsh('list', '--all', '--uuid')
    return [u for u in listed.stdout.split() if u in ours]


def _is_compute(service: str) -> bool:
    """'nova-compute' and the extra computes' 'nova-compute-<i>'."""
    return service == 'nova-compute' or service.startswith('nova-compute-')


def _stop(say: Say, named: Mapping[str, int], timeout: float) -> list[str]:
    """SIGTERM the {name: pid} processes, SIGKILL those still running
    ``timeout`` s later, one line each; returns the names killed."""
    killed = procs.terminate(list(named.values()), timeout)
    names = [n for n, p in named.items() if p in killed]
    for name in names:
        say('%s (pid %d) still running %d s after SIGTERM: SIGKILL%s'
            % (name, named[name], timeout, ' (%s)' % STOP_NOTE[name]
               if name in STOP_NOTE else ''))
    return names


def down(layout: config.Layout | None = None, say: Say = _quiet) -> list[str]:
    """Stop exactly what up() started (its ledger and marked processes),
    and MariaDB, RabbitMQ, Open vSwitch only when up() started them.

    Every service gets SIGTERM and STOP_GRACE s (nova-compute
    STOP_TIMEOUT's) to end; one still running then is SIGKILLed, with a
    line naming it.

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
    stopped: list[str] = []
    # Every nova-compute at once (each may take its graceful shutdown
    # time), before the services they report to.
    computes = sorted(name for name, pid in pids.items()
                      if _is_compute(name) and procs.alive(pid))
    if computes:
        killed = _stop(say, {n: pids[n] for n in computes},
                       STOP_TIMEOUT['nova-compute'])
        stopped += [n + (' (SIGKILL)' if n in killed else '')
                    for n in computes]
    ovs = ('ovs-vswitchd', 'ovsdb-server')
    for name in STOP_ORDER + tuple(sorted(set(pids) - set(STOP_ORDER) -
                                          set(ovs))):
        pid = pids.get(name)
        if pid and procs.alive(pid):
            killed = _stop(say, {name: pid}, STOP_TIMEOUT.get(
                name, DEFAULT_STOP_TIMEOUT))
            stopped.append(name + (' (SIGKILL)' if killed else ''))
    if state.get('network') == 'neutron':
        names = {p: n for n, p in pids.items()}
        stopped += neutron.stop_ovs(state, lambda p: _stop(
            say, {names.get(x, 'pid %d' % x): x for x in p},
            DEFAULT_STOP_TIMEOUT))
    # What is left with our marker: gunicorn workers, privsep daemons,
    # virtlogd/libvirtd when this cloud started them.
    leftovers = procs.owned_pids(lay)
    if leftovers:
        _stop(say, {'helper %s' % (procs.cmdline(p)[:40] or '?'): p
                    for p in leftovers}, DEFAULT_STOP_TIMEOUT)
        stopped.append('%d helper processes' % len(leftovers))
    if state.get('started_rabbitmq'):
        subprocess.call(['rabbitmqctl', '-q', 'stop'])
        subprocess.call(['epmd', '-kill'], stderr=subprocess.DEVNULL)
        stopped.append('rabbitmq')
    if state.get('started_mariadb'):
        try:
            with open('/run/mysqld/mysqld.pid') as f:
                pid = int(f.read())
        except (OSError, ValueError):
            pid = None      # it died with the cloud: nothing to stop
        if pid and procs.alive(pid):
            _stop(say, {'mariadb': pid}, 60)
            stopped.append('mariadb')
    if os.path.exists(lay.ledger):
        os.remove(lay.ledger)
    if state:
        state['services'] = {}
        state['started_mariadb'] = state['started_rabbitmq'] = False
        state['started_ovs'] = False
        procs.save_state(lay, state)
    return stopped


def _compute_inventory_logged(log: str, offset: int, provider: str) -> bool:
    import re

    with open(log, 'rb') as f:
        f.seek(offset)
        text = f.read().decode(errors='replace')
    return re.search(r'(Inventory has not changed|Updated inventory) for '
                     r'provider %s' % provider, text) is not None


def _find_compute(lay: config.Layout, state: Mapping[str, Any],
                  host_name: str | None) -> dict[str, Any]:
    """The compute entry (procs.computes_of) named ``host_name``, the
    first compute when None."""
    computes = procs.computes_of(state, lay)
    if not computes or not state.get('services'):
        raise CloudError('no cloud is up', source=lay.root,
                         fix='run: kvmtune cloud up')
    if host_name is None:
        return computes[0]
    for entry in computes:
        if entry['host'] == host_name:
            return entry
    raise InputError('no compute host %r in this cloud' % host_name,
                     source=lay.state, key='--host',
                     fix='one of: %s' % ', '.join(
                         str(e['host']) for e in computes))


def restart_compute(layout: config.Layout | None = None,
                    say: Say = _quiet, host: str | None = None
                    ) -> dict[str, Any]:
    """Restart a nova-compute (it reads its files again) and wait until
    it has reported its inventory to Placement.

    :param host: the compute's host name (``kvmtune cloud status`` lists
        them); default: the first compute, whose file is
        env()['KVMTUNE_NOVA_CONF']
    :returns: {'seconds': float, 'host': name,
               'inventory': {class: total}}
    """
    lay = _resolve(layout)
    state = procs.load_state(lay)
    entry = _find_compute(lay, state, host)
    service = entry['service']
    pid = state['services'].get(service)
    if not pid:
        raise CloudError('no cloud is up', source=lay.root,
                         fix='run: kvmtune cloud up')
    started = time.monotonic()
    log = lay.log_file(service)
    if procs.alive(pid):
        procs.terminate([pid], STOP_TIMEOUT['nova-compute'])
    offset = os.path.getsize(log)
    services.install_driver(lay)
    if entry['index'] == 1:
        pid = services.start_compute(lay, state)
    else:
        pid = services.start_extra_compute(lay, entry)
    state['services'][service] = pid
    procs.save_state(lay, state)

    def reported() -> bool:
        if not procs.alive(pid):
            raise CloudError('%s exited (bad configuration?)' % service,
                             source=log, fix='read the end of this log')
        return _compute_inventory_logged(log, offset, entry['provider'])
    procs.wait_until(reported, 180, '%s inventory report' % service)
    with open(lay.secrets) as f:
        token = services.admin_token(lay, json.load(f))
    return {'seconds': round(time.monotonic() - started, 1),
            'host': entry['host'],
            'inventory': _totals(lay, token, entry['provider'])}


def status(layout: config.Layout | None = None) -> dict[str, Any] | None:
    """What runs, its ports and memory; None when no cloud is up.

    :returns: {'root', 'mode', 'network', 'virt_type', 'up_seconds',
               'processes': [{'pid', 'name', 'rss_kb', 'pss_kb',
               'cmdline'}], 'rss_kb', 'pss_kb',
               'ports': {service: (port, listening)},
               'not_running': [service names],
               'computes': [{'host', 'driver', 'provider', 'pid',
               'running', 'rss_kb', 'inventory', ...}] (the first
               compute first), 'clouds_yaml', 'stop'}
    """
    lay = _resolve(layout)
    state = procs.load_state(lay)
    pids = state.get('services', {})
    if not pids:
        return None
    names = {p: n for n, p in pids.items()}
    processes: list[dict[str, Any]] = []
    for pid in sorted(procs.owned_pids(lay)):
        rss, pss = procs.memory_kb(pid)
        processes.append({'pid': pid, 'name': names.get(pid, ''),
                          'rss_kb': rss, 'pss_kb': pss,
                          'cmdline': procs.cmdline(pid)})
    # the ports this cloud was started with (the options may have changed)
    ports = state.get('ports') or lay.ports
    computes = _compute_status(lay, state)
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
            'computes': computes,
            'clouds_yaml': lay.clouds_yaml, 'stop': STOP_HINT}


def _compute_status(lay: config.Layout, state: Mapping[str, Any]
                    ) -> list[dict[str, Any]]:
    """procs.computes_of entries with 'pid', 'running', 'rss_kb' (the
    process tree's VmRSS) and 'inventory' ({class: total} from Placement,
    None when Placement or Keystone does not answer)."""
    pids = state.get('services', {})
    token = None
    try:
        with open(lay.secrets) as f:
            token = services.admin_token(lay, json.load(f))
    except (OSError, ValueError, KeyError, rest.HTTPError):
        pass
    listed = []
    for entry in procs.computes_of(state, lay):
        pid = pids.get(entry['service'])
        running = bool(pid) and procs.alive(pid)
        inventory = None
        if token and entry.get('provider'):
            try:
                inventory = _totals(lay, token, entry['provider'])
            except (OSError, ValueError, KeyError, rest.HTTPError):
                pass
        listed.append(dict(entry, pid=pid, running=running,
                           rss_kb=procs.tree_rss_kb(pid) if running else 0,
                           inventory=inventory))
    return listed


def env(layout: config.Layout | None = None) -> dict[str, str]:
    """What tests and tools need to use the cloud, as {name: value}
    (never a password): KVMTUNE_CLOUD_DIR, OS_CLIENT_CONFIG_FILE,
    OS_CLOUD, KVMTUNE_NOVA_CONF (the compute's own nova.conf),
    KVMTUNE_CLOUD_MODE, KVMTUNE_CLOUD_NETWORK, KVMTUNE_CLOUD_VENV.
    """
    lay = _resolve(layout)
    state = procs.load_state(lay)
    return {'KVMTUNE_CLOUD_DIR': lay.root,
            'OS_CLIENT_CONFIG_FILE': lay.clouds_yaml,
            'OS_CLOUD': 'kvmtune-admin',
            'KVMTUNE_NOVA_CONF': lay.compute_conf,
            'KVMTUNE_CLOUD_MODE': state.get('mode', ''),
            'KVMTUNE_CLOUD_NETWORK': state.get('network', ''),
            'KVMTUNE_CLOUD_VENV': lay.venv}


def python(layout: config.Layout | None = None) -> str:
    """The services' Python (it imports nova): Nova's own checks of
    nova.conf values run under it."""
    return _resolve(layout).python
