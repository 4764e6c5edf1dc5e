"""Whether a baseline may use a disk target: never destroy data unasked."""

import os
import stat

# (offset, magic) of partition tables and filesystems a device may hold.
SIGNATURES = (
    (510, b'\x55\xaa', 'an MBR partition table'),
    (512, b'EFI PART', 'a GPT partition table'),
    (1080, b'\x53\xef', 'an ext2/3/4 filesystem'),
    (0, b'XFSB', 'an XFS filesystem'),
    (65600, b'_BHRfS_M', 'a btrfs filesystem'),
    (4086, b'SWAPSPACE2', 'swap'),
    (536, b'LVM2 001', 'an LVM physical volume'),
    (32769, b'CD001', 'an ISO 9660 filesystem'),
    (0, b'QFI\xfb', 'a qcow2 image'),
)


def signature(path: str) -> str | None:
    """What ``path`` starts with, e.g. 'an ext2/3/4 filesystem', or None."""
    with open(path, 'rb') as f:
        head = f.read(65608)
    for offset, magic, what in SIGNATURES:
        if head[offset:offset + len(magic)] == magic:
            return what
    return None


def refusal(path: str, writes: bool) -> str | None:
    """Why ``path`` must not be benchmarked without --destroy-data, or None.

    A write workload may not touch a block device or a file holding data;
    a read workload (fio --readonly) may read anything.
    """
    if not writes or not os.path.exists(path):
        return None
    mode = os.stat(path).st_mode
    if stat.S_ISBLK(mode):
        what = signature(path)
        return (f'a block device holding {what}' if what else
                'a block device (its data would be overwritten)')
    if stat.S_ISREG(mode) and os.path.getsize(path) > 0:
        return 'a file holding data'
    if not stat.S_ISREG(mode):
        return 'neither a file nor a block device'
    return None
