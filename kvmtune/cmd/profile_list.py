"""List the tuning profiles kvmtune can find, with their descriptions.

Profiles come from the packaged directory, then from ``[DEFAULT]
profile_dirs`` in kvmtune.conf (a later directory wins on equal names).

  kvmtune profile list
  kvmtune profile list --format json
"""

import argparse
import sys

from kvmtune.cmd import output


def add_arguments(parser: argparse.ArgumentParser) -> None:
    output.add_format(parser, legacy={'text': 'table'})


def run(args: argparse.Namespace) -> int | None:
    from kvmtune.tuning import profiles

    dirs = profiles.configured_dirs(args.config_file)
    loaded = [profiles.load_file(path) for _, path
              in sorted(profiles.available(dirs).items())]
    args.format = output.format_of(args)
    output.emit(args, ['name', 'description'],
                [[p.name, p.description] for p in loaded],
                document=[{'name': p.name, 'description': p.description,
                           'path': p.path} for p in loaded])
    if not loaded:
        print('no profiles found in: ' + ', '.join(dirs), file=sys.stderr)
    return 0
