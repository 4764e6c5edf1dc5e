"""One step of a rollout on one host (or, for preflight, one batch).

    kvmtune rollout-step preflight --os-cloud admin --host c2 --host c3 \\
        --run-id RUN --profile pinned-hugepages --facts-dir facts/
    kvmtune rollout-step disable --os-cloud admin --host c2 --run-id RUN \\
        --profile pinned-hugepages
    kvmtune rollout-step drain --os-cloud admin --host c2 --run-id RUN
    kvmtune rollout-step gate --os-cloud admin --host c2 --run-id RUN \\
        --profile pinned-hugepages --root / --plan applied-plan.json
    kvmtune rollout-step enable --os-cloud admin --host c2 --run-id RUN
    kvmtune rollout-step record-plan --host c2 --run-id RUN \\
        --state rollout.json --plan applied-plan.json

The rollout's Ansible roles call these, host by host, batch by batch:

  preflight  the rest of the enabled fleet takes the batch's guests (first
             fit on live usages; with --facts-dir the NUMA fit too), or, in
             --mode in-place, the plan's CPU sets and pools still hold the
             guests staying; the density cost per host and flavor. Refused:
             one line naming host, server, flavor and what runs out, exit 2
  disable    nova-compute disabled with the reason "kvmtune rollout RUN:
             PROFILE" (a host disabled for another reason: refused)
  drain      ACTIVE guests live-migrated, SHUTOFF ones cold-migrated and
             confirmed, then the host asserted empty
  gate       kvmtune verify's host, novacompute and cloud layers for the
             host: every check PASS, else exit 1 and the host stays
             disabled; against --plan (the plan the apply step applied),
             else the profile planned on the host's facts
  enable     nova-compute enabled again (only when this run disabled it)
  record-plan  records in the state file the plan the apply step
             applied on the host (--plan) and the apply step, once: a run
             again applies and gates that plan until the host is enabled
             (no cloud; needs --state)

With --state FILE (the rollout's state file) a step already done for the
host in that run is not made again, and a step made is recorded. Only
preflight and gate change nothing in the cloud. Exit 0 done, 1 the gate
did not pass, 2 refused or could not run. Every step but record-plan
needs --os-cloud. The steps are the rollout's step table
(kvmtune.rollout.vocabulary).
"""

import argparse
import sys

from kvmtune import cmd
from kvmtune.cmd import output
from kvmtune.rollout import vocabulary

# the step table's commands
STEPS = tuple(vocabulary.COMMANDS)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('step', choices=STEPS, help='the step to make')
    cmd.add_os_cloud(parser, required=False,
                     help='cloud name in clouds.yaml (an admin one); every '
                          'step but record-plan')
    parser.add_argument('--host', action='append', required=True,
                        metavar='NAME',
                        help='the compute host as Nova names it (preflight: '
                             'repeatable, the batch)')
    parser.add_argument('--run-id', required=True, metavar='ID',
                        help='the rollout run (its state file holds it)')
    parser.add_argument('--profile', action='append', metavar='NAME|FILE',
                        help='the profile rolled out (disable: its reason; '
                             'gate, preflight: the plan)')
    parser.add_argument('--state', metavar='FILE',
                        help='the rollout\'s state file: skip a step done, '
                             'record a step made')
    parser.add_argument('--mode', choices=vocabulary.JUDGED,
                        default='drain',
                        help='preflight: the guests leave (drain) or stay '
                             '(in-place)')
    cmd.add_facts_dir(parser, 'preflight, for the NUMA fit and the plan')
    parser.add_argument('--timeout', type=float, default=None,
                        metavar='SECONDS',
                        help='drain: how long to wait for the host to be '
                             'empty (default 900)')
    cmd.add_facts_source(parser, verb='gate')
    parser.add_argument('--plan', metavar='FILE', dest='plan_file',
                        help='gate, record-plan: the plan the apply step '
                             'applied ("boot apply -f json"\'s plan, as '
                             '"kvmtune plan -f json" prints one; -: '
                             'standard input): the gate checks it instead '
                             'of a plan made again from the host\'s facts, '
                             'record-plan records it')
    parser.add_argument('--nova-config-file', action='append',
                        metavar='PATH', dest='nova_config_files',
                        help='gate: a file nova-compute reads (as verify)')
    parser.add_argument('--layer', action='append',
                        choices=('host', 'novacompute', 'cloud'),
                        help='gate: only this layer (repeatable; default: '
                             'all three)')
    output.add_format(parser, columns=False, formats=('table', 'json',
                                                      'yaml'))


def _one_host(args: argparse.Namespace) -> str:
    from kvmtune.errors import InputError
    if len(args.host) != 1:
        raise InputError(f'{args.step} takes one host', key='--host',
                         fix='give --host once')
    return str(args.host[0])


def run(args: argparse.Namespace) -> int | None:
    from kvmtune.openstack.connection import Cloud
    from kvmtune.rollout import steps

    host = args.host[0] if args.step == 'preflight' else _one_host(args)
    cloud = None
    if args.step != 'record-plan':
        if not args.os_cloud:
            from kvmtune.errors import InputError
            raise InputError(f'{args.step} reads or changes the cloud',
                             key='--os-cloud',
                             fix='give --os-cloud CLOUD (clouds.yaml)')
        cloud = Cloud.connect(args.os_cloud)
    result = steps.make(args.step, cloud, args.host,
                        args.run_id, profiles=args.profile or (),
                        state_file=args.state, mode=args.mode,
                        facts_dir=args.facts_dir, timeout=args.timeout,
                        root=args.root, facts_file=args.facts,
                        plan_file=args.plan_file,
                        nova_config_files=args.nova_config_files,
                        layers=args.layer,
                        config_files=args.config_file or ())
    rows = [[row.get(c, '') for c in result.columns]
            for row in result.rows]
    if args.format == 'table' and rows:
        output.emit(args, result.columns, rows)
    elif args.format != 'table':
        output.emit(args, result.columns, rows,
                    document=result.to_dict())
    print(f'{args.step} {host}: {result.line}',
          file=sys.stderr if args.format != 'table' else sys.stdout)
    if result.error is not None:
        raise result.error
    return result.exit_code
