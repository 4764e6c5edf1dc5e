"""Kernel modules for the guest, in load order.

The Debian kernel package ships no modules.dep; each module's ``depends=``
field in its ``.modinfo`` ELF section says what must be loaded first.
"""

from collections.abc import Iterable
import os
import struct

from kvmtune.errors import KvmtuneError

# What the guest needs; their dependencies are added by closure.
#  disks: virtio-blk on virtio-pci; config drive: ISO9660 or vfat on an
#  IDE/SATA CD-ROM; vfat mounts fail without nls_ascii; network: virtio-net;
#  cpuid: the guest reads the hypervisor's CPUID signature through
#  /dev/cpu/0/cpuid to tell QEMU's TCG from KVM (init.sh, guestlib.sh).
#  virtio_scsi + sd_mod: a data disk on virtio-scsi (kvmtune bench local
#  --compare bus=virtio-blk,virtio-scsi) is /dev/sda.
WANTED = (
    'virtio_pci', 'virtio_blk', 'virtio_scsi', 'sd_mod', 'virtio_net',
    'cpuid',
    'isofs', 'vfat', 'nls_cp437', 'nls_ascii', 'nls_iso8859-1', 'nls_utf8',
    'sr_mod', 'ata_piix', 'ahci',
)


def modinfo(path: str) -> dict[str, list[str]]:
    """Return the ``.modinfo`` section of a .ko as a dict of lists."""
    with open(path, 'rb') as f:
        data = f.read()
    if data[:4] != b'\x7fELF' or data[4] != 2:
        raise KvmtuneError('not a 64-bit ELF kernel module', source=path)
    shoff, = struct.unpack_from('<Q', data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', data, 0x3A)

    def section(index: int) -> tuple[int, bytes]:
        # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size
        name, _, _, _, off, size = struct.unpack_from(
            '<IIQQQQ', data, shoff + index * shentsize)
        return name, data[off:off + size]

    _, names = section(shstrndx)
    for index in range(shnum):
        name_off, body = section(index)
        name = names[name_off:names.index(b'\0', name_off)]
        if name == b'.modinfo':
            info: dict[str, list[str]] = {}
            for entry in body.split(b'\0'):
                key, sep, value = entry.decode('utf-8', 'replace').partition(
                    '=')
                if sep:
                    info.setdefault(key, []).append(value)
            return info
    raise KvmtuneError('no .modinfo section', source=path)


def index(modules_root: str) -> dict[str, str]:
    """Map module name (with underscores) to its .ko path."""
    found = {}
    for dirpath, _, files in os.walk(modules_root):
        for name in files:
            if name.endswith('.ko'):
                found[name[:-3].replace('-', '_')] = os.path.join(
                    dirpath, name)
    return found


def load_order(modules_root: str, wanted: Iterable[str] = WANTED,
               builtin: Iterable[str] = ()) -> list[str]:
    """Paths of ``wanted`` and their dependencies, dependencies first.

    :param builtin: module names built into the kernel (modules.builtin),
        which need no loading.
    """
    available = index(modules_root)
    built_in = {b.replace('-', '_') for b in builtin}
    ordered: list[str] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        name = name.replace('-', '_')
        if name in built_in or available.get(name) in ordered:
            return
        if name not in available:
            raise KvmtuneError(f'kernel module {name} not found',
                               source=modules_root,
                               fix='use a Debian linux-image-*-amd64 package')
        if name in visiting:
            raise KvmtuneError(f'module dependency cycle at {name}',
                               source=modules_root)
        visiting.add(name)
        for dep in modinfo(available[name]).get('depends', ['']):
            for d in filter(None, dep.split(',')):
                visit(d)
        visiting.discard(name)
        ordered.append(available[name])

    for name in wanted:
        visit(name)
    return ordered


def builtin_names(modules_dir: str) -> set[str]:
    """Module names listed in ``modules.builtin`` (kernel/.../name.ko)."""
    path = os.path.join(modules_dir, 'modules.builtin')
    if not os.path.exists(path):
        return set()
    with open(path) as f:
        return {os.path.basename(line.strip())[:-3] for line in f
                if line.strip().endswith('.ko')}
