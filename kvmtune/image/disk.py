"""A BIOS-bootable raw disk built without mounts or root: one vfat
partition filled with mtools, syslinux installed into it with
``syslinux --install`` (the mtools flavour), an MBR written here.
"""

from collections.abc import Sequence
import os
import shutil
import struct
import subprocess

from kvmtune.errors import KvmtuneError

MBR_BIN = '/usr/lib/syslinux/mbr/mbr.bin'
PART_OFFSET = 1024 * 1024   # first partition at 1 MiB, sector 2048
SECTOR = 512
FAT16_LBA = 0x0E

SYSLINUX_CFG = """\
DEFAULT kvmtune
PROMPT 0
TIMEOUT 0
LABEL kvmtune
  LINUX /vmlinuz
  INITRD /initrd.img
  APPEND {cmdline}
"""
# quiet: kernel messages on the emulated UART cost seconds under TCG.
KERNEL_CMDLINE = 'console=ttyS0,115200 quiet panic=-1'

HOST_TOOLS = {
    'mkfs.vfat': 'dosfstools', 'mcopy': 'mtools', 'mmd': 'mtools',
    'syslinux': 'syslinux', 'qemu-img': 'qemu-utils',
}


def check_host_tools() -> None:
    for tool, package in HOST_TOOLS.items():
        if not shutil.which(tool):
            raise KvmtuneError(f'{tool} not found', fix=f'apt-get install '
                               f'{package}')
    if not os.path.exists(MBR_BIN):
        raise KvmtuneError(f'{MBR_BIN} not found',
                           fix='apt-get install syslinux-common')


def _run(*argv: str) -> None:
    env = dict(os.environ, MTOOLS_SKIP_CHECK='1')
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    if proc.returncode:
        raise KvmtuneError(f'{" ".join(argv)} failed: '
                           f'{" ".join(proc.stderr.split())}')


def make_fat(path: str, files: Sequence[tuple[str, str]], label: str) -> None:
    """A FAT16 filesystem image holding ``files`` plus syslinux.

    :param files: [(host path, path inside the FAT)], parents first
        created; copied straight from the extracted packages by mtools.
    """
    total = sum(os.path.getsize(src) for src, _ in files)
    # Room for FAT overhead, 2 KiB clusters and ldlinux.*; a FAT16 floor.
    size_kb = max(32 * 1024, (total * 23 // 20) // 1024 + 4096)
    _run('mkfs.vfat', '-F', '16', '-n', label, '-C', path, str(size_kb))
    dirs = sorted({os.path.dirname(dest) for _, dest in files} - {'/'})
    made = set()
    for d in dirs:
        parts = d.strip('/').split('/')
        for depth in range(1, len(parts) + 1):
            sub = '/'.join(parts[:depth])
            if sub not in made:
                _run('mmd', '-i', path, f'::/{sub}')
                made.add(sub)
    for src, dest in files:
        _run('mcopy', '-i', path, src, f'::{dest}')
    _run('syslinux', '--install', path)


def make_raw(path: str, fat_image: str) -> None:
    """MBR (syslinux mbr.bin + one bootable partition) then the FAT."""
    fat_size = os.path.getsize(fat_image)
    with open(MBR_BIN, 'rb') as f:
        boot_code = f.read(440)
    entry = struct.pack('<B3sB3sII', 0x80, b'\xfe\xff\xff', FAT16_LBA,
                        b'\xfe\xff\xff', PART_OFFSET // SECTOR,
                        fat_size // SECTOR)
    mbr = boot_code.ljust(446, b'\0') + entry + b'\0' * 48 + b'\x55\xaa'
    with open(path, 'wb') as out, open(fat_image, 'rb') as fat:
        out.write(mbr)
        out.seek(PART_OFFSET)
        shutil.copyfileobj(fat, out, 1024 * 1024)


def make_qcow2(raw: str, path: str) -> None:
    """Compressed qcow2 (what Glance gets)."""
    _run('qemu-img', 'convert', '-c', '-f', 'raw', '-O', 'qcow2', raw, path)
