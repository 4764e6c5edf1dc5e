"""The main job: from this host to a scaling report, in one command.

    kvmtune main-job [--os-cloud CLOUD [--compute-facts FILE]]
                     [--max-vms 3] [--runtime SECONDS] [--baseline FILE]
                     [--strict] [--verbose] [--setup-only]

Builds the benchmark guest image, brings up the single-host test
cloud (libvirt compute; QEMU TCG where KVM cannot run guests) unless
--os-cloud names another, makes the default and the tuned flavor, tunes
the local compute (huge pages, nova.conf, traits), runs the Rally disk
scaling sweep and prints the report: the table, where the JSON/PNG/HTML
are, the SLA verdict, and how to stop the cloud.

One line per step with its time; what package managers, Rally and the
steps print goes to a log file the job names (--verbose shows it too).

Exit status: 0 when the sweep ran and the report was made, whatever the
SLA said (the verdict is printed); 1 with --strict when an SLA failed;
2 when a step could not run.
"""

import argparse

from kvmtune import cmd
from kvmtune import mainjob

DEFAULT_STATE_DIR = mainjob.STATE_DIR


def add_arguments(parser: argparse.ArgumentParser) -> None:
    cmd.add_os_cloud(parser, required=False,
                     help='Use this cloud (clouds.yaml, admin) instead of '
                          'bringing up the test cloud; nothing '
                          'on this host is changed.')
    parser.add_argument('--compute-facts', metavar='FILE',
                        help='With --os-cloud: facts of the cloud\'s '
                             'compute (kvmtune host inspect --format json '
                             'there); the job then picks the tuned profile '
                             'from them and tags that compute.')
    parser.add_argument('--max-vms', type=int, default=mainjob.MAX_VMS,
                        help='Largest VM count of the sweep (default '
                             f'{mainjob.MAX_VMS}).')
    parser.add_argument('--workload', default=mainjob.WORKLOAD,
                        help='Workload the guests run (default '
                             f'{mainjob.WORKLOAD}; kvmtune/data/workloads).')
    parser.add_argument('--runtime', type=int, metavar='SECONDS',
                        help='Seconds each workload runs in the guests '
                             '(the task\'s default: 10).')
    parser.add_argument('--baseline', metavar='FILE',
                        help='Bare-metal result from kvmtune baseline.')
    parser.add_argument('--emulated', action='store_true',
                        help='The cloud runs guests under QEMU without KVM '
                             '(TCG): label the results emulated (known by '
                             'itself for the test cloud).')
    parser.add_argument('--tuned-profile', metavar='NAME',
                        help='The tuned profile (default: '
                             'pinned-hugepages-ept when the compute has '
                             'EPT/NPT, else pinned-hugepages).')
    parser.add_argument('--state-dir', default=DEFAULT_STATE_DIR,
                        help='Rally DB, results, report and log (default '
                             f'{DEFAULT_STATE_DIR}).')
    parser.add_argument('--strict', action='store_true',
                        help='Exit 1 when an SLA failed (default: the '
                             'verdict is printed, exit 0).')
    parser.add_argument('--setup-only', action='store_true',
                        help='Everything up to the sweep (image, cloud, '
                             'flavors, compute tuning, the task arguments '
                             'file), no sweep: for rally task start by '
                             'hand (the re-run line the job prints).')
    parser.add_argument('--verbose', action='store_true',
                        help='Also show what the steps print (apt, pip, '
                             'Rally, the cloud); it always goes to the log.')


def run(args: argparse.Namespace) -> int | None:
    from kvmtune.errors import InputError
    from kvmtune.mainjob import job

    if args.compute_facts and not args.os_cloud:
        raise InputError('--compute-facts goes with --os-cloud (the '
                         'test cloud\'s compute is this host)',
                         key='--compute-facts',
                         fix='add --os-cloud CLOUD, or drop --compute-facts')
    if args.max_vms < 1:
        raise InputError(f'{args.max_vms} is no VM count',
                         key='--max-vms', fix='give 1 or more')
    return job.run(job.Settings(
        os_cloud=args.os_cloud, compute_facts=args.compute_facts,
        max_vms=args.max_vms, workload=args.workload, runtime=args.runtime,
        baseline=args.baseline, emulated=args.emulated,
        tuned_profile=args.tuned_profile, state_dir=args.state_dir,
        strict=args.strict, verbose=args.verbose,
        config_files=args.config_file, setup_only=args.setup_only))
