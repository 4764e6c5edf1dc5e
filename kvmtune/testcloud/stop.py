"""Stopping the test cloud: ``down()`` stops exactly what up() started,
each service within its grace (SIGKILL after it, with a line naming it),
and ``clean_after_crash()`` cleans up after a cloud whose services died
without ``down``."""

from collections.abc import Mapping
import os
import subprocess

from kvmtune.errors import CloudError
from kvmtune.testcloud import config
from kvmtune.testcloud import neutron
from kvmtune.testcloud import procs
from kvmtune.testcloud import system

STOP_HINT = 'kvmtune cloud down'
# the services every cloud on the machine shares (its state's started_*)
SHARED = ('rabbitmq', 'mariadb')
MARIADB_PID = '/run/mysqld/mysqld.pid'
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
# the services `down` stops first, in this order; the switch comes last
STOP_ORDER = ('nova-compute', 'nova-api', 'nova-conductor',
              'nova-scheduler', 'glance', 'placement', 'keystone',
              'network') + neutron.STOP_ORDER


def _libvirt_domains_of_cloud(lay: config.Layout) -> list[str]:
    """UUIDs of libvirt domains that are instances of this cloud (in its
    own Nova database)."""
    try:
        ours = set(system.mysql('SELECT uuid FROM `%s`.instances'
                                % lay.databases['nova']).split())
    except CloudError:
        return []
    listed = system.virsh('list', '--all', '--uuid')
    return [u for u in listed.stdout.split() if u in ours]


def _is_compute(service: str) -> bool:
    """'nova-compute' and the extra computes' 'nova-compute-<i>'."""
    return service == 'nova-compute' or service.startswith('nova-compute-')


def _stop(say: procs.Say, named: Mapping[str, int], timeout: float
          ) -> list[str]:
    """SIGTERM the {name: pid} processes, SIGKILL those still running
    ``timeout`` s later, one line each; returns the names killed."""
    killed = procs.terminate(list(named.values()), timeout)
    names = [n for n, p in named.items() if p in killed]
    for name in names:
        say('%s (pid %d) still running %d s after SIGTERM: SIGKILL%s'
            % (name, named[name], timeout, ' (%s)' % STOP_NOTE[name]
               if name in STOP_NOTE else ''))
    return names


def clean_after_crash(lay: config.Layout, say: procs.Say) -> None:
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
            system.virsh('version').returncode != 0:
        # QEMU guests outlive libvirtd; only it can destroy them.
        system.ensure_libvirtd(lay, say)
    stopped = stop_all(lay, say)
    say('cleaned up: %s' % (', '.join(stopped) or 'stale state only'))


def stop_all(lay: config.Layout, say: procs.Say) -> list[str]:
    """Stop what up() started in ``lay``: api.down()."""
    state = procs.load_state(lay)
    pids = state.get('services', {})
    if state.get('mode') == 'libvirt' and \
            system.virsh('version').returncode == 0:
        for domain in _libvirt_domains_of_cloud(lay):
            system.virsh('destroy', domain)
            system.virsh('undefine', domain, '--nvram')
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
                name, STOP_GRACE))
            stopped.append(name + (' (SIGKILL)' if killed else ''))
    if state.get('network') == 'neutron':
        names = {p: n for n, p in pids.items()}
        stopped += neutron.stop_ovs(state, lambda p: _stop(
            say, {names.get(x, 'pid %d' % x): x for x in p},
            STOP_GRACE))
    # What is left with our marker: gunicorn workers, privsep daemons,
    # virtlogd/libvirtd when this cloud started them.
    leftovers = procs.owned_pids(lay)
    if leftovers:
        _stop(say, {'helper %s' % (procs.cmdline(p)[:40] or '?'): p
                    for p in leftovers}, STOP_GRACE)
        stopped.append('%d helper processes' % len(leftovers))
    stopped += _stop_shared(lay, state, say)
    if os.path.exists(lay.ledger):
        os.remove(lay.ledger)
    if state:
        state['services'] = {}
        state['started_mariadb'] = state['started_rabbitmq'] = False
        state['started_ovs'] = False
        procs.save_state(lay, state)
    procs.unregister(lay)
    return stopped


def _stop_shared(lay: config.Layout, state: Mapping[str, object],
                 say: procs.Say) -> list[str]:
    """MariaDB and RabbitMQ, when this cloud's `up` (or an earlier
    cloud's, which left them to the others) started them, unless another
    cloud uses them: then they are left to the last cloud's `down`."""
    mine = [s for s in SHARED if state.get('started_' + s)]
    others = procs.other_clouds(lay)
    if others:
        if mine:
            procs.shared_left(mine)
            say('%s left running: the cloud in %s uses it'
                % (', '.join(mine), ', '.join(others)))
        return []
    stopping = set(procs.shared_left()) | set(mine)
    procs.clear_shared_left()
    stopped: list[str] = []
    if 'rabbitmq' in stopping:
        subprocess.call(['rabbitmqctl', '-q', 'stop'])
        subprocess.call(['epmd', '-kill'], stderr=subprocess.DEVNULL)
        stopped.append('rabbitmq')
    if 'mariadb' in stopping:
        try:
            with open(MARIADB_PID) as f:
                pid = int(f.read())
        except (OSError, ValueError):
            pid = None      # it died with the cloud: nothing to stop
        if pid and procs.alive(pid):
            _stop(say, {'mariadb': pid}, 60)
            stopped.append('mariadb')
    return stopped
