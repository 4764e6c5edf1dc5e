"""The single-host test cloud: a real OpenStack on 127.0.0.1.

Keystone, Placement, Glance, Nova and Neutron (ML2/OVS, userspace datapath)
from PyPI in their own virtualenv, MariaDB, RabbitMQ and Open vSwitch from
Debian; root, Debian 12. Where it lives and its ports: [testcloud] in
kvmtune.conf ($KVMTUNE_CLOUD_DIR and $KVMTUNE_CLOUD_VENV take precedence).

  kvmtune cloud install [--no-libvirt]      what is missing; idempotent
  kvmtune cloud up [--compute fake|libvirt] [--network neutron|stub]
                   [--facts FILE] [--virt-type kvm|qemu]
                   [--computes N [--compute-facts FILE ...]]
                   [--rotate-credentials]   new passwords (default: the
                                            last up's, kept)
  eval "$(kvmtune cloud env)"               OS_CLOUD, KVMTUNE_NOVA_CONF, ...
  kvmtune cloud restart-compute [--host H]  after editing KVMTUNE_NOVA_CONF
  kvmtune cloud status                      what runs, ports, memory,
                                            every compute
  kvmtune cloud down                        stop exactly what up started

`status` exits 0 when the cloud is up, 1 when none is or one of its
services stopped (2 before this release: 2 is for errors), 2 when it
cannot tell; `status -f json|yaml` prints the same as data.
doc/testcloud.md describes what runs and why.
"""

import argparse
from collections.abc import Mapping
import shlex
import subprocess
import types
from typing import Any
from typing import TYPE_CHECKING

from kvmtune.cmd import output
from kvmtune.errors import EXIT_DIFFERS
from kvmtune.errors import EXIT_OK

if TYPE_CHECKING:
    from kvmtune.testcloud.config import Layout


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest='cloud_command', metavar='SUBCOMMAND')
    sub.required = True
    p = sub.add_parser('install', help='install what is missing (apt, the '
                       'services\' venv, the fake driver); a second run '
                       'only checks')
    p.add_argument('--no-libvirt', action='store_true',
                   help='skip libvirt, QEMU and Open vSwitch (fake compute '
                        'and --network stub only)')
    p = sub.add_parser('up', help='start a fresh cloud')
    p.add_argument('--compute', choices=('fake', 'libvirt'), default='fake',
                   help='fake: Nova\'s fake driver reporting a real NUMA '
                        'topology, no guests; libvirt: real QEMU guests '
                        '(default: fake)')
    p.add_argument('--facts', metavar='FILE',
                   help='kvmtune facts JSON: host shape of the fake driver '
                        '(default: 2 nodes x 2 cores x 2 threads)')
    p.add_argument('--network', choices=('neutron', 'stub'),
                   help='network endpoint: real Neutron (ML2/OVS, '
                        'userspace datapath) or the read-only stub '
                        '(default: neutron with libvirt, stub with fake)')
    p.add_argument('--virt-type', choices=('kvm', 'qemu'),
                   help='libvirt virt_type (default: detected)')
    p.add_argument('--computes', type=_count, default=1, metavar='N',
                   help='nova-compute services: the --compute one plus N-1 '
                        'on the NUMA fake driver, host names '
                        'kvmtune-compute-2, -3, ... (default: 1)')
    p.add_argument('--compute-facts', action='append', metavar='FILE',
                   help='kvmtune facts JSON of the next extra compute '
                        '(repeatable: compute 2, 3, ...); default: the '
                        'shipped shapes (2-socket Intel with 1 GiB pages, '
                        '4-node AMD EPYC, ...)')
    p.add_argument('--rotate-credentials', action='store_true',
                   help='new passwords (admin, kvmtune-member, services, '
                        'database) instead of the last up\'s: copies of '
                        'clouds.yaml and Rally environments made before '
                        'stop working (default: kept across down and up)')
    sub.add_parser('down', help='stop exactly what up started')
    p = sub.add_parser('status', help='what runs, its ports and memory')
    output.add_format(p, columns=False, formats=('table', 'json', 'yaml'))
    sub.add_parser('env', help='shell exports for tests and tools (no '
                   'secrets)')
    p = sub.add_parser('restart-compute', help='restart nova-compute and '
                       'wait for its inventory (an extra compute reads '
                       'its --compute-facts file again)')
    p.add_argument('--host', metavar='NAME',
                   help='the compute to restart, by host name (kvmtune '
                        'cloud status lists them; default: the first)')


def _count(text: str) -> int:
    import argparse

    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError('not a number: %r' % text)


def run(args: argparse.Namespace) -> int | None:
    from kvmtune.errors import CloudError
    from kvmtune.testcloud import api
    from kvmtune.testcloud import rest

    layout = api.layout(args.config_file)
    try:
        return _RUN[args.cloud_command](args, api, layout)
    except (RuntimeError, TimeoutError, OSError, rest.HTTPError,
            subprocess.CalledProcessError) as exc:
        raise CloudError(f'cloud {args.cloud_command}: {exc}',
                         source=layout.root,
                         fix=f'read the logs in {layout.log}') from exc


def _install(args: argparse.Namespace, api: types.ModuleType,
             layout: 'Layout') -> int:
    done = api.install(libvirt=not args.no_libvirt, layout=layout,
                       say=print)
    print('install: %.1f s (%s)%s' % (done['seconds'], ', '.join(
        '%s %.1f s' % kv for kv in done['phases'].items()),
        '' if done['changed'] else '; nothing to do'))
    return 0


def _up(args: argparse.Namespace, api: types.ModuleType,
        layout: 'Layout') -> int:
    from kvmtune.testcloud import stop

    done = api.up(compute=args.compute, network=args.network,
                  facts=args.facts, virt_type=args.virt_type,
                  layout=layout, say=print, computes=args.computes,
                  compute_facts=args.compute_facts,
                  rotate_credentials=args.rotate_credentials)
    print('kvmtune test cloud up (%s compute%s, network %s%s) in %.1f s' % (
        done['mode'], ', virt_type=%s' % done['virt_type']
        if done['mode'] == 'libvirt' else '', done['network'],
        ', %d computes' % len(done['computes'])
        if len(done['computes']) > 1 else '', done['seconds']))
    for phase, seconds in done['phases'].items():
        print('  %-28s %6.1f s' % (phase, seconds))
    for entry in done['computes']:
        print('  compute host %s (%s), provider %s%s' % (
            entry['host'], entry['driver'], entry['provider'],
            ', nova-compute RSS %.0f MiB' % (entry['rss_kb'] / 1024)
            if entry['rss_kb'] is not None else ''))
        if entry['index'] > 1:
            print('    shape %s; shared %s, dedicated %s' % (
                _shape(entry), entry['cpu_shared_set'],
                entry['cpu_dedicated_set']))
        print('    inventory: %s' % _inventory(entry['inventory']))
    print('  clouds.yaml: %s (kvmtune-admin, kvmtune-member)'
          % done['clouds_yaml'])
    print('  credentials: %s' % _credentials(done['credentials']))
    print('  compute config: %s' % done['compute_conf'])
    print('  stop it: %s' % stop.STOP_HINT)
    return 0


def _credentials(how: str) -> str:
    """What `up` did with the passwords, and what that means."""
    from kvmtune.testcloud import services

    if how == 'rotated':
        return ('rotated: new passwords, which invalidates %s'
                % services.ROTATION_INVALIDATES)
    if how == 'kept':
        return ('kept from the last up (clouds.yaml copies and Rally '
                'environments keep working; new ones: kvmtune cloud up '
                '--rotate-credentials)')
    return 'new (no earlier ones here)'


def _shape(entry: Mapping[str, Any]) -> str:
    import os

    path: str = entry.get('facts_source') or entry['facts']
    return os.path.basename(path)


def _inventory(inventory: Mapping[str, int]) -> str:
    return ', '.join('%s=%d' % kv for kv in inventory.items())


def _down(args: argparse.Namespace, api: types.ModuleType,
          layout: 'Layout') -> int:
    stopped = api.down(layout=layout, say=print)
    print('stopped: %s' % (', '.join(stopped) or 'nothing was running'))
    return 0


def _status_code(found: Mapping[str, Any] | None) -> int:
    """0 up with every service running; 1 (differs) none up, or a
    service of it stopped."""
    if found is None or found['not_running']:
        return EXIT_DIFFERS
    return EXIT_OK


def _status(args: argparse.Namespace, api: types.ModuleType,
            layout: 'Layout') -> int:
    import json

    found = api.status(layout=layout)
    if output.format_of(args) != 'table':
        # the status as data: ports' (port, listening) pairs as lists
        document = json.loads(json.dumps(
            {'up': True, **found} if found is not None
            else {'up': False, 'root': layout.root}))
        output.emit(args, [], [], document=document)
        return _status_code(found)
    if found is None:
        print('no cloud up in %s (start one: kvmtune cloud up)'
              % layout.root)
        return _status_code(found)
    print('cloud in %s: %s compute%s, network %s%s' % (
        found['root'], found['mode'],
        ' (virt_type=%s)' % found['virt_type'] if found['virt_type']
        else '', found['network'],
        ', up in %.1f s' % found['up_seconds'] if found['up_seconds']
        else ''))
    print('  ports on 127.0.0.1: %s' % ', '.join(
        '%s %d%s' % (service, port, '' if listening else ' (not listening)')
        for service, (port, listening) in found['ports'].items()))
    for proc in found['processes']:
        print('  %7d %-25s rss %5.0f MiB pss %5.0f MiB  %s' % (
            proc['pid'], proc['name'], proc['rss_kb'] / 1024,
            proc['pss_kb'] / 1024, proc['cmdline'][:50]))
    for entry in found['computes']:
        print('  compute %s (%s%s): provider %s, %s, nova-compute RSS '
              '%.0f MiB' % (
                  entry['host'] or '(not registered yet)', entry['driver'],
                  ', ' + _shape(entry) if entry.get('facts') else '',
                  entry['provider'] or 'none yet',
                  'inventory ' + _inventory(entry['inventory'])
                  if entry['inventory'] is not None
                  else 'inventory unknown (Placement did not answer)',
                  entry['rss_kb'] / 1024))
    print('total: %d processes, rss %.0f MiB, pss %.0f MiB%s' % (
        len(found['processes']), found['rss_kb'] / 1024,
        found['pss_kb'] / 1024, '; NOT RUNNING: %s' % ', '.join(
            found['not_running']) if found['not_running'] else ''))
    print('clouds.yaml: %s; stop it: %s'
          % (found['clouds_yaml'], found['stop']))
    return _status_code(found)


def _env(args: argparse.Namespace, api: types.ModuleType,
         layout: 'Layout') -> int:
    for name, value in api.env(layout=layout).items():
        print('export %s=%s' % (name, shlex.quote(value)))
    return 0


def _restart_compute(args: argparse.Namespace, api: types.ModuleType,
                     layout: 'Layout') -> int:
    done = api.restart_compute(layout=layout, say=print, host=args.host)
    print('nova-compute of %s restarted in %.1f s; inventory: %s' % (
        done['host'], done['seconds'], _inventory(done['inventory'])))
    return 0


_RUN = {'install': _install, 'up': _up, 'down': _down, 'status': _status,
        'env': _env, 'restart-compute': _restart_compute}
