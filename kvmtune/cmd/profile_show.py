"""Show one tuning profile, with every tuner parameter filled in.

Parameters the profile leaves out are shown with their defaults, so what
you read is what ``kvmtune plan`` uses.

  kvmtune profile show pinned-hugepages-ept
  kvmtune profile show io-tuned --format json
"""

import argparse
import sys

from kvmtune.cmd import output
from kvmtune import jsonout


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('name', metavar='NAME|FILE',
                        help='profile name or profile YAML file')
    output.add_format(parser, default='yaml', columns=False,
                      formats=('yaml', 'json'))


def run(args: argparse.Namespace) -> int | None:
    import yaml

    from kvmtune.tuning import profiles

    dirs = profiles.configured_dirs(args.config_file)
    profile = profiles.load(args.name, dirs)
    shown = profile.to_dict()
    shown['tuners'] = [
        {'name': ref.name,
         'params': ref.tuner_class.parse_params(ref.params, profile.path)}
        for ref in profile.tuner_refs]
    shown['path'] = profile.path
    if args.format == 'json':
        sys.stdout.write(jsonout.dumps(shown, source=profile.path) + '\n')
    else:
        jsonout.check_finite(shown, source=profile.path)
        yaml.safe_dump(shown, sys.stdout, sort_keys=False,
                       default_flow_style=False, width=79)
    return 0
