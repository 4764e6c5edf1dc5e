"""Starting the test cloud (api.up() once its arguments are checked): a
fresh cloud from empty databases, RabbitMQ vhost and state directory,
every service started, returning once every nova-compute is registered
and mapped; and the phases' timer, which install() uses too."""

from collections.abc import Callable
from collections.abc import Iterable
import concurrent.futures
import json
import os
import shutil
import sys
import time
from typing import Any
from typing import TYPE_CHECKING

from kvmtune.errors import CloudError
from kvmtune.testcloud import config
from kvmtune.testcloud import neutron
from kvmtune.testcloud import novacompute
from kvmtune.testcloud import procs
from kvmtune.testcloud import rest
from kvmtune.testcloud import services
from kvmtune.testcloud import stop
from kvmtune.testcloud import system

if TYPE_CHECKING:
    from kvmtune.facts.types import Facts


def running_services(lay: config.Layout) -> dict[str, int]:
    state = procs.load_state(lay)
    return {n: p for n, p in state.get('services', {}).items()
            if procs.alive(p)}


def check_ports_free(lay: config.Layout) -> None:
    taken = ['%s %d' % (service, port)
             for service, port in sorted(lay.ports.items())
             if system.port_open(port)]
    if taken:
        raise CloudError('port in use on %s: %s'
                         % (config.HOST, ', '.join(taken)),
                         source='kvmtune.conf', key='[testcloud] *_port',
                         fix='stop what listens there, or choose other '
                             'ports')


class Timer:
    """Named phase durations, for the summary and timings.json."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.phases: dict[str, float] = {}

    def phase(self, name: str, since: float) -> None:
        self.phases[name] = round(time.monotonic() - since, 1)

    def total(self) -> float:
        return round(time.monotonic() - self.start, 1)


def start(lay: config.Layout, compute: str, network: str,
          facts: str | None, virt_type: str | None,
          extras: Iterable[tuple[int, str, 'Facts']],
          rotate_credentials: bool, say: procs.Say) -> dict[str, Any]:
    """Start a fresh cloud in ``lay``: what api.up() does once it has
    checked its arguments (its docstring says what is returned)."""
    timer = Timer()
    virt_type = virt_type or system.detect_virt_type()
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
    # before MariaDB and RabbitMQ: another cloud's `down` leaves them
    procs.register(lay)

    t = time.monotonic()
    state['started_mariadb'] = system.ensure_mariadb()
    procs.save_state(lay, state)
    state['started_rabbitmq'] = system.ensure_rabbitmq()
    procs.save_state(lay, state)
    services.install_driver(lay)
    services.write_configs(lay, secrets, compute, virt_type, network)
    state['computes'] = novacompute.prepare_extra_computes(lay, extras)
    procs.save_state(lay, state)
    timer.phase('prepare', t)

    t = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        vhost = pool.submit(system.reset_rabbit_vhost, lay)
        ovs = (pool.submit(neutron.start_ovs, lay, pids)
               if network == 'neutron' else None)
        try:
            system.reset_databases(lay, secrets)
            if compute == 'libvirt':
                state['started_daemons'] = system.ensure_libvirtd(lay, say)
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
                         % stop.STOP_HINT)
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
        listed.append(dict(entry, inventory=novacompute.totals(
            lay, token, entry['provider']), rss_kb=procs.tree_rss_kb(
            pids[entry['service']]) if entry['index'] > 1 else None))
    return {'mode': compute, 'network': network,
            'virt_type': state['virt_type'], 'credentials': credentials,
            'seconds': state['up_seconds'], 'phases': timer.phases,
            'compute_host': provider['name'], 'provider': provider['uuid'],
            'inventory': listed[0]['inventory'],
            'clouds_yaml': lay.clouds_yaml,
            'compute_conf': lay.compute_conf, 'computes': listed}
