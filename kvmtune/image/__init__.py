"""The benchmark guest image: a Debian kernel, a busybox initramfs, the
benchmark tools, all from Debian packages, on a BIOS-bootable disk.

Files in the image directory (``$KVMTUNE_IMAGE_DIR``, default
``/var/lib/kvmtune/images``, see doc/design.md section 7)::

    vmlinuz  initrd.img  kvmtune-bench.raw  kvmtune-bench.qcow2
    kvmtune-bench.json     what was built from which packages
    cache/debs/            downloaded .debs, reused by the next build
"""

import os

DEFAULT_IMAGE_DIR = '/var/lib/kvmtune/images'
RAW = 'kvmtune-bench.raw'
QCOW2 = 'kvmtune-bench.qcow2'
KERNEL = 'vmlinuz'
INITRD = 'initrd.img'
MANIFEST = 'kvmtune-bench.json'
# The image's name in Glance (the main job, the DevStack plugin).
GLANCE_NAME = 'kvmtune-bench'
# The vfat label of the image's one partition; the guest init finds the
# tools there (see init.sh).
TOOLS_LABEL = 'KVMTUNE'


def image_dir(override: str | None = None) -> str:
    """The directory images are built into and read from."""
    return (override or os.environ.get('KVMTUNE_IMAGE_DIR')
            or DEFAULT_IMAGE_DIR)
