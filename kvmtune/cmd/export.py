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

Without --host the compute files are for every compute host of the tool's
group (the hosts must be alike). An existing file that differs is never
overwritten: the run stops naming the key, and nothing is written. A second
run with the same facts changes no byte.
"""

import sys

from kvmtune import cmd

TARGETS = ('oslo-dropin', 'kolla', 'openstack-ansible', 'helm',
           'provider-config', 'tuned')


def add_arguments(parser):
    cmd.add_profile(parser)
    parser.add_argument('--target', required=True, metavar='TARGET',
                        help='one of: ' + ', '.join(TARGETS))
    parser.add_argument('--output', required=True, metavar='DIR',
                        help='directory to write the files under')
    parser.add_argument('--host', metavar='NAME',
                        help='the compute host\'s inventory / node name '
                             '(default: the whole compute group)')
    cmd.add_facts_source(parser, verb='export for')
    parser.add_argument('--nova-conf', metavar='BASE',
                        help='the nova.conf the drop-ins add to: its '
                             'multi-valued options are checked against '
                             'the export\'s')


def run(args):
    from kvmtune import export
    from kvmtune import facts as host_facts
    from kvmtune import plan as plans
    from kvmtune import profiles

    export.module(args.target)      # an unknown target before any work
    dirs = profiles.configured_dirs(args.config_file)
    profile = profiles.load(args.profile, dirs)
    facts = host_facts.resolve(root=args.root, facts_file=args.facts)
    plan = plans.build_plan(profile, facts)
    plans.refuse_withheld(plan)     # values withheld for safety: exit 2
    result = export.export(args.target, plan, facts, args.output,
                           host=args.host, base_path=args.nova_conf)
    for path, status in result.files:
        print(f'{status:9} {path}')
    for note in result.notes:
        print(f'note: {note}')
    changed = sum(1 for _, status in result.files if status != 'unchanged')
    print(f'{args.target}: {changed} file(s) written, '
          f'{len(result.files) - changed} unchanged', file=sys.stderr)
    return 0
