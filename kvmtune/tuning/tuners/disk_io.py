"""Guest disks on raw block storage, without the host page cache.

Seed 003 brought KVM's disk I/O level with Hyper-V by putting disks on LVM
volumes (not qcow2 files), ``cache=none``, virtio-blk and an I/O thread;
seed 001 compares raw files with LVM under KVM and Xen. In Nova these are
``[libvirt] images_type`` (+ ``images_volume_group`` for lvm),
``[libvirt] disk_cachemodes``, ``[DEFAULT] use_cow_images`` and
``preallocate_images``. Unset parameters leave Nova's own value.
"""

from typing import Any

from kvmtune.errors import InputError
from kvmtune.tuning.tuners import base

CACHE_MODES = ('default', 'none', 'writethrough', 'writeback',
               'directsync', 'unsafe')
DISK_TYPES = ('file', 'block', 'network', 'mount')


class DiskIo(base.Tuner):
    name = 'disk_io'
    description = 'Raw/LVM images, cache=none, no copy-on-write.'

    PARAMS = (
        base.Param('images_type',
                   choices=('raw', 'flat', 'qcow2', 'lvm', 'rbd', 'ploop',
                            'default'),
                   help='[libvirt] images_type; lvm needs '
                        'images_volume_group'),
        base.Param('images_volume_group',
                   help='[libvirt] images_volume_group, the LVM volume '
                        'group for images_type lvm'),
        base.Param('cache_modes', type=list,
                   default=['file=none', 'block=none'],
                   item_pattern=rf'({"|".join(DISK_TYPES)})='
                                rf'({"|".join(CACHE_MODES)})',
                   help='[libvirt] disk_cachemodes items, '
                        'e.g. [file=none, block=none]'),
        base.Param('use_cow_images', type=bool,
                   help='[DEFAULT] use_cow_images (false: full copies, no '
                        'qcow2 backing chains)'),
        base.Param('preallocate_images', choices=('none', 'space'),
                   help='[DEFAULT] preallocate_images: space allocates '
                        'the whole disk at boot'),
    )

    NOVA_CONF = {
        ('libvirt', 'images_type'): '{images_type}',
        ('libvirt', 'images_volume_group'): '{images_volume_group}',
        ('libvirt', 'disk_cachemodes'): base.FromHost('cachemodes'),
        ('DEFAULT', 'use_cow_images'): '{use_cow_images}',
        ('DEFAULT', 'preallocate_images'): '{preallocate_images}',
    }
    NOTES = (
        'virtio-blk is the image property hw_disk_bus=virtio (Nova has no '
        'flavor extra spec for the disk bus); Nova already picks virtio for '
        'KVM/QEMU disks when the image sets no bus.',
    )

    def notes(self) -> list[str]:
        # Nova 33 gives every libvirt guest one I/O thread
        # (LibvirtDriver._get_guest_iothread, nova/virt/libvirt/driver.py);
        # earlier releases have no way to ask for one.
        release = self.nova_release()
        if release.has_feature('libvirt_guest_iothread'):
            iothread = (f'{release.label} already gives every libvirt '
                        'guest one I/O thread, pinned with the emulator '
                        'threads: seed 003\'s iothread step is the default '
                        'now.')
        else:
            iothread = (f'{release.label} gives libvirt guests no I/O '
                        'thread and has no setting for one (Nova 33 is the '
                        'first that does): seed 003\'s iothread step is '
                        'unavailable there.')
        return super().notes() + [iothread]

    @classmethod
    def parse_params(cls, given: Any,
                     source: str | None = None) -> dict[str, Any]:
        values = super().parse_params(given, source)
        if values['images_type'] == 'lvm' and not values[
                'images_volume_group']:
            raise InputError('images_type lvm needs images_volume_group',
                             source=source,
                             key=f'{cls.name}.params.images_volume_group',
                             fix='name the LVM volume group for guest disks')
        return values

    @base.check('cache-modes')
    def _cache_modes(self) -> base.CheckOutcome:
        modes = dict(item.split('=') for item in self.params['cache_modes'])
        if not modes:
            return None
        risky = sorted(t for t, mode in modes.items() if mode == 'unsafe')
        if risky:
            return (base.WARN, f'cache=unsafe for {", ".join(risky)} disks '
                    'ignores guest flushes: a host crash loses guest data',
                    'use none (O_DIRECT, as seed 003 does) or directsync')
        direct = sorted(t for t, mode in modes.items()
                        if mode in ('none', 'directsync'))
        cached = sorted(set(modes) - set(direct))
        return (base.PASS, 'host page cache bypassed (O_DIRECT) for '
                f'{", ".join(direct) or "no"} disks'
                + (f', used for {", ".join(cached)}' if cached else ''),
                None)

    def cachemodes(self) -> str | None:
        return ','.join(self.params['cache_modes']) or None
