"""python -m kvmtune.devstack PHASE: the steps devstack/plugin.sh runs.

    --state-dir DIR post-config --nova-conf PATH --profiles "A B"
        [--modprobe-dir DIR] [--hugepages plan|"NODE:SIZE:COUNT ..."]
        [--nova-python PYTHON]
    --state-dir DIR extra --os-cloud C --profiles "A B" --base-flavor F
        [--compute-only] [--tag-host] [--build-image] --image-dir DIR
        --image-name NAME
    --state-dir DIR test-config --tempest-config PATH
    --state-dir DIR unstack --os-cloud C
    --state-dir DIR clean [--nova-cpu-conf PATH]
"""

import argparse
from collections.abc import Sequence
import sys
from typing import Any
from typing import TYPE_CHECKING

from kvmtune.errors import InputError
from kvmtune.errors import KvmtuneError
from kvmtune import image

if TYPE_CHECKING:
    from kvmtune.tuning.plan import PlanDict


def build_parser() -> argparse.ArgumentParser:
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
    post.add_argument('--hugepages', metavar='POOLS',
                      help='Set huge page pools: "plan" (the profiles\' '
                           'per-node pools) or NODE:SIZE:COUNT items.')
    post.add_argument('--nova-python',
                      help='A Python that imports nova, to check values.')

    extra = phases.add_parser('extra')
    extra.add_argument('--os-cloud', required=True)
    extra.add_argument('--profiles', required=True, type=str.split)
    extra.add_argument('--base-flavor', required=True)
    extra.add_argument('--compute-only', action='store_true',
                       help='A subnode: no flavors and no image (the '
                            'controller makes them).')
    extra.add_argument('--tag-host', action='store_true')
    extra.add_argument('--build-image', action='store_true')
    extra.add_argument('--image-dir', default='/var/lib/kvmtune/images')
    extra.add_argument('--image-name', default=image.GLANCE_NAME)

    tempest = phases.add_parser('test-config')
    tempest.add_argument('--tempest-config', required=True)

    unstack = phases.add_parser('unstack')
    unstack.add_argument('--os-cloud', required=True)

    clean = phases.add_parser('clean')
    clean.add_argument('--nova-cpu-conf',
                       help='nova-cpu.conf, copied from nova.conf after '
                            'post-config: undone there too.')
    return parser


def run(args: argparse.Namespace) -> int:
    from kvmtune.devstack import changes as changes_mod
    from kvmtune.devstack import postconfig
    from kvmtune.devstack import resources
    from kvmtune.devstack import tempest

    changes = changes_mod.Changes(args.state_dir)
    if args.phase == 'post-config':
        plans = postconfig.build_plans(args.profiles)
        postconfig.post_config(changes, args.nova_conf, plans,
                               modprobe_dir=args.modprobe_dir,
                               hugepages=_pools(args.hugepages, plans),
                               nova_python=args.nova_python or None)
    elif args.phase == 'extra':
        if args.compute_only and not args.tag_host:
            print('kvmtune: compute-only node: flavors and the image are '
                  'made on the controller; nothing to do here')
            return 0
        found = resources.extra(changes, args.os_cloud, args.profiles,
                                args.base_flavor, args.tag_host,
                                args.build_image, args.image_dir,
                                args.image_name,
                                compute_only=args.compute_only)
        tempest.save_found(args.state_dir, found)
    elif args.phase == 'test-config':
        found = tempest.load_found(args.state_dir)
        postconfig.set_options(changes, 'tempest_conf', args.tempest_config,
                               'kvmtune', tempest.options(found))
    elif args.phase == 'unstack':
        resources.unstack(changes, args.os_cloud)
    elif args.phase == 'clean':
        postconfig.clean(changes, also=[args.nova_cpu_conf])
        tempest.remove_found(args.state_dir)
        left = sorted(k for k in changes.data if k != 'schema')
        if left:
            print(f'kvmtune: still recorded (run unstack first): '
                  f'{", ".join(left)}')
    return 0


def _pools(text: str | None,
           plans: Sequence['PlanDict']) -> list[Any] | None:
    from kvmtune.devstack import postconfig
    from kvmtune.tuning import pages

    if text is None:
        return None
    if text.strip() == 'plan':
        return postconfig.plan_pools(plans)
    try:
        return [pages.parse_pool(item) for item in text.split()]
    except ValueError as exc:
        raise InputError(str(exc), source='KVMTUNE_HUGEPAGES',
                         fix='give NODE:SIZE:COUNT items, e.g. '
                             '"0:2M:256 1:2M:256", or "plan"') from None


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except KvmtuneError as exc:
        print(f'kvmtune: error: {exc.line()}', file=sys.stderr)
        return exc.exit_code


if __name__ == '__main__':
    sys.exit(main())
