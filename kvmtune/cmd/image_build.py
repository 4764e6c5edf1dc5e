"""Build the benchmark guest image from Debian packages.

Downloads (into a cache beside the image, reused by the next build) the
Debian kernel, busybox-static and fio (with --with-net also iperf3 and
sockperf), plus every library they load, and writes into the image
directory ($KVMTUNE_IMAGE_DIR, default /var/lib/kvmtune/images; the cache
is $KVMTUNE_IMAGE_CACHE, default <image directory>/cache):

  vmlinuz, initrd.img         for direct kernel boot
  kvmtune-bench.raw           BIOS-bootable disk (syslinux, MBR, vfat)
  kvmtune-bench.qcow2         the same, compressed qcow2 (for Glance)
  kvmtune-bench.json          what went in, sizes

The guest reads its job from a config drive or the kernel command line,
runs it against the disk or peer the job names and prints the framed
result on the serial console (doc/design.md section 6). Needs apt, and
dosfstools, mtools, syslinux, syslinux-common, qemu-utils on the host; no
root mounts. A second build with the same packages changes nothing.

By default fio is compiled static from Debian's fio source package (gcc,
make, dpkg-dev needed; the binary is cached): the image compresses to
~17 MB xz, ~18 MB with --with-net (measured 2026-11-22; Debian's
sysbench and the libraries it links are ~6 MB of that). --no-static-fio
ships Debian's fio binary with the ~60 libraries it links instead (~22 MB
more).
"""

import argparse

from kvmtune import image

_BUILT = (f'image built: {image.KERNEL}, {image.INITRD}, {image.RAW}, '
          f'{image.QCOW2}')


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('-o', '--output', metavar='DIR',
                        help='Image directory (default $KVMTUNE_IMAGE_DIR '
                             'or /var/lib/kvmtune/images).')
    parser.add_argument('--with-net', action='store_true',
                        help='Add iperf3, sockperf and virtio-net for the '
                             'network workloads.')
    parser.add_argument('--nested', action='store_true',
                        help='Also build the nested (level-1) image in '
                             '<image directory>/nested: the KVM modules, '
                             'QEMU from Debian and the benchmark image as '
                             'its own guest (L2); booted from its disk it '
                             'runs the job in L2 (kvmtune bench nested).')
    parser.add_argument('--static-fio', action=argparse.BooleanOptionalAction,
                        default=True,
                        help='Compile fio static from Debian\'s fio source '
                             'package (default) rather than ship Debian\'s '
                             'fio with its ~60 libraries: ~22 MB less '
                             'compressed. Needs gcc, make, '
                             'dpkg-dev.')


def _mb(n: float | None) -> str:
    return f'{n / 1e6:.1f} MB' if n is not None else 'n/a'


def run(args: argparse.Namespace) -> int | None:
    from kvmtune.errors import InputError
    from kvmtune.image import build

    if args.nested and args.with_net:
        raise InputError('the nested image has no network tools',
                         key='--with-net', fix='build it without '
                         '--with-net (its workloads are disk and CPU)')
    if args.nested:
        return _nested(args)
    manifest = build.build(args.output, with_net=args.with_net,
                           static_fio=args.static_fio)
    print(_sizes(manifest['sizes']))
    if manifest['changed']:
        print(_BUILT)
    return 0


def _sizes(sizes: dict[str, int]) -> str:
    """The image's files by size, as a build prints them."""
    return (f'kernel {_mb(sizes[image.KERNEL])}, initrd '
            f'{_mb(sizes[image.INITRD])}, raw {_mb(sizes[image.RAW])}, '
            f'qcow2 {_mb(sizes[image.QCOW2])}')


def _nested(args: argparse.Namespace) -> int:
    from kvmtune.image import nested

    manifest = nested.build_nested(args.output, static_fio=args.static_fio)
    out = nested.image_dir(args.output)
    print(f'nested image in {out}: {_sizes(manifest["sizes"])}')
    print(f'tools: {" ".join(manifest["tools"])}; L2 guest: '
          f'{manifest["l2_image"]} ({image.KERNEL}, {image.INITRD})')
    if manifest['changed']:
        print(_BUILT)
    return 0
