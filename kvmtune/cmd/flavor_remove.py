"""Remove a profile's extra specs from a flavor, or delete its tuned flavor.

    kvmtune flavor remove --os-cloud kvmtune-admin \\
        --profile pinned-hugepages-ept \\
        --name m1.small.pinned-hugepages-ept [--delete] [--dry-run]

Without --delete, removes the extra-spec keys the profile's tuners own
(whatever their value) and leaves every other key; while more than one key
goes, the flavor carries kvmtune's INCOMPLETE marker (no guest is placed on
a half-stripped flavor, doc/design.md 9.8), which is deleted last, also
when an earlier run stopped and left it. With --delete, deletes
the flavor, but only one kvmtune created for this profile (its description
says so); any other flavor is refused. A second run changes nothing and
sends no write request.
"""

import argparse
from typing import TYPE_CHECKING

from kvmtune import cmd
from kvmtune.cmd.flavor_output import print_diff
from kvmtune.errors import InputError

if TYPE_CHECKING:
    from kvmtune.openstack.flavors import Flavors


def add_arguments(parser: argparse.ArgumentParser) -> None:
    cmd.add_os_cloud(parser)
    cmd.add_profile(parser)
    parser.add_argument('--name', required=True, help='The tuned flavor.')
    parser.add_argument('--delete', action='store_true',
                        help='Delete the flavor (only one kvmtune made).')
    cmd.add_facts_source(parser)
    cmd.add_dry_run(parser)


def run(args: argparse.Namespace) -> int | None:
    from kvmtune.openstack.connection import Cloud
    from kvmtune.openstack import flavors as tuned
    from kvmtune.openstack import planning

    # the plan first: one that withheld values is refused before any
    # request leaves
    plan = None if args.delete else planning.plan_for(
        args.profile, args.root, args.facts, args.config_file)
    cloud = Cloud.connect(args.os_cloud)
    flavors = tuned.Flavors(cloud)
    if plan is None:
        _delete(flavors, args)
    else:
        flavor = flavors.get(args.name)
        diff = tuned.owned_present(flavor.get('extra_specs'),
                                   plan.owned_extra_specs)
        marked = tuned.is_incomplete(flavor.get('extra_specs'))
        print_diff(diff)
        if marked:
            print(f'  - {tuned.INCOMPLETE} (a kvmtune run stopped; '
                  'deleted last)')
        if diff.empty and not marked:
            print(f'flavor {args.name}: has no key of profile '
                  f'{plan.profile}, nothing to change')
        elif not args.dry_run:
            flavors.change(flavor['id'], diff, marked=marked)
            print(f'flavor {args.name}: removed {len(diff.removed)} keys')
    if args.dry_run:
        print('dry run: nothing written')
    print(f'cloud {cloud.name}: {cloud.requests.summary()}')
    return 0


def _delete(flavors: 'Flavors', args: argparse.Namespace) -> None:
    from kvmtune.openstack import flavors as tuned

    flavor = flavors.find(args.name)
    if flavor is None:
        print(f'flavor {args.name}: does not exist, nothing to delete')
        return
    made = tuned.made_by_kvmtune(flavor)
    if made is None or made[0] != args.profile:
        raise InputError(
            f'flavor {args.name} was not created by kvmtune for profile '
            f'{args.profile}; refusing to delete it',
            source=f'cloud {flavors.cloud.name}', key='--delete',
            fix='remove only the profile\'s keys (drop --delete)')
    if args.dry_run:
        print(f'flavor {args.name}: would be deleted')
        return
    flavors.delete(flavor['id'])
    print(f'flavor {args.name}: deleted')
