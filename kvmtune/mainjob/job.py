"""The main job's options and its steps in order (main): the local test
cloud or an operator's (--os-cloud), the image, the default and the tuned
flavor, the compute, the Rally sweep and `kvmtune report`."""
import argparse
import os
import sys

from kvmtune import mainjob
from kvmtune.errors import KvmtuneError
from kvmtune.mainjob import cloud
from kvmtune.mainjob import compute
from kvmtune.mainjob import rally
from kvmtune.mainjob import steps


def parse_args(argv):
    p = argparse.ArgumentParser(prog='tools/main-job',
                                description=mainjob.__doc__.split('\n\n')[0])
    p.add_argument('--os-cloud', metavar='CLOUD',
                   help='Use this cloud (clouds.yaml, admin) instead of '
                        'bringing up the local test cloud; nothing on this '
                        'host is changed.')
    p.add_argument('--compute-facts', metavar='FILE',
                   help='With --os-cloud: facts of the cloud\'s compute '
                        '(kvmtune host inspect --format json there); the '
                        'job then picks the tuned profile from them and '
                        'tags that compute.')
    p.add_argument('--max-vms', type=int, default=3,
                   help='Largest VM count of the sweep (default 3).')
    p.add_argument('--workload', default='fio-randread-4k')
    p.add_argument('--runtime', type=int, metavar='SECONDS',
                   help='Seconds each workload runs in the guests (the '
                        'task\'s default: 10).')
    p.add_argument('--baseline', metavar='FILE',
                   help='Bare-metal result from kvmtune baseline.')
    p.add_argument('--emulated', action='store_true',
                   help='The cloud runs guests under QEMU without KVM (TCG):'
                        ' label the results emulated (known by itself for '
                        'the local test cloud).')
    p.add_argument('--tuned-profile', metavar='NAME',
                   help='The tuned profile (default: pinned-hugepages-ept '
                        'when the compute has EPT/NPT, else '
                        'pinned-hugepages).')
    p.add_argument('--state-dir', default=mainjob.STATE_DIR,
                   help='Rally DB and results (default '
                        f'{mainjob.STATE_DIR}).')
    args = p.parse_args(argv)
    if args.compute_facts and not args.os_cloud:
        p.error('--compute-facts goes with --os-cloud (the local test '
                'cloud\'s compute is this host)')
    return args


def prepare_local(args, kvmtune, this_facts):
    """Local test cloud: up, and its compute (this host) decided."""
    ram_mb = mainjob.BASE_FLAVOR['ram']
    # Decide before starting anything: a profile this host cannot serve
    # (a trait host tag will not set, a page size) stops here.
    compute.local_setup(this_facts, kvmtune, None, None, args.max_vms,
                        ram_mb, args.tuned_profile)
    cloud_name = cloud.local_cloud()
    nova_conf = cloud.cloud_env()['KVMTUNE_NOVA_CONF']
    nova_python = (mainjob.CLOUD_PYTHON
                   if os.path.exists(mainjob.CLOUD_PYTHON) else None)
    setup = compute.local_setup(
        this_facts, kvmtune, cloud_name, nova_conf, args.max_vms, ram_mb,
        args.tuned_profile, nova_python)
    steps.say(f'tuned profile {setup.profile}: {setup.why}')
    return cloud_name, setup


def prepare_remote(args, kvmtune, this_facts, conn):
    """An operator's cloud: the tuned profile and what to tell."""
    setup = compute.remote_setup(
        args.os_cloud, this_facts, cloud.compute_node_names(conn), kvmtune,
        args.max_vms, mainjob.BASE_FLAVOR['ram'], args.compute_facts,
        args.tuned_profile)
    steps.say(f'compute facts: {setup.source}')
    steps.say(f'tuned profile {setup.profile}: {setup.why}')
    return setup


def main(argv=None):
    args = parse_args(argv)
    kvmtune = steps.bin_path('kvmtune')
    base = mainjob.BASE_FLAVOR['name']
    try:
        os.makedirs(args.state_dir, exist_ok=True)
        steps.run([kvmtune, 'image', 'build'])
        from kvmtune import facts
        import openstack

        this_facts = facts.gather()
        if args.os_cloud:
            cloud_name, emulated = args.os_cloud, args.emulated
            conn = openstack.connect(cloud=cloud_name)
            setup = prepare_remote(args, kvmtune, this_facts, conn)
            facts_args = setup.facts_args
        else:
            cloud_name, setup = prepare_local(args, kvmtune, this_facts)
            emulated = args.emulated or cloud.local_cloud_emulated()
            conn = openstack.connect(cloud=cloud_name)
            facts_args = []
        cloud.upload_image(conn)
        cloud.base_flavor(conn)
        flavors = []
        for profile in (mainjob.BASE_PROFILE, setup.profile):
            steps.run([kvmtune, 'flavor', 'apply', '--os-cloud', cloud_name,
                       '--profile', profile, '--from', base, *facts_args])
            flavors.append(f'{base}.{profile}')
        if args.os_cloud:
            for command in setup.commands:
                steps.run(command)
            if setup.facts is None:
                steps.say(f'host tag: skipped, {setup.source}; give '
                          '--compute-facts FILE, or run kvmtune host tag on '
                          'the computes')
            for line in compute.operator_steps(setup, cloud_name,
                                               args.max_vms,
                                               mainjob.BASE_FLAVOR['ram']):
                steps.say(line)
        else:
            compute.tune_local_compute(conn, setup)
            steps.run([kvmtune, 'host', 'inspect'])
            steps.run([kvmtune, 'plan', '--profile', setup.profile])
        runner = rally.Rally(args.state_dir)
        runner.use_cloud(f'kvmtune-{cloud_name}',
                         rally.rally_spec(conn.config))
        out_json = os.path.join(args.state_dir, 'disk-scaling.json')
        uuid, sla_ok = runner.sweep(
            mainjob.TASK,
            rally.task_args(args.max_vms, args.workload, flavors,
                            mainjob.IMAGE_NAME, args.baseline, emulated,
                            args.runtime),
            out_json, os.path.join(args.state_dir, 'disk-scaling.html'))
        report = [kvmtune, 'report', out_json,
                  '--png', os.path.join(args.state_dir, 'disk-scaling.png'),
                  '--html', os.path.join(args.state_dir,
                                         'disk-scaling-report.html')]
        if args.baseline:
            report += ['--baseline', args.baseline]
        steps.run(report)
    except KvmtuneError as exc:
        print(f'main-job: error: {exc.line()}', file=sys.stderr)
        return 2
    except Exception as exc:  # openstacksdk's own errors: one line too
        msg = ' '.join(f'{type(exc).__name__}: {exc}'.split())
        print(f'main-job: error: {msg}', file=sys.stderr)
        return 2
    steps.say(f'rally task {uuid}: SLA {"met" if sla_ok else "FAILED"}; '
              f'results in {args.state_dir}')
    return 0 if sla_ok else 1
