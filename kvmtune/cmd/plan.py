"""Show what a tuning profile needs on this host, changing nothing.

Runs the profile's tuners on this host's facts (or on a tree captured with
``kvmtune host capture``, or a facts JSON from ``kvmtune host inspect
--format json``) and prints the nova.conf options, kernel arguments,
modprobe.d files and flavor extra specs it wants, then the host checks:
PASS, WARN or FAIL, each failure with a one-line fix.

  kvmtune plan --profile pinned-hugepages-ept
  kvmtune plan --profile cpu-pinning --root captured/compute-1
  kvmtune plan --profile ./my-profile.yaml --facts compute-1.json \\
      --format json

The plan is for one Nova release: ``--nova-release N``, else ``[nova]
release`` in kvmtune.conf, else the Nova importable here, else the newest
release kvmtune knows (user guide, "Nova releases"). Where that release lacks
an option or extra spec a profile needs, one line names the release and
the option, exit 2.

Exit status: 0, the plan has no FAIL check; 1, it has one or more (the
plan is printed all the same); 2, it withheld values (a pool or the CPU
split it cannot plan safely: the line names the fix) or the input is
wrong.

``kvmtune nova-conf apply``, ``boot apply``, ``pages apply --profile`` and
``flavor apply`` apply the same plan, and refuse it when it has a FAIL
check none of its changes clears (``--accept-failed-checks`` to write it
anyway). The JSON keys are stable (doc/design.md section 4).
"""

import argparse
import sys
from typing import TYPE_CHECKING

from kvmtune import cmd
from kvmtune.cmd import output
from kvmtune.errors import EXIT_DIFFERS
from kvmtune.errors import EXIT_OK

if TYPE_CHECKING:
    from kvmtune.tuning.plan import Plan


def add_arguments(parser: argparse.ArgumentParser) -> None:
    cmd.add_profile(parser)
    cmd.add_facts_source(parser)
    output.add_format(parser, columns=False,
                      formats=('table', 'json', 'yaml'),
                      legacy={'text': 'table'})
    parser.add_argument('--nova-release', type=int, metavar='N',
                        help='plan for Nova release N (its major version, '
                             '29 is 2024.1); default: [nova] release in '
                             'kvmtune.conf, else the installed Nova, else '
                             'the newest kvmtune knows')


def run(args: argparse.Namespace) -> int | None:
    from kvmtune.tuning import plan as plans

    # The front door, told to return a plan that withheld values: this
    # command shows what was withheld and why, then refuses (below).
    [plan] = plans.for_host([args.profile], root=args.root,
                            facts_file=args.facts,
                            config_files=args.config_file,
                            release=args.nova_release,
                            refuse_withheld=False)
    fmt = output.format_of(args)
    if fmt in ('json', 'yaml'):
        output.emit(args, [], [], document=plan.to_dict())
    else:
        sys.stdout.write(format_text(plan))
    # Values withheld for safety: the plan above says why; exit 2.
    plans.refuse_if_withheld(plan)
    # FAIL checks: the plan is shown, and the status says so (exit 1).
    return EXIT_DIFFERS if plan.count('fail') else EXIT_OK


STATUS_WORDS = {'pass': 'PASS', 'warn': 'WARN', 'fail': 'FAIL'}


def format_text(plan: 'Plan') -> str:
    """The plan as an operator reads it, section by section."""
    from kvmtune.tuning.novaconf import services
    lines = [f'Profile {plan.profile} on {plan.facts_source}']
    if plan.nova_release is not None:
        lines.append(f'for Nova {plan.nova_release}')
    lines.append('')
    lines.append('nova.conf:')
    if not plan.nova_conf:
        lines.append('  (no change)')
    readers = services.tag(plan.nova_conf)
    for section, options in plan.nova_conf.items():
        lines.append(f'  [{section}]')
        for option, value in options.items():
            values = value if isinstance(value, list) else [value]
            lines.extend(f'  {option} = {item}' for item in values)
            lines.append('      read by: ' + ', '.join(
                f'nova-{name}' for name in readers[section][option]))
    lines += ['', 'kernel arguments:',
              '  ' + (' '.join(plan.kernel_args) or '(no change)')]
    lines += ['', 'modprobe.d:']
    if not plan.modprobe:
        lines.append('  (no change)')
    for path, content in plan.modprobe.items():
        lines.append(f'  {path}: {content.strip()}')
    lines += ['', 'flavor extra specs:']
    if not plan.extra_specs:
        lines.append('  (none)')
    lines.extend(f'  {name}={value}'
                 for name, value in plan.extra_specs.items())
    stale = [name for name in plan.owned_extra_specs
             if name not in plan.extra_specs]
    if stale:
        lines.append('  removed if present: ' + ', '.join(stale))
    lines += ['', 'checks:']
    if not plan.checks:
        lines.append('  (none)')
    for check in plan.checks:
        lines.append(f'  {STATUS_WORDS[check.status]} {check.tuner} '
                     f'{check.name}: {check.message}')
        if check.fix:
            lines.append(f'       fix: {check.fix}')
    if plan.notes:
        lines += ['', 'notes:']
        lines.extend(f'  - {note["tuner"]}: {note["note"]}'
                     for note in plan.notes)
    lines += ['', f'{plan.count("pass")} pass, {plan.count("warn")} warn, '
                  f'{plan.count("fail")} fail']
    return '\n'.join(lines) + '\n'
