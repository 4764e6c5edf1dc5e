"""Write a profile's options into nova.conf, in place.

Builds the profile's plan for this host (or for a tree captured with
``kvmtune host capture``, or a facts JSON), prints the change to nova.conf
as a unified diff (values of passwords, tokens, transport_url and database
connections are shown as ***) and writes it:

  kvmtune nova-conf apply --profile pinned-hugepages-ept
  kvmtune nova-conf apply --profile cpu-pinning --config /etc/nova/nova.conf \\
      --root captured/compute-1 --dry-run
  kvmtune plan --profile cpu-pinning -f json > plan.json
  kvmtune nova-conf apply --plan plan.json

--plan FILE (-: standard input) writes that plan's options as they are,
instead of planning the profile on the host's facts now (the fleet
rollout, run again for a host it left disabled, applies the plan it
applied before).

Only the options the profile sets change; comments, order, spacing and all
other options stay byte for byte. The previous content is kept in
``<nova.conf>.kvmtune.bak``; the file keeps its mode and owner and is
replaced atomically. A second run writes nothing and says so.

Before writing, every value is checked against Nova's own option
definitions, by the Python named with --nova-python, $KVMTUNE_NOVA_PYTHON
or [nova] python_executable in kvmtune.conf (Nova's virtualenv), else by
kvmtune's own Python or /usr/bin/python3 when they have Nova; with none, a
notice says so and kvmtune's own rules apply. A value Nova would reject
stops the run with nothing written. Restart nova-compute afterwards for
Nova to read the new options.

Each Nova service reads its own options (kvmtune.tuning.novaconf.services, from
Nova's source): ``--service compute`` writes only what nova-compute reads,
``--service scheduler`` what nova-scheduler and nova-conductor read
(``[filter_scheduler] enabled_filters``, ``[workarounds]
disable_fallback_pcpu_query``), ``--service all`` everything (one file for
all services, as on a single-node DevStack). The default is what this host
runs (nova-compute and nova-scheduler: all), else compute; with --root DIR
of another host, what DIR/proc shows running there, and a tree with no
Nova process in it (a capture has none) needs --service: this machine's
processes say nothing about that host. An option left out is named on
stderr, never dropped silently.

A service reads nova.conf in oslo.config's order
(kvmtune.tuning.novaconf.effective, from oslo_config/cfg.py): a later
``--config-file`` or a drop-in directory read after it may set the same option,
or the service may not read this file at all (DevStack's nova-compute reads
nova-cpu.conf). With ``--service-cmdline "the service's command line"`` such an
option stops the run, naming the file that wins, with nothing written; applying
on this host without it, the running services' /proc/<pid>/cmdline are
checked the same way and each such option is a notice.

A plan with a FAIL check that none of its changes clears (no VT-x or EPT,
no /dev/vhost-net: ``kvmtune plan`` shows each with its fix) is refused
before anything is written, one line naming each such check and its fix,
exit 2; --accept-failed-checks writes it anyway, one warning per check.
A FAIL the plan's boot-time changes clear (a huge page pool its kernel
arguments reserve) is one warning naming ``kvmtune boot apply`` and the
reboot as the next step: restart nova-compute once the host booted it.
"""

import argparse
import sys

from kvmtune import cmd


def add_arguments(parser: argparse.ArgumentParser) -> None:
    cmd.add_profile_or_plan(parser, 'write')
    parser.add_argument('--config', metavar='PATH',
                        help='the nova.conf to edit (default: [nova] '
                             'config_file, /etc/nova/nova.conf)')
    cmd.add_facts_source(parser)
    parser.add_argument('--nova-python', metavar='PYTHON',
                        help='a Python that can import nova, to check the '
                             'values with (default: see above)')
    parser.add_argument('--service', choices=('compute', 'scheduler', 'all'),
                        help='write only the options this Nova service '
                             'reads (default: what this host runs, '
                             'nova-compute when no Nova service runs here)')
    parser.add_argument('--service-cmdline', metavar='CMDLINE',
                        action='append',
                        help='the command line the Nova service is started '
                             'with (repeatable): refuse when it would read '
                             'a written option from another file (default: '
                             'the running services\' own, as notices)')
    cmd.add_dry_run(parser)
    cmd.add_accept_failed_checks(parser)


def service_cmdlines(args: argparse.Namespace, service: str
                     ) -> tuple[list[tuple[str, list[str], int | None]],
                                bool]:
    """([(service, argv, pid)], strict) whose reading of nova.conf is
    checked: --service-cmdline (strict), else the running services of
    this host that read what ``service`` writes (notices)."""

    from kvmtune.errors import InputError
    from kvmtune.tuning.novaconf import services

    wanted = (set(services.SERVICES) if service == 'all'
              else {services.COMPUTE} if service == services.COMPUTE
              else {services.SCHEDULER, services.CONDUCTOR})
    if args.service_cmdline:
        found: list[tuple[str, list[str], int | None]] = []
        for line in args.service_cmdline:
            argv, name = services.parse_cmdline(line)
            if name not in wanted:
                raise InputError(f'nova-{name} does not read what --service '
                                 f'{service} writes', source=line,
                                 key='--service-cmdline',
                                 fix='give the command line of the service '
                                     'the options are written for')
            found.append((name, argv, None))
        return found, True
    if args.root is not None or args.facts is not None:
        return [], False        # another host: its processes are not here
    return [(name, argv, pid) for pid, name, argv in services.processes()
            if name in wanted], False


def default_service(root: str | None) -> tuple[str, str]:
    """(service, why) when --service is not given: what the host runs,
    read from its own /proc (``root``/proc for another host's tree).

    :raises InputError: another host's tree shows no Nova process
    """
    import os

    from kvmtune.errors import InputError
    from kvmtune.facts import is_live
    from kvmtune.tuning.novaconf import services

    if root is None or is_live(root):
        return services.default_service()
    proc = os.path.join(root, 'proc')
    if not services.running(proc):
        raise InputError(f'no Nova service process in {proc} to take '
                         'the default --service from (this machine\'s '
                         'processes are not that host\'s)', source=root,
                         key='--service', fix='give --service compute, '
                         'scheduler or all')
    service, why = services.default_service(proc)
    return service, f'{why} (in {proc})'


def run(args: argparse.Namespace) -> int | None:
    from kvmtune import conf
    from kvmtune.tuning import failed
    from kvmtune.tuning.novaconf import update
    from kvmtune.tuning.novaconf import validate
    from kvmtune.tuning import plan as plans

    loaded = conf.load(args.config_file)
    # The front door: profile, facts, plan, and the refusal of a withheld
    # plan, before anything is written.
    if args.plan is not None:
        plan = plans.load(args.plan)
    else:
        [plan] = plans.for_host([args.profile], root=args.root,
                                facts_file=args.facts,
                                config_files=args.config_file)
    # FAIL checks no change of the plan clears: refused before anything
    # is read or written, each named (a pool the boot-time changes
    # reserve: one warning line each).
    failed.refuse(plan, 'kvmtune nova-conf apply',
                  accept=args.accept_failed_checks, warn=cmd.warn)
    # --config '' is a mistake (an unset variable), not "the default".
    path = loaded.nova.config_file if args.config is None else args.config
    service, why = ((args.service, None) if args.service
                    else default_service(args.root))
    python = validate.configured_python(args.nova_python,
                                        loaded.nova.python_executable)
    # A file that cannot be applied gets its one-line error alone: the
    # notices about what would be written come after it is read.
    cmdlines, strict = service_cmdlines(args, service)
    result = update.apply_plan(plan, path, service, dry_run=args.dry_run,
                               nova_python=python, why=why,
                               cmdlines=cmdlines, strict=strict)
    for notice in result.notices:
        print(f'kvmtune: notice: {notice}', file=sys.stderr)
    if result.nova:
        print(f'checked against Nova {result.nova}', file=sys.stderr)
    sys.stdout.write(result.diff)
    print(result.message(plan.profile))
    return 0
