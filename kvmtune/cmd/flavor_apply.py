"""Create or update the tuned flavor for a profile.

    kvmtune flavor apply --os-cloud kvmtune-admin \\
        --profile pinned-hugepages-ept --from m1.small \\
        [--name NAME] [--root DIR | --facts FILE] [--dry-run]

The profile's plan for this host (or the host given with --root/--facts)
says which extra specs the flavor needs. They are checked locally first,
then set at compute API microversion 2.86 so that Nova checks them too.

A new flavor is named <base>.<profile> unless --name is given, copies the
base flavor's sizes (ram, vcpus, disk, ephemeral, swap, rxtx factor,
visibility) and says in its description that kvmtune made it. An existing
flavor keeps its sizes (Nova cannot change them; kvmtune says when they
differ from the base). Keys the profile's tuners own and no longer want are
removed; no other key is touched, and no other flavor.

The change is shown as + added, ~ changed, - removed. A second run finds
nothing to change and sends no write request. If Nova rejects a value, the
flavor this run created is deleted again and the error names the value.
"""

from kvmtune import cmd
from kvmtune.cmd.flavor_output import print_diff
from kvmtune.errors import InputError


def add_arguments(parser):
    cmd.add_os_cloud(parser)
    cmd.add_profile(parser)
    parser.add_argument('--from', dest='base', metavar='BASE',
                        help='Flavor to copy the sizes from (needed to '
                             'create the tuned flavor).')
    parser.add_argument('--name',
                        help='Tuned flavor name (default <BASE>.<PROFILE>).')
    cmd.add_facts_source(parser)
    cmd.add_dry_run(parser)


def run(args):
    from kvmtune.cloud import flavors as tuned
    from kvmtune.cloud import planning
    from kvmtune.cloud.connection import Cloud

    if not (args.name or args.base):
        raise InputError('give --from BASE (to create <BASE>.<PROFILE>) or '
                         '--name of an existing flavor', key='--from')
    plan = planning.plan_for(args)
    name = args.name or tuned.tuned_name(args.base, plan.profile)

    cloud = Cloud.connect(args.os_cloud)
    flavors = tuned.Flavors(cloud)
    flavor = flavors.find(name)
    base = flavors.get(args.base) if args.base else None

    if flavor is None:
        if base is None:
            raise InputError(f'no flavor named {name!r}', key='--name',
                             fix='give --from BASE to create it')
        diff = tuned.diff_extra_specs({}, plan.extra_specs,
                                      plan.owned_extra_specs)
        print(f'flavor {name}: new, from {base["name"]} '
              f'(ram {base["ram"]} MB, vcpus {base["vcpus"]}, '
              f'disk {base["disk"]} GB), profile {plan.profile}')
        print_diff(diff)
        if not args.dry_run:
            _create(flavors, name, base, plan.profile, diff)
            print(f'flavor {name}: created')
    else:
        diff = tuned.diff_extra_specs(flavor.get('extra_specs'),
                                      plan.extra_specs,
                                      plan.owned_extra_specs)
        print(f'flavor {name}: exists (id {flavor["id"]}), '
              f'profile {plan.profile}')
        if base is not None:
            for line in tuned.property_differences(flavor, base):
                print(f'flavor {name}: warning: {line}; Nova cannot change '
                      'a flavor\'s sizes: delete it (kvmtune flavor remove '
                      '--delete) and apply again to recreate it')
        print_diff(diff)
        if diff.empty:
            print(f'flavor {name}: already matches profile {plan.profile}, '
                  'nothing to change')
        elif not args.dry_run:
            flavors.change(flavor['id'], diff)
            print(f'flavor {name}: updated')
    if args.dry_run:
        print('dry run: nothing written')
    print(f'cloud {cloud.name}: {cloud.requests.summary()}')
    return 0


def _create(flavors, name, base, profile, diff):
    """Create the flavor and set its specs; delete it if Nova says no."""
    from kvmtune.errors import CloudError

    flavor = flavors.create(name, base, profile)
    try:
        flavors.change(flavor['id'], diff)
    except CloudError as exc:
        # Never leave a half-tuned flavor behind: it was made by this run.
        try:
            flavors.delete(flavor['id'])
        except CloudError as cleanup:
            exc.problem += (f'; and the new flavor {name} could not be '
                            f'deleted: {cleanup.problem}')
        else:
            exc.problem += f'; flavor {name} was not created'
        raise exc
