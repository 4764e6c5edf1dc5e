"""Check a profile YAML file: syntax, tuners, parameters, extra specs.

Prints one OK line, or the first problem as one line (file, key, what is
wrong and the valid values) and exits 2. The tuners are also run on an
empty host, which catches two tuners that set one option differently.

  kvmtune profile validate my-profile.yaml
"""

import argparse
from typing import cast

from kvmtune.facts.types import Facts


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('file', metavar='FILE', help='profile YAML file')


def run(args: argparse.Namespace) -> int | None:
    from kvmtune.tuning import plan as plans
    from kvmtune.tuning import profiles

    profile = profiles.load_file(args.file)
    # An empty host: the tuners read every fact with a default. What they
    # withhold there (CPU sets, page pools: no CPUs, no memory) says
    # nothing of the file, so the front door returns that plan.
    [plan] = plans.for_host([profile], facts=cast(Facts,
                                                  {'source': 'no host'}),
                            refuse_withheld=False)
    tuners = ', '.join(ref.name for ref in profile.tuner_refs) or 'none'
    print(f'{args.file}: OK: profile {profile.name} (tuners: {tuners}; '
          f'{len(plan.extra_specs)} extra specs)')
    return 0
