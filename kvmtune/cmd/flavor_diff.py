"""Show how a flavor differs from what a profile wants (read-only).

    kvmtune flavor diff --os-cloud kvmtune-admin \\
        --profile pinned-hugepages-ept \\
        --name m1.small.pinned-hugepages-ept [--root DIR | --facts FILE]

Prints the extra specs `kvmtune flavor apply` would add (+), change (~) or
remove (-), and exits 0 when the flavor already matches, 1 when it does
not (handy in scripts; 3 before this release). A flavor a kvmtune run
left unfinished (it carries the INCOMPLETE marker, or kvmtune made it and
it has none of its profile's specs; doc/design.md 9.8) is named
incomplete and differs. Only GET
requests are sent.
"""

import argparse

from kvmtune import cmd
from kvmtune.cmd.flavor_output import print_diff
from kvmtune.cmd import output
from kvmtune.errors import EXIT_DIFFERS
from kvmtune.errors import EXIT_OK


def add_arguments(parser: argparse.ArgumentParser) -> None:
    cmd.add_os_cloud(parser)
    cmd.add_profile(parser)
    parser.add_argument('--name', required=True,
                        help='Flavor to compare.')
    cmd.add_facts_source(parser)
    output.add_format(parser, columns=False, formats=('table', 'json', 'yaml'))


def run(args: argparse.Namespace) -> int | None:
    from kvmtune.openstack.connection import Cloud
    from kvmtune.openstack import flavors as tuned
    from kvmtune.openstack import planning

    plan = planning.plan_for(
        args.profile, args.root, args.facts, args.config_file)
    cloud = Cloud.connect(args.os_cloud)
    flavor = tuned.Flavors(cloud).get(args.name)
    diff = tuned.diff_extra_specs(flavor.get('extra_specs'),
                                  plan.extra_specs, plan.owned_extra_specs)
    incomplete = tuned.incomplete_lines(flavor, plan.extra_specs)
    same = diff.empty and not incomplete
    if output.format_of(args) != 'table':
        output.emit(args, [], [], document={
            'flavor': args.name, 'profile': plan.profile,
            'status': 'matches' if same else 'differs',
            'incomplete': incomplete, 'diff': diff.to_dict()})
        return EXIT_OK if same else EXIT_DIFFERS
    if same:
        print(f'flavor {args.name}: matches profile {plan.profile}')
        return EXIT_OK
    print(f'flavor {args.name}: differs from profile {plan.profile}')
    for line in incomplete:
        print(line)
    print_diff(diff)
    return EXIT_DIFFERS
