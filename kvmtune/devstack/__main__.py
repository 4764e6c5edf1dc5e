"""python -m kvmtune.devstack PHASE: the steps devstack/plugin.sh runs.

    --state-dir DIR post-config --nova-conf PATH --profiles "A B"
        [--modprobe-dir DIR] [--hugepages-2m N --sysctl-dir DIR
         --proc-sys-vm DIR]
    --state-dir DIR extra --os-cloud C --profiles "A B" --base-flavor F
        [--tag-host] [--build-image] --image-dir DIR --image-name NAME
    --state-dir DIR tempest-options --record | --recorded-names
    --state-dir DIR unstack --os-cloud C
    --state-dir DIR clean
"""

import argparse
import sys

from kvmtune.errors import KvmtuneError


def build_parser():
    parser = argparse.ArgumentParser(prog='python -m kvmtune.devstack',
                                     description=__doc__.split('\n')[0])
    parser.add_argument('--state-dir', required=True,
                        help='Where changes.json and found.json live.')
    phases = parser.add_subparsers(dest='phase', required=True)

    post = phases.add_parser('post-config')
    post.add_argument('--nova-conf', required=True)
    post.add_argument('--profiles', required=True, type=str.split)
    post.add_argument('--modprobe-dir',
                      help='Write the plans\' modprobe files here.')
    post.add_argument('--hugepages-2m', type=int,
                      help='Reserve this many 2 MB pages.')
    post.add_argument('--sysctl-dir', default='/etc/sysctl.d')
    post.add_argument('--proc-sys-vm', default='/proc/sys/vm')

    extra = phases.add_parser('extra')
    extra.add_argument('--os-cloud', required=True)
    extra.add_argument('--profiles', required=True, type=str.split)
    extra.add_argument('--base-flavor', required=True)
    extra.add_argument('--tag-host', action='store_true')
    extra.add_argument('--build-image', action='store_true')
    extra.add_argument('--image-dir', default='/var/lib/kvmtune/images')
    extra.add_argument('--image-name', default='kvmtune-bench')

    tempest = phases.add_parser('tempest-options')
    which = tempest.add_mutually_exclusive_group(required=True)
    which.add_argument('--record', action='store_true',
                       help='Print "option value" lines; remember names.')
    which.add_argument('--recorded-names', action='store_true',
                       help='Print the names written earlier.')

    unstack = phases.add_parser('unstack')
    unstack.add_argument('--os-cloud', required=True)

    phases.add_parser('clean')
    return parser


def run(args):
    from kvmtune.devstack import changes as changes_mod
    from kvmtune.devstack import cloud
    from kvmtune.devstack import host
    from kvmtune.devstack import tempest

    changes = changes_mod.Changes(args.state_dir)
    if args.phase == 'post-config':
        host.post_config(changes, args.nova_conf, args.profiles,
                         modprobe_dir=args.modprobe_dir,
                         hugepages_2m=args.hugepages_2m,
                         sysctl_dir=args.sysctl_dir,
                         proc_sys_vm=args.proc_sys_vm)
    elif args.phase == 'extra':
        found = cloud.extra(changes, args.os_cloud, args.profiles,
                            args.base_flavor, args.tag_host,
                            args.build_image, args.image_dir,
                            args.image_name)
        tempest.save_found(args.state_dir, found)
    elif args.phase == 'tempest-options':
        if args.record:
            lines = tempest.options(tempest.load_found(args.state_dir))
            names = changes.data.setdefault('tempest_options', [])
            names.extend(n for n, _ in lines if n not in names)
            changes.save()
            for name, value in lines:
                print(f'{name} {value}')
        else:
            print('\n'.join(changes.data.get('tempest_options', [])))
    elif args.phase == 'unstack':
        cloud.unstack(changes, args.os_cloud)
    elif args.phase == 'clean':
        host.clean(changes)
        # plugin.sh has inidelete'd the tempest options before calling us.
        changes.drop('tempest_options')
        changes.save()
        tempest.remove_found(args.state_dir)
        left = sorted(k for k in changes.data if k != 'schema')
        if left:
            print(f'kvmtune: still recorded (run unstack first): '
                  f'{", ".join(left)}')
    return 0


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except KvmtuneError as exc:
        print(f'kvmtune: error: {exc.line()}', file=sys.stderr)
        return exc.exit_code


if __name__ == '__main__':
    sys.exit(main())
