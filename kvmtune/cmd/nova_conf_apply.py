"""Write a profile's options into nova.conf, in place.

Builds the profile's plan for this host (or for a tree captured with
``kvmtune host capture``, or a facts JSON), prints the change to nova.conf
as a unified diff (values of passwords, tokens, transport_url and database
connections are shown as ***) and writes it:

  kvmtune nova-conf apply --profile pinned-hugepages-ept
  kvmtune nova-conf apply --profile cpu-pinning --config /etc/nova/nova.conf \\
      --root captured/compute-1 --dry-run

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
"""

import sys

from kvmtune import cmd


def add_arguments(parser):
    cmd.add_profile(parser)
    parser.add_argument('--config', metavar='PATH',
                        help='the nova.conf to edit (default: [nova] '
                             'config_file, /etc/nova/nova.conf)')
    cmd.add_facts_source(parser)
    parser.add_argument('--nova-python', metavar='PYTHON',
                        help='a Python that can import nova, to check the '
                             'values with (default: see above)')
    cmd.add_dry_run(parser)


def run(args):
    from kvmtune import conf
    from kvmtune import facts as host_facts
    from kvmtune import novaconf
    from kvmtune import plan as plans
    from kvmtune import profiles
    from kvmtune.novaconf import validate

    loaded = conf.load(args.config_file)
    profile = profiles.load(args.profile,
                            profiles.search_dirs(loaded.profile_dirs))
    facts = host_facts.resolve(root=args.root, facts_file=args.facts)
    plan = plans.build_plan(profile, facts)
    path = args.config or loaded.nova.config_file
    python = validate.configured_python(args.nova_python,
                                        loaded.nova.python_executable)
    result = novaconf.apply(path, plan.nova_conf, dry_run=args.dry_run,
                            nova_python=python)
    for notice in result.notices:
        print(f'kvmtune: notice: {notice}', file=sys.stderr)
    if result.nova:
        print(f'checked against Nova {result.nova}', file=sys.stderr)
    sys.stdout.write(result.diff)
    print(result.message(plan.profile))
    return 0
