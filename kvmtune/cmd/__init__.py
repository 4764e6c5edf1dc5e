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


def add_os_cloud(parser: argparse.ArgumentParser, *, required: bool = True,
                 help: str = 'cloud name in clouds.yaml (an admin one)'
                 ) -> None:
    """--os-cloud CLOUD, a cloud of clouds.yaml (as python-openstackclient
    names it); ``help`` says what the command does with it when it is
    optional."""
    parser.add_argument('--os-cloud', required=required, metavar='CLOUD',
                        help=help)


def add_dry_run(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--dry-run', action='store_true',
                        help='show the change, write nothing')
