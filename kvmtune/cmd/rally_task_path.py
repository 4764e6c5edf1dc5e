"""Print where an installed Rally task file of kvmtune is.

    kvmtune rally task-path disk-scaling
    rally task start "$(kvmtune rally task-path disk-scaling)" \\
        --task-args '{"max_vms": 3}'

The task files are installed with kvmtune, beside its Rally plugins (in a
clone they are rally_scenarios/*.yaml, with arguments files in
rally_scenarios/args/); without a name this lists them with their paths.
Rally itself comes with the bench extra: pip install '.[bench]' in a
kvmtune clone (README, "Install").
"""

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('name', nargs='?', metavar='TASK',
                        help='task name, e.g. disk-scaling or '
                             'network-scaling (default: list them all)')


def run(args: argparse.Namespace) -> int | None:
    from kvmtune.mainjob import sweep

    if args.name:
        print(sweep.task_path(args.name))
        return 0
    for name in sweep.task_names():
        print(f'{name}  {sweep.task_path(name)}')
    return 0
