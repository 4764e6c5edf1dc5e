"""Write a profile's boot-time changes: kernel arguments and module options.

  kvmtune boot apply --profile pinned-hugepages
  kvmtune boot apply --profile cpu-pinning --root captured/compute-1 -f json
  kvmtune boot apply --plan applied-plan.json -f json

Compares the profile's plan for this host with what it booted
(/proc/cmdline, the loaded modules' parameters). When the booted command
line lacks an argument, writes the arguments where the distribution's
GRUB takes them (a drop-in under /etc/default/grub.d and update-grub on
Debian/Ubuntu; a block of /etc/default/grub and grub2-mkconfig on
RHEL-likes without BLS; the same block and grubby on BLS systems), and the
plan's /etc/modprobe.d/kvm.conf. It records that a reboot is needed and
why (cmdline, hugepages, module) in /var/lib/kvmtune/reboot-required.json,
and removes that record once the booted host runs the whole plan. Nothing
is written when the booted command line already matches. -f json also
gives the plan it staged (``plan``, as ``kvmtune plan -f json`` prints
one): ``kvmtune verify --plan`` checks the host against it after the
reboot. --plan FILE stages that plan as it is instead of planning the
profile on the host's facts now: the fleet rollout, run again for a host
it left disabled, applies the plan it applied before the reboot (a plan
made again from the facts after a boot whose huge page pool came up short
would take the short pool as planned).

With --root (a tree made by kvmtune host capture, or a host's root
mounted elsewhere) the files are written under that tree, and the boot
loader commands are printed as not run: they act on this machine only.
A plan that withheld isolcpus or a huge page pool, a booted command line
that is unknown, an unknown boot loader or a missing tool is refused with
one line, exit 2, nothing written.

A plan with a FAIL check that none of its changes clears (no VT-x or EPT,
no /dev/vhost-net: ``kvmtune plan`` shows each with its fix) is refused
before anything is written, one line naming each such check and its fix,
exit 2; --accept-failed-checks writes it anyway, one warning per check.
A FAIL the plan's boot-time changes clear (a pool its kernel arguments
reserve, a module option its modprobe.d file sets) is what this command
is for: it runs.
"""

import argparse

from kvmtune import cmd
from kvmtune.cmd import output


def add_arguments(parser: argparse.ArgumentParser) -> None:
    cmd.add_profile_or_plan(parser, 'stage')
    parser.add_argument('--root', metavar='DIR', default='/',
                        help='the host tree to plan for and write into '
                             '(default: this host, /)')
    cmd.add_dry_run(parser)
    cmd.add_accept_failed_checks(parser)
    output.add_format(parser, columns=False,
                      formats=('table', 'json', 'yaml'))


def run(args: argparse.Namespace) -> int:
    from kvmtune.boot import apply
    from kvmtune import facts as host_facts
    from kvmtune.tuning import failed
    from kvmtune.tuning import plan as plans

    # The plan as kvmtune.boot.apply makes it (the facts of this machine,
    # or of the tree), here so its FAIL checks are refused first: a
    # failure the boot-time changes clear (a pool reserved at boot) is
    # what this command is for, any other one is named, exit 2.
    facts = host_facts.resolve(
        root=None if apply.is_this_machine(args.root) else args.root)
    if args.plan:
        plan = plans.load(args.plan)
    else:
        plan, = plans.for_host([args.profile], facts=facts,
                               config_files=args.config_file or ())
    failed.refuse(plan, 'kvmtune boot apply',
                  accept=args.accept_failed_checks, boot_time=True,
                  warn=cmd.warn)
    result = apply.apply(args.profile, root=args.root,
                         config_files=args.config_file or (),
                         dry_run=args.dry_run, facts=facts, plan=plan)
    if output.format_of(args) != 'table':
        output.emit(args, [], [], document=result.to_dict())
        return 0
    for path, status in result.files:
        print(f'{status} {path}')
    for argv in result.commands:
        state = 'ran' if result.ran else (
            'not run (dry run)' if result.dry_run
            else f'not run (--root {result.root} is not this machine)')
        print(f'{state}: {" ".join(argv)}')
    for line in result.cmdline:
        print(f'next boot\'s kernel arguments: {line}')
    if result.reboot_required:
        why = '; '.join(f'{reason}: {" ".join(items)}'
                        for reason, items in result.reasons.items())
        print(f'reboot required ({why}); record {result.record}')
    else:
        print('no reboot needed: the booted host has every kernel argument '
              f'and module option of {result.profile}; record '
              f'{result.record}')
    return 0
