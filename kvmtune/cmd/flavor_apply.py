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
A change of several calls (keys set and removed) keeps the flavor
unplaceable until its last call (trait:CUSTOM_KVMTUNE_INCOMPLETE); a flavor
a stopped run left unfinished is named incomplete and finished
(doc/design.md 9.8).

With --project (repeatable) a new flavor is private and shared with those
projects only once its specs are complete, so no project's guest can land
on it half made, whatever stops the run; a run again shares what is
missing. An existing public flavor cannot be made private (Nova): refused.

The plan's host checks count too: a FAIL check that none of the plan's
changes clears (no EPT on the host the flavor is planned for) is refused
before the cloud is asked anything, one line naming each such check and
its fix, exit 2; --accept-failed-checks makes the flavor anyway. A pool
the host's boot-time changes reserve is one warning.
"""

import argparse

from kvmtune import cmd


def add_arguments(parser: argparse.ArgumentParser) -> None:
    cmd.add_os_cloud(parser)
    cmd.add_profile(parser)
    parser.add_argument('--from', dest='base', metavar='BASE',
                        help='Flavor to copy the sizes from (needed to '
                             'create the tuned flavor).')
    parser.add_argument('--name',
                        help='Tuned flavor name (default <BASE>.<PROFILE>).')
    parser.add_argument('--project', action='append', default=[],
                        metavar='PROJECT_ID',
                        help='make the flavor private and share it with '
                             'this project (repeatable), after its specs '
                             'are complete')
    cmd.add_facts_source(parser)
    cmd.add_dry_run(parser)
    cmd.add_accept_failed_checks(parser)


def run(args: argparse.Namespace) -> int | None:
    from kvmtune.openstack import flavors as tuned
    from kvmtune.tuning import failed

    # A plan with FAIL checks no change of it clears is refused before
    # the cloud is asked anything; a pool the host's boot-time changes
    # reserve is one warning line.
    tuned.apply_profile(args.os_cloud, args.profile, base=args.base,
                        name=args.name, root=args.root,
                        facts_file=args.facts, dry_run=args.dry_run,
                        config_files=args.config_file,
                        projects=args.project,
                        check=lambda plan: failed.refuse(
                            plan, 'kvmtune flavor apply',
                            accept=args.accept_failed_checks,
                            warn=cmd.warn))
    return 0
