"""Set huge page pools per NUMA node and page size, now.

  kvmtune pages apply 0:2M:512 1:2M:512
  kvmtune pages apply --profile pinned-hugepages     # the plan's pools

Each NODE:SIZE:COUNT makes node NODE's pool of SIZE pages (2M, 1G, or
KiB) hold exactly COUNT pages, through
/sys/devices/system/node/node<N>/hugepages/hugepages-<kB>kB/nr_hugepages
(sudo -n when not root). A pool this kernel lacks, or more pages than the
node has free memory for, is refused before anything is written; when
the kernel gives fewer pages than asked (free memory is fragmented; 1 GB
pages rarely exist after boot) every pool is put back and the command
fails with the kernel arguments that reserve them at boot instead.

With --profile, a plan with a FAIL check that none of its changes clears
(the missing pool is one this command clears) is refused before any pool
is touched, one line naming each such check and its fix, exit 2;
--accept-failed-checks sets the pools anyway.
"""

import argparse
from typing import TYPE_CHECKING

from kvmtune import cmd
from kvmtune.errors import InputError

if TYPE_CHECKING:
    from kvmtune.tuning.plan import HugepageRequest


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('pools', nargs='*', metavar='NODE:SIZE:COUNT',
                        help='a pool and its page count, e.g. 0:2M:512')
    parser.add_argument('--profile', metavar='NAME|FILE',
                        help='set the pools of this profile\'s plan for '
                             'this host (its "hugepages" key)')
    cmd.add_accept_failed_checks(parser)


def run(args: argparse.Namespace) -> int | None:
    from kvmtune.tuning import pages

    if bool(args.pools) == bool(args.profile):
        raise InputError('give NODE:SIZE:COUNT pools or --profile, one of '
                         'them', key='kvmtune pages apply',
                         fix='e.g. kvmtune pages apply 0:2M:512')
    if args.profile:
        from kvmtune.tuning import failed
        from kvmtune.tuning import plan as plans

        # the front door: a plan that withheld a pool is refused (exit 2),
        # never applied in part
        plan, = plans.for_host([args.profile],
                               config_files=args.config_file or ())
        pools: list[pages.Pool] | list[HugepageRequest] = plan.hugepages
        if not pools:
            print(f'profile {plan.profile} plans no huge page pool')
            return 0
        # a FAIL check none of the plan's changes clears: refused, each
        # named, before any pool is touched
        failed.refuse(plan, 'kvmtune pages apply',
                      accept=args.accept_failed_checks,
                      boot_time=True, warn=cmd.warn)
    else:
        try:
            pools = [pages.parse_pool(item) for item in args.pools]
        except ValueError as exc:
            raise InputError(str(exc), key='NODE:SIZE:COUNT',
                             fix='e.g. 0:2M:512 or 1:1G:4') from None
    pages.apply(pools, say=print)
    return 0
