"""List the tuning profiles kvmtune can find, with their descriptions.

Profiles come from the packaged directory, then from ``[DEFAULT]
profile_dirs`` in kvmtune.conf (a later directory wins on equal names).

  kvmtune profile list
  kvmtune profile list --format json
"""

import json
import sys


def add_arguments(parser):
    parser.add_argument('--format', choices=('text', 'json'),
                        default='text', help='output format (default: text)')


def run(args):
    from kvmtune import profiles

    dirs = profiles.configured_dirs(args.config_file)
    loaded = [profiles.load_file(path) for _, path
              in sorted(profiles.available(dirs).items())]
    if args.format == 'json':
        json.dump([{'name': p.name, 'description': p.description,
                    'path': p.path} for p in loaded], sys.stdout, indent=2)
        sys.stdout.write('\n')
        return 0
    width = max((len(p.name) for p in loaded), default=0)
    for profile in loaded:
        print(f'{profile.name:<{width}}  {profile.description}')
    if not loaded:
        print('no profiles found in: ' + ', '.join(dirs), file=sys.stderr)
    return 0
