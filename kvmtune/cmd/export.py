"""Write a profile's plan as a deployment tool's own override files.

kolla-ansible, OpenStack-Ansible, openstack-helm and the like regenerate
nova.conf on every deploy, so an in-place "kvmtune nova-conf apply" on their
hosts is lost. This writes the same plan (from this host's facts, or a facts
JSON made on the compute with "kvmtune host inspect --format json") in the
tool's own shape under --output:

  oslo-dropin        etc/nova/nova-{compute,scheduler,conductor}.conf.d/
                     50-kvmtune.conf (each service's options only)
  kolla              etc/kolla/config/nova/<host>/nova-compute.conf,
                     nova/nova-scheduler.conf, nova/nova-conductor.conf,
                     host_vars/<host>/kvmtune.yml (provider config traits)
  openstack-ansible  etc/openstack_deploy/host_vars/<host>.yml
                     (nova_nova_conf_overrides, nova_provider_overrides),
                     group_vars/nova_scheduler.yml, nova_conductor.yml
  helm               values-kvmtune.yaml (conf.nova, per-node
                     conf.overrides.nova_compute.hosts)
  provider-config    etc/nova/provider_config/kvmtune.yaml (traits)
  tuned              etc/tuned/cpu-partitioning-variables.conf

Kernel arguments (etc/default/grub.d/50-kvmtune.cfg) and modprobe lines
(etc/modprobe.d/kvm.conf) come with every target, under hosts/<host>/ when
the tool does not manage them.

  kvmtune export --profile pinned-hugepages --target kolla \\
      --facts compute-1.json --host compute-1 --output ./kvmtune-kolla

--nova-conf BASE is the nova.conf (an override file, or one the tool
rendered on a host) whose lists kvmtune extends ([filter_scheduler]
enabled_filters, [libvirt] cpu_model_extra_flags, disk_cachemodes): every
target writes them as BASE's items followed by kvmtune's, the way "nova-conf
apply" edits them, and a note says what in the tool's precedence can still
replace them; provider-config and tuned refuse it. For oslo-dropin, another
option BASE sets to another value than the plan is refused, naming it: a
service started with --config-file (Debian's and Ubuntu's units) reads the
drop-in directories *before* BASE, and BASE's value wins.
--service-cmdline "the service's command line" (or, exporting for this
host, its /proc/<pid>/cmdline) tells where the drop-in
stands in oslo.config's order; when it would lose, a systemd drop-in
etc/systemd/system/<unit>.d/50-kvmtune.conf (unit: --service-unit, the
process's own, or nova-<service>.service) restarts the service with
--config-dir after its --config-files. --dropin-anyway writes the drop-in
all the same and says in which start-up shapes each such option takes
effect.

  kvmtune export --profile pinned-hugepages --target oslo-dropin \\
      --facts compute-1.json --output ./out --nova-conf nova.conf \\
      --service-cmdline "/usr/bin/nova-compute \\
          --config-file=/etc/nova/nova.conf \\
          --config-file=/etc/nova/nova-compute.conf"

Without --host the compute files are for every compute host of the tool's
group (the hosts must be alike). An existing file that differs is never
overwritten: the run stops naming the key, and nothing is written. A second
run with the same facts changes no byte.
"""

import argparse
import sys
from typing import TYPE_CHECKING

from kvmtune import cmd
from kvmtune.tuning import export

if TYPE_CHECKING:
    from kvmtune.tuning.novaconf.effective import Reader


def add_arguments(parser: argparse.ArgumentParser) -> None:
    cmd.add_profile(parser)
    parser.add_argument('--target', required=True, metavar='TARGET',
                        help='one of: ' + ', '.join(export.TARGETS))
    parser.add_argument('-o', '--output', required=True, metavar='DIR',
                        help='directory to write the files under')
    parser.add_argument('--host', metavar='NAME',
                        help='the compute host\'s inventory / node name '
                             '(default: the whole compute group)')
    cmd.add_facts_source(parser, verb='export for')
    parser.add_argument('--nova-conf', metavar='BASE',
                        help='your nova.conf: the lists kvmtune extends '
                             '(enabled_filters ...) keep its items; '
                             'oslo-dropin: an option it sets otherwise '
                             'than the plan is refused')
    parser.add_argument('--service-cmdline', metavar='CMDLINE',
                        action='append',
                        help='a Nova service\'s command line, as it is '
                             'started (repeat for each service; default '
                             'on this host: its /proc/<pid>/cmdline): '
                             'the drop-in is placed to win (oslo-dropin)')
    parser.add_argument('--service-unit', metavar='UNIT',
                        help='the systemd unit of that service (default: '
                             'the process\'s own, or nova-<service>.service)')
    parser.add_argument('--dropin-anyway', action='store_true',
                        help='write the drop-in even where BASE\'s value '
                             'would win in some start-up shape, and say '
                             'which (oslo-dropin)')


def cmdlines(args: argparse.Namespace
             ) -> tuple[dict[str, tuple[list[str], str | None]],
                        'Reader | None']:
    """({service: (argv, unit)}, Reader of this host or None) for
    oslo-dropin: from --service-cmdline, else the services running here
    when the export is for this host."""

    from kvmtune.errors import InputError
    from kvmtune.tuning.novaconf import dropin
    from kvmtune.tuning.novaconf import effective
    from kvmtune.tuning.novaconf import services

    here = args.root is None and args.facts is None
    under = effective.Reader('/') if here else None
    if not args.service_cmdline:
        if args.service_unit:
            raise InputError('--service-unit needs a --service-cmdline',
                             key='--service-unit',
                             fix='give the service\'s command line too')
        if here and args.target == 'oslo-dropin':
            return dropin.running_cmdlines(), under
        return {}, under
    found: dict[str, tuple[list[str], str | None]] = {}
    for line in args.service_cmdline:
        argv, service = services.parse_cmdline(line)
        if service in found:
            raise InputError(f'nova-{service} is given twice',
                             key='--service-cmdline',
                             fix='give one command line per service')
        found[service] = (argv, None)
    if args.service_unit:
        if len(found) != 1:
            raise InputError('--service-unit names one unit, and there '
                             'are several --service-cmdline',
                             key='--service-unit',
                             fix='give one --service-cmdline with it')
        [(service, (argv, _))] = found.items()
        found[service] = (argv, args.service_unit)
    return found, under


def run(args: argparse.Namespace) -> int | None:
    from kvmtune import facts as host_facts
    from kvmtune.tuning import plan as plans

    export.module(args.target)      # an unknown target before any work
    services, under = cmdlines(args)
    facts = host_facts.resolve(root=args.root, facts_file=args.facts)
    # the front door refuses a plan that withheld values (exit 2)
    plan, = plans.for_host([args.profile], facts=facts,
                           config_files=args.config_file or ())
    result = export.export(args.target, plan, facts, args.output,
                           host=args.host, base_path=args.nova_conf,
                           cmdlines=services, under=under,
                           anyway=args.dropin_anyway)
    for path, status in result.files:
        print(f'{status:9} {path}')
    for note in result.notes:
        print(f'note: {note}')
    changed = sum(1 for _, status in result.files if status != 'unchanged')
    print(f'{args.target}: {changed} file(s) written, '
          f'{len(result.files) - changed} unchanged', file=sys.stderr)
    return 0
