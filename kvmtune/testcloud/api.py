"""The test cloud: a real OpenStack on 127.0.0.1, one or more
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
                              (the work: start.py)
  down()                      stop exactly what up() started (stop.py)
  status()                    what runs, its ports, memory, computes;
                              None if down
  env()                       {name: value} for tests (no secrets)
  restart_compute(host=None)  after editing env()['KVMTUNE_NOVA_CONF']
                              (or, with host, that compute's file;
                              novacompute.py)

Every function takes ``layout=None`` (then ``layout()``) and ``say``, a
callable given each progress line (default: say nothing).
"""

from collections.abc import Iterable
import os
import socket
import time
from typing import Any
from typing import IO

from kvmtune.errors import CloudError
from kvmtune.errors import InputError
from kvmtune.testcloud import config
from kvmtune.testcloud import novacompute
from kvmtune.testcloud import procs
from kvmtune.testcloud import services
from kvmtune.testcloud import start
from kvmtune.testcloud import stop
from kvmtune.testcloud import system
from kvmtune import venvs

COMPUTE_MODES = ('fake', 'libvirt')
VIRT_TYPES = ('kvm', 'qemu')


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


def install(libvirt: bool = True, layout: config.Layout | None = None,
            say: procs.Say = _quiet, output: IO[Any] | None = None
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
    timer = start.Timer()
    changed: list[str] = []
    t = time.monotonic()
    packages = system.APT_BASE + (system.APT_LIBVIRT if libvirt else ())
    missing = [p for p in packages if not system.dpkg_installed(p)]
    system.apt_install(packages, say, output)
    if missing:
        changed.append('apt: ' + ' '.join(missing))
    timer.phase('apt', t)
    t = time.monotonic()
    wanted = [os.path.join(services.FILES, 'requirements.txt')]
    if libvirt:
        wanted.append(os.path.join(services.FILES,
                                   'requirements-libvirt.txt'))
    if all(system.venv_satisfied(lay, r) for r in wanted):
        say('venv: %s has the pinned services' % lay.venv)
    else:
        # uv when there is one (one wheel cache for every venv, so
        # libvirt-python is built once per machine), else venv and pip
        if not os.path.exists(lay.python):
            venvs.create(lay.venv, output=output, say=say)
        args = ['-c', os.path.join(services.FILES, 'constraints.txt')]
        for r in wanted:
            args += ['-r', r]
        say('venv: %s install into %s' % (venvs.installer(), lay.venv))
        venvs.install(lay.venv, args, output=output, say=say)
        changed.append('venv ' + lay.venv)
    timer.phase('venv', t)
    if services.install_driver(lay):
        changed.append('driver')
        say('driver: %s installed' % services.driver_target(lay))
    else:
        say('driver: %s up to date' % services.driver_target(lay))
    if libvirt:
        system.qemu_conf(say)
        system.libvirt_accounts()
    return {'seconds': timer.total(), 'phases': timer.phases,
            'changed': changed}


def up(compute: str = 'fake', network: str | None = None,
       facts: str | None = None, virt_type: str | None = None,
       layout: config.Layout | None = None, say: procs.Say = _quiet,
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
    shipped in files/hosts/ (novacompute.EXTRA_SHAPES: compute 2 a
    2-socket Intel with 1 GiB pages, compute 3 a 4-node AMD EPYC with
    2 MiB pages, compute 4 a real 2-socket Intel capture). Its [compute]
    cpu_shared_set is the first online CPU of a NUMA node and its thread
    siblings (VCPU), cpu_dedicated_set every other online CPU in a node
    (PCPU): novacompute.extra_cpu_sets.

    :param compute: 'fake' (Nova's fake driver reporting a real NUMA
        topology) or 'libvirt' (real QEMU guests)
    :param network: 'neutron' or 'stub'; default neutron with libvirt,
        stub with fake
    :param facts: a kvmtune facts JSON file: the fake compute's host shape
    :param virt_type: libvirt's 'kvm' or 'qemu'; default: detected
    :param computes: how many nova-compute services (1 to
        novacompute.MAX_COMPUTES)
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
    if network not in config.NETWORKS:
        raise InputError('unknown network %r' % network, key='network',
                         fix='one of: %s' % ', '.join(config.NETWORKS))
    if virt_type not in (None,) + VIRT_TYPES:
        raise InputError('unknown virt type %r' % virt_type,
                         key='virt_type',
                         fix='one of: %s' % ', '.join(VIRT_TYPES))
    extras = novacompute.extra_facts(computes, compute_facts)
    novacompute.check_host_name(socket.gethostname(),
                                [i for i, _, _ in extras])
    if start.running_services(lay):
        raise CloudError('a cloud is already up', source=lay.root,
                         fix='run: %s' % stop.STOP_HINT)
    stop.clean_after_crash(lay, say)
    if facts and not os.path.isfile(facts):
        raise InputError('no such facts file', source=facts,
                         fix='give a file from kvmtune host inspect '
                             '--format json')
    start.check_ports_free(lay)
    return start.start(lay, compute, network, facts, virt_type, extras,
                       rotate_credentials, say)


def down(layout: config.Layout | None = None, say: procs.Say = _quiet
         ) -> list[str]:
    """Stop exactly what up() started (its ledger and marked processes),
    and MariaDB, RabbitMQ, Open vSwitch only when up() started them.

    Every service gets SIGTERM and stop.STOP_GRACE s (nova-compute
    stop.STOP_TIMEOUT's) to end; one still running then is SIGKILLed, with a
    line naming it.

    :returns: the names of what was stopped (empty when nothing ran)
    """
    return stop.stop_all(_resolve(layout), say)


def restart_compute(layout: config.Layout | None = None,
                    say: procs.Say = _quiet, host: str | None = None
                    ) -> dict[str, Any]:
    """Restart a nova-compute (it reads its files again) and wait until
    it has reported its inventory to Placement.

    :param host: the compute's host name (``kvmtune cloud status`` lists
        them); default: the first compute, whose file is
        env()['KVMTUNE_NOVA_CONF']
    :returns: {'seconds': float, 'host': name,
               'inventory': {class: total}}
    """
    return novacompute.restart(_as_started(_resolve(layout)), say, host)


def _as_started(lay: config.Layout) -> config.Layout:
    """``lay`` with the ports its running cloud was started with (its
    state's): a command on a running cloud needs only its state
    directory (a fleet host's session gets KVMTUNE_CLOUD_DIR alone), and
    a port option changed since takes effect at the next up."""
    ports = procs.load_state(lay).get('ports')
    if not isinstance(ports, dict) or ports == lay.ports:
        return lay
    return config.Layout(lay.root, lay.venv, {
        service: int(port) for service, port in ports.items()
        if service in config.DEFAULT_PORTS})


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
    computes = novacompute.statuses(lay, state)
    return {'root': lay.root, 'mode': state.get('mode'),
            'network': state.get('network', 'stub'),
            'virt_type': state.get('virt_type'),
            'up_seconds': state.get('up_seconds'),
            'processes': processes,
            'rss_kb': sum(p['rss_kb'] for p in processes),
            'pss_kb': sum(p['pss_kb'] for p in processes),
            'ports': {service: (port, system.port_open(port))
                      for service, port in sorted(ports.items())},
            'not_running': sorted(n for n, p in pids.items()
                                  if not procs.alive(p)),
            'computes': computes,
            'clouds_yaml': lay.clouds_yaml, 'stop': stop.STOP_HINT}


def env(layout: config.Layout | None = None) -> dict[str, str]:
    """What tests and tools need to use the cloud, as {name: value}
    (never a password): KVMTUNE_CLOUD_DIR, OS_CLIENT_CONFIG_FILE,
    OS_CLOUD, KVMTUNE_NOVA_CONF (the compute's own nova.conf),
    KVMTUNE_CLOUD_MODE, KVMTUNE_CLOUD_NETWORK, KVMTUNE_CLOUD_VENV,
    KVMTUNE_CLOUD_LOCK (the file to flock while using this cloud,
    doc/design.md 9.7).
    """
    lay = _resolve(layout)
    state = procs.load_state(lay)
    return {'KVMTUNE_CLOUD_DIR': lay.root,
            'OS_CLIENT_CONFIG_FILE': lay.clouds_yaml,
            'OS_CLOUD': config.ADMIN_CLOUD,
            'KVMTUNE_NOVA_CONF': lay.compute_conf,
            'KVMTUNE_CLOUD_MODE': state.get('mode', ''),
            'KVMTUNE_CLOUD_NETWORK': state.get('network', ''),
            'KVMTUNE_CLOUD_VENV': lay.venv,
            'KVMTUNE_CLOUD_LOCK': lay.lock}


def python(layout: config.Layout | None = None) -> str:
    """The services' Python (it imports nova): Nova's own checks of
    nova.conf values run under it."""
    return _resolve(layout).python
