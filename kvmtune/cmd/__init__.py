"""Sub-commands of ``kvmtune``; see kvmtune.cli for the contract.

The arguments several commands share are declared once here, so that
``--profile``, ``--root``/``--facts``, ``--os-cloud`` and ``--dry-run``
read the same in every ``--help``.
"""

import argparse


def add_profile(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--profile', required=True, metavar='NAME|FILE',
                        help='profile name (see "kvmtune profile list") or '
                             'a profile YAML file')


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


def add_os_cloud(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--os-cloud', required=True, metavar='CLOUD',
                        help='cloud name in clouds.yaml (an admin one)')


def add_dry_run(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--dry-run', action='store_true',
                        help='show the change, write nothing')
