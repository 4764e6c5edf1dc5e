"""Check that what a plan asked for is what runs: host, service, cloud, guests.

Run on a compute host after plan, nova-conf apply or export, a reboot and a
deploy. Each layer compares the plan with what is live:

  host         the booted kernel command line, huge page pools per node
               and size, kvm module parameters, vhost-net, tuned
  novacompute  the running nova-compute's effective options (the files its
               command line makes oslo.config read, in its order), and
               whether it started before the last change to them
  cloud        this host's resource provider (PCPU/VCPU totals, traits)
               and the profiles' flavors (--os-cloud; read-only calls)
  guests       the libvirt domain XML Nova wrote for this host's instances
               (pins, emulator threads, huge pages, NUMA, disks, vhost)

  kvmtune verify --profile pinned-hugepages
  kvmtune verify --profile pinned-hugepages --profile nested-host \\
      --os-cloud admin -f json
  kvmtune verify --plan plan.json --layer host --root captured/compute-1
  kvmtune plan --profile cpu-pinning -f json | kvmtune verify --plan -
  kvmtune verify --profile cpu-pinning \\
      --nova-config-file /etc/kolla/nova-compute/nova.conf   # containers
  kvmtune verify --profile cpu-pinning --prometheus \\
      /var/lib/node_exporter/textfile_collector/kvmtune_verify.prom

Every check is PASS, DRIFT (with the fix) or UNKNOWN (with the reason it
could not be made: no nova-compute process, no libvirt, no credentials, a
cloud answering 5xx); UNKNOWN never counts as a pass.

Another host (--root TREE, --facts FILE) is judged from what is given
alone: this machine's processes, files and libvirt are never read for
it. What the given files cannot tell is UNKNOWN naming the flag that
gives it (--nova-config-file, --domain-xml-dir or --libvirt-uri, --root).

Exit status:
  0  in sync: nothing drifted and at least one check passed (UNKNOWN
     rows beside PASS ones are shown and counted, not a failure)
  1  something drifted
  2  verify could not run (bad input, an internal error)
  3  nothing could be checked: no check is PASS or DRIFT (every one
     UNKNOWN, or none, as --all-hosts on a cloud with no compute node);
     --prometheus then keeps kvmtune_last_success_timestamp_seconds
"""

import argparse
from collections.abc import Sequence
import importlib.util
import sys
from typing import Any
from typing import TYPE_CHECKING

from kvmtune import cmd
from kvmtune.cmd import output
from kvmtune import verify

if TYPE_CHECKING:
    from kvmtune.verify import Check

COLUMNS = ['layer', 'check', 'expected', 'live', 'status', 'fix']


def add_arguments(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument('--profile', action='append', metavar='NAME|FILE',
                       help='a profile that was applied (repeatable, as '
                            'DevStack\'s KVMTUNE_PROFILES)')
    which.add_argument('--plan', metavar='FILE',
                       help='a plan written by "kvmtune plan -f json" '
                            '(-: read it from standard input)')
    cmd.add_facts_source(parser, verb='verify')
    parser.add_argument('--layer', action='append', choices=verify.LAYERS,
                        help='check only this layer (repeatable; default: '
                             'every layer this host can be asked for, the '
                             'cloud only with --os-cloud)')
    parser.add_argument('--nova-config-file', action='append',
                        metavar='PATH', dest='nova_config_files',
                        help='a file nova-compute reads, given instead of '
                             'reading its command line (repeatable, in its '
                             'order; containers: kolla\'s '
                             '/etc/kolla/nova-compute/nova.conf)')
    parser.add_argument('--nova-config-dir', action='append',
                        metavar='DIR', dest='nova_config_dirs',
                        help='a --config-dir nova-compute reads (likewise)')
    parser.add_argument('--service', choices=('compute', 'scheduler'),
                        default='compute',
                        help='whose options to check (default: compute; '
                             'scheduler on a controller)')
    cmd.add_os_cloud(parser, required=False,
                     help='check this host in that cloud too (clouds.yaml; '
                          'read-only API calls)')
    parser.add_argument('--all-hosts', action='store_true',
                        help='the fleet view: the cloud layer for every '
                             'compute node (needs --os-cloud), each planned '
                             'from its facts file in --facts-dir')
    parser.add_argument('--facts-dir', metavar='DIR',
                        help='with --all-hosts: HOST.json per compute node, '
                             'named as Nova names it ("kvmtune host inspect '
                             '--format json" on each host)')
    parser.add_argument('--host', metavar='NAME',
                        help='this compute\'s name in Nova (default: its '
                             'host name)')
    parser.add_argument('--libvirt-uri', metavar='URI',
                        help='libvirt to read the guests from, read-only '
                             '(default: qemu:///system; for another host, '
                             '--root or --facts, only when given: '
                             'qemu+ssh://HOST/system)')
    parser.add_argument('--domain-xml-dir', metavar='DIR',
                        help='read the guests\' domain XML from the *.xml '
                             'files in DIR ("virsh dumpxml" of each) '
                             'instead of from libvirt')
    output.add_format(parser)
    parser.add_argument('--prometheus', metavar='FILE',
                        help='also write the checks for node_exporter\'s '
                             'textfile collector (a .prom file, written '
                             'atomically)')


def available_layers() -> list[str]:
    """The layers this kvmtune has (a layer module that is not there is
    not offered, never faked)."""
    return [layer for layer in verify.LAYERS
            if importlib.util.find_spec(f'kvmtune.verify.{layer}')]


def _layers(args: argparse.Namespace) -> list[str]:
    have = available_layers()
    if args.layer:
        from kvmtune.errors import InputError
        if 'cloud' in args.layer and not args.os_cloud:
            raise InputError('the cloud layer needs a cloud',
                             key='--layer cloud',
                             fix='add --os-cloud CLOUD (clouds.yaml)')
        missing = [layer for layer in args.layer if layer not in have]
        if missing:
            raise InputError(f'this kvmtune has no {missing[0]} layer',
                             key='--layer', fix='choose from: ' +
                             ', '.join(have))
        return list(args.layer)
    return [layer for layer in have
            if layer != 'cloud' or args.os_cloud]


def run(args: argparse.Namespace) -> int | None:
    from kvmtune.tuning import plan as plans
    from kvmtune import verify

    if args.all_hosts or args.facts_dir:
        return run_fleet(args)
    layers = _layers(args)
    from kvmtune import facts as host_facts
    # The host the checks look at (the guests layer maps pinned CPUs to
    # NUMA nodes with it), also when the plan comes from a file.
    facts = host_facts.resolve(root=args.root, facts_file=args.facts)
    if args.plan:
        built = [plans.load(args.plan)]
    else:
        built = plans.for_host(args.profile, facts=facts,
                               config_files=args.config_file)
    domains = None
    if args.domain_xml_dir is not None:
        from kvmtune.verify import domain
        domains = domain.read_files(args.domain_xml_dir)
    cloud = None
    if args.os_cloud and 'cloud' in layers:
        from kvmtune.openstack.connection import Cloud
        cloud = Cloud.connect(args.os_cloud)
    ctx = verify.Context(root=args.root or '/',
                         config_files=args.nova_config_files,
                         config_dirs=args.nova_config_dirs,
                         service=args.service, cloud=cloud,
                         libvirt_uri=args.libvirt_uri, host=args.host,
                         facts=facts, domains=domains,
                         origin=verify.origin_of(args.root, args.facts))
    checks = verify.run(built, ctx, layers)
    # the textfile's hostname: Nova's service host, which is the host name
    # unless nova.conf sets [DEFAULT] host (then --host says it); its
    # pending reboot is the tree's (none known from a facts file)
    return _show(args, checks, COLUMNS, [plan.profile for plan in built],
                 layers, host=ctx.host or facts.get('hostname'),
                 root=ctx.root if ctx.has_tree else None)


def run_fleet(args: argparse.Namespace) -> int:
    """--all-hosts: the cloud layer for every compute node."""
    from kvmtune.errors import InputError
    from kvmtune.tuning import plan as plans
    from kvmtune.verify import cloud as cloud_layer

    if not args.all_hosts:
        raise InputError('--facts-dir is for the fleet view',
                         key='--facts-dir', fix='add --all-hosts')
    if args.plan == '-':
        # first: with or without a cloud, standard input is not read
        raise InputError('the fleet view reads its plan from a file',
                         key='--plan -', fix='give the plan\'s file '
                         '(--plan FILE), or verify one host with --plan -')
    if not args.os_cloud:
        raise InputError('the fleet view reads the cloud', key='--all-hosts',
                         fix='add --os-cloud CLOUD (clouds.yaml)')
    if args.layer and args.layer != ['cloud']:
        raise InputError('the fleet view has the cloud layer only',
                         key='--layer', fix='run the other layers on each '
                         'host, or drop --layer')
    if args.profile and not args.facts_dir:
        raise InputError('each host is planned from its own facts',
                         key='--all-hosts', fix='add --facts-dir DIR '
                         '(HOST.json per compute node), or give --plan')
    checks = cloud_layer.for_fleet(
        args.os_cloud, plan_file=args.plan,
        profiles=args.profile, facts_dir=args.facts_dir,
        config_files=args.config_file or ())
    # --profile and --plan: one of them, required (add_arguments)
    return _show(args, checks, ['host'] + COLUMNS,
                 args.profile or [plans.load(args.plan).profile],
                 ['cloud'])


def _show(args: argparse.Namespace, checks: Sequence['Check'],
          columns: list[str], profiles: Any, layers: Sequence[str],
          host: str | None = None, root: str | None = None) -> int:
    """Print the checks (table or the JSON/YAML document), write the
    Prometheus file when asked; the exit status."""
    from kvmtune import verify
    from kvmtune.verify import prometheus

    rows = [[c.host or '', c.layer, c.name, c.expected,
             c.live if c.status != verify.UNKNOWN else f'? {c.reason}',
             c.status, c.fix or ''] for c in checks]
    if columns[0] != 'host':
        rows = [row[1:] for row in rows]
    output.emit(args, columns, rows,
                document={'profiles': profiles, 'layers': layers,
                          'checks': [c.to_dict() for c in checks],
                          'summary': summary(checks)})
    if args.prometheus:
        # a pending reboot is this host's (its root's), not the fleet's
        prometheus.write(args.prometheus, checks, host=host, root=root)
        output.wrote(args.prometheus, stream=sys.stderr)
    if args.format == 'table':
        counts = summary(checks)
        print(f'{counts["PASS"]} pass, {counts["DRIFT"]} drift, '
              f'{counts["UNKNOWN"]} unknown', file=sys.stderr)
    return verify.exit_code(checks)


def summary(checks: Sequence['Check']) -> dict[str, int]:
    from kvmtune import verify
    return {status: sum(1 for c in checks if c.status == status)
            for status in verify.STATUSES}
