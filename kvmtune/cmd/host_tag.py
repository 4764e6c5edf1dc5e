"""Set kvmtune's traits on the compute node's resource provider.

    kvmtune host tag --os-cloud kvmtune-admin [--hypervisor NAME] \\
        [--facts FILE | --root DIR] [--dry-run]

Placement knows nothing of EPT/NPT, nested guests, 1G pages or vhost-net,
so kvmtune reports them as CUSTOM_KVMTUNE_* traits computed from the host
facts (this host, a captured tree or a facts JSON). A flavor can then ask
for them (trait:CUSTOM_KVMTUNE_EPT=required) and the scheduler places it
only where they hold.

The compute node is the one named --hypervisor, else the one named like
this host (or the host in --facts), else the only compute node there is.
Missing traits are created; the provider keeps every trait that is not
kvmtune's; a capability the host lost takes only its own trait away. A
second run finds nothing to change and sends no write request.
"""

import argparse
import socket

from kvmtune import cmd


def add_arguments(parser: argparse.ArgumentParser) -> None:
    cmd.add_os_cloud(parser)
    parser.add_argument('--hypervisor', metavar='NAME',
                        help='Hypervisor hostname of the compute node '
                             '(default: this host\'s name).')
    cmd.add_facts_source(parser, verb='tag from')
    cmd.add_dry_run(parser)


def run(args: argparse.Namespace) -> int | None:
    from kvmtune import facts as host_facts
    from kvmtune.openstack.connection import Cloud
    from kvmtune.openstack import placement
    from kvmtune.tuning import traits

    facts = host_facts.resolve(root=args.root, facts_file=args.facts)
    wanted = traits.from_facts(facts)
    name = args.hypervisor or facts.get('hostname') or socket.gethostname()

    cloud = Cloud.connect(args.os_cloud)
    api = placement.Placement(cloud)
    (hostname, uuid), note = placement.pick_compute_node(
        api.compute_nodes(), name, explicit=bool(args.hypervisor))
    if note:
        print(f'host tag: {note}')
    print(f'compute node {hostname} (resource provider {uuid}): '
          f'kvmtune traits from {facts.get("source")}: '
          f'{", ".join(sorted(wanted)) or "none"}')
    change = api.set_traits(uuid, wanted, traits.KVMTUNE_TRAITS,
                            dry_run=args.dry_run)
    for line in change.lines():
        print(f'  {line}')
    if change.empty:
        print(f'compute node {hostname}: traits already match, '
              'nothing to change')
    elif args.dry_run:
        print('dry run: nothing written')
    else:
        print(f'compute node {hostname}: traits updated')
    print(f'cloud {cloud.name}: {cloud.requests.summary()}')
    return 0
