"""Give plain `rally` a database and an environment for a cloud.

    kvmtune rally env                     # the test cloud (kvmtune-admin)
    kvmtune rally env --os-cloud CLOUD    # a cloud of clouds.yaml
    rally task start "$(kvmtune rally task-path disk-scaling)" ...

Checks the cloud's credentials with Keystone, makes Rally's database where
none exists (the database of Rally's own rally.conf; with none,
~/.rally/rally.conf naming ~/.rally/rally.sqlite is written), makes the
environment (named after the cloud, --name to choose) or refreshes it
when the cloud's credentials changed (the old one keeps its tasks under
NAME@<time>), makes it Rally's current one and lets `rally env check`
try it. Run it again after `kvmtune cloud up --rotate-credentials` or a
change of clouds.yaml. No password is printed.

Exit status: 0 done; 2 an unknown cloud, credentials the cloud refuses,
a Rally database that cannot be written (one line).
"""

import argparse

from kvmtune import cmd

COLUMNS = ['field', 'value']
FIELDS = ('name', 'cloud', 'auth_url', 'username', 'project_name',
          'region_name', 'environment', 'replaced', 'current', 'database',
          'rally_config')


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from kvmtune.cmd import output

    cmd.add_os_cloud(parser, required=False,
                     help='a cloud of clouds.yaml (default: the test '
                          'cloud, kvmtune-admin of its own clouds.yaml)')
    parser.add_argument('--name', metavar='NAME',
                        help='the environment\'s name (default: the '
                             'cloud\'s)')
    output.add_format(parser, formats=('table', 'json', 'yaml', 'value'))


def run(args: argparse.Namespace) -> int | None:
    import sys

    from kvmtune.cmd import output
    from kvmtune.mainjob import rallyenv

    done = rallyenv.ensure(os_cloud=args.os_cloud, name=args.name,
                           config_files=args.config_file)
    if done['wrote']:     # never inside a JSON or YAML document
        output.wrote(done['wrote'], stream=None if args.format == 'table'
                     else sys.stderr)
    rows = [(field, done[field]) for field in FIELDS]
    output.emit(args, COLUMNS, rows,
                document={field: done[field] for field in FIELDS})
    return 0
