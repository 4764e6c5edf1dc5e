"""Sub-commands of ``kvmtune``; see kvmtune.cli for the contract.

The arguments several commands share are declared once here, so that
``--profile``, ``--root``/``--facts``, ``--os-cloud``, ``--facts-dir`` and
``--dry-run`` read the same in every ``--help``.
"""

import argparse


def add_profile(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--profile', required=True, metavar='NAME|FILE',
                        help='profile name (see "kvmtune profile list") or '
                             'a profile YAML file')


def add_profile_or_plan(parser: argparse.ArgumentParser, verb: str) -> None:
    """--profile NAME|FILE, or --plan FILE: a plan made before (``kvmtune
    plan -f json``; -: standard input), ``verb`` as it is, not made again
    from the host's facts."""
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument('--profile', metavar='NAME|FILE',
                       help='profile name (see "kvmtune profile list") or '
                            'a profile YAML file')
    which.add_argument('--plan', metavar='FILE',
                       help=f'{verb} this plan ("kvmtune plan -f json", or '
                            'the plan "boot apply -f json" printed; -: '
                            'standard input) as it is, instead of planning '
                            'the profile on the host\'s facts now (the '
                            'rollout applies the plan it applied before a '
                            'reboot this way)')


def add_facts_source(parser: argparse.ArgumentParser,
                     verb: str = 'plan for'
                     ) -> argparse._MutuallyExclusiveGroup:
    """--root DIR | --facts FILE: another host than this one."""
    source = parser.add_mutually_exclusive_group()
    source.add_argument('--root', metavar='DIR',
                        help=f'{verb} the host tree made by "kvmtune host '
                             'capture" in DIR instead of this host')
    source.add_argument('--facts', metavar='FILE',
                        help=f'{verb} the host a facts JSON describes '
                             '("kvmtune host inspect --format json")')
    return source


def add_os_cloud(parser: argparse.ArgumentParser, *, required: bool = True,
                 help: str = 'cloud name in clouds.yaml (an admin one)'
                 ) -> None:
    """--os-cloud CLOUD, a cloud of clouds.yaml (as python-openstackclient
    names it); ``help`` says what the command does with it when it is
    optional."""
    parser.add_argument('--os-cloud', required=required, metavar='CLOUD',
                        help=help)


def add_facts_dir(parser: argparse.ArgumentParser, use: str) -> None:
    """--facts-dir DIR as kvmtune.capacity.nodefacts.read_dir reads it;
    ``use`` says what the command does with it."""
    parser.add_argument('--facts-dir', metavar='DIR',
                        help=f'{use}: HOST.json per compute node ("kvmtune '
                             'host inspect --format json" there), and '
                             'HOST.conf (its nova.conf, for '
                             'cpu_dedicated_set) where known')


def add_dry_run(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--dry-run', action='store_true',
                        help='show the change, write nothing')


def add_accept_failed_checks(parser: argparse.ArgumentParser) -> None:
    """--accept-failed-checks, the same on every command that applies a
    plan (kvmtune.tuning.failed.refuse)."""
    parser.add_argument('--accept-failed-checks', action='store_true',
                        help='write the plan even when it has FAIL checks '
                             'that none of its changes clears (without it '
                             'such a plan is refused, each check named, '
                             'exit 2)')


def warn(line: str) -> None:
    """One ``kvmtune: warning:`` line on stderr."""
    import sys

    print(f'kvmtune: warning: {line}', file=sys.stderr)
