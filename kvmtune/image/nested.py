"""The nested (level-1) image: a benchmark guest that runs its own guest.

``kvmtune image build --nested`` writes, beside the benchmark image (the
L2 guest, built or reused first), a directory ``nested/`` holding the same
files and names (vmlinuz, initrd.img, kvmtune-bench.raw/.qcow2/.json), so
``kvmtune bench local``, Glance and Nova take it like the benchmark image:

- the same Debian kernel; its initrd adds the KVM modules (kvm, kvm_amd,
  kvm_intel and what they depend on, loaded by the guest with nested=1)
  and nested.sh (the level-1 part of init.sh);
- on the tools disk: fio and sysbench as in the benchmark image,
  qemu-system-x86_64 with every library it loads from Debian's
  qemu-system-x86 package and its closure, the firmware a direct kernel
  boot needs (SeaBIOS, the linuxboot and kvmvapic option ROMs), and the
  benchmark image's vmlinuz and initrd.img under /kvmtune/l2;
- a boot line with ``kvmtune.level=2``: booted from its disk (Nova) the
  guest runs the job in L2. bench local boots the kernel directly and
  chooses the level (1: the job in this guest, like the benchmark image).
"""

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Sequence
import fcntl
import hashlib
import os
from typing import Any

from kvmtune.errors import KvmtuneError
from kvmtune import image
from kvmtune.image import build
from kvmtune.image import cpio
from kvmtune.image import debs
from kvmtune.image import disk
from kvmtune.image import fio_static
from kvmtune.image import modules

LAYOUT = 1
SUBDIR = 'nested'
QEMU_PACKAGE = 'qemu-system-x86'
QEMU_BINARY = 'qemu-system-x86_64'
# What QEMU reads for `-machine pc -kernel ... -nodefaults` (its pc-bios
# files, installed by the seabios and qemu-system-data packages).
FIRMWARE = ('bios-256k.bin', 'linuxboot_dma.bin', 'kvmvapic.bin')
# Where the packages put them (seabios ships bios-256k.bin in its own
# directory; the link in usr/share/qemu is made at install time).
FIRMWARE_DIRS = ('usr/share/qemu', 'usr/share/seabios')
# Each vendor module with what it depends on, loaded in this order by
# nested.sh (lib/modules/kvm/<module>.order).
KVM_MODULES = ('kvm_amd', 'kvm_intel')
LEVEL_ARG = 'kvmtune.level=2'
KERNEL_CMDLINE = f'{disk.KERNEL_CMDLINE} {LEVEL_ARG}'
HERE = os.path.dirname(__file__)


def image_dir(base: str | None = None) -> str:
    """Where the nested image is: ``<benchmark image dir>/nested``."""
    return os.path.join(image.image_dir(base), SUBDIR)


def _kvm_files(archive: cpio.Archive, modules_dir: str,
               builtin: Iterable[str]) -> None:
    """The KVM modules and their load orders, apart from load.order (the
    benchmark guest's, loaded at boot): nested.sh loads the one vendor
    module the CPU has, with nested=1."""
    archive.add_dir('lib/modules/kvm')
    archive.add_file('etc/kvmtune/nested.sh', build._data('nested.sh'))
    added: set[str] = set()
    for vendor in KVM_MODULES:
        ordered = modules.load_order(modules_dir, (vendor,), builtin)
        names = [os.path.basename(path) for path in ordered]
        for path in ordered:
            if path not in added:
                with open(path, 'rb') as f:
                    archive.add_file(
                        f'lib/modules/kvm/{os.path.basename(path)}',
                        f.read())
                added.add(path)
        archive.add_file(f'lib/modules/kvm/{vendor}.order',
                         ('\n'.join(names) + '\n').encode())


def _firmware(root: str) -> list[tuple[str, str]]:
    """[(path in root, path on the image)] for QEMU's firmware files."""
    found = []
    for name in FIRMWARE:
        paths = [_resolve(root, os.path.join(root, d, name))
                 for d in FIRMWARE_DIRS]
        paths = [p for p in paths if os.path.isfile(p)]
        if not paths:
            raise KvmtuneError(f'{name} not in the fetched packages',
                               source=os.path.join(root, 'usr/share'),
                               fix='apt-get update, then retry')
        found.append((paths[0], f'/kvmtune/qemu/{name}'))
    return found


def _resolve(root: str, path: str) -> str:
    """``path`` with its absolute symlinks resolved inside ``root``."""
    for _ in range(16):
        if not os.path.islink(path):
            return path
        target = os.readlink(path)
        path = (os.path.join(root, target.lstrip('/'))
                if os.path.isabs(target)
                else os.path.normpath(os.path.join(os.path.dirname(path),
                                                   target)))
    raise KvmtuneError('symlink loop', source=path)


def _fingerprint(deb_paths: Sequence[str],
                 base_manifest: dict[str, Any]) -> str:
    h = hashlib.sha256(f'nested layout={LAYOUT} base={build.LAYOUT}\n'
                       .encode())
    for path in deb_paths:
        h.update(os.path.basename(path).encode() + b'\n')
    h.update(base_manifest.get('fingerprint', '').encode())
    for name in ('init.sh', 'guestlib.sh', 'nested.sh', 'udhcpc.script'):
        h.update(build._data(name))
    h.update(KERNEL_CMDLINE.encode())
    h.update(' '.join(modules.WANTED + KVM_MODULES).encode())
    return h.hexdigest()


def build_nested(base_dir: str | None = None, static_fio: bool = True,
                 log: Callable[[str], object] = print) -> dict[str, Any]:
    """Build (or find up to date) the nested image; return its manifest.

    The benchmark image (the L2 guest) is built or reused first, in
    ``base_dir`` (``image.image_dir``); the nested one goes to
    ``<base_dir>/nested``.
    """
    base_dir = image.image_dir(base_dir)
    base = build.build(base_dir, static_fio=static_fio, log=log)
    out = os.path.join(base_dir, SUBDIR)
    os.makedirs(out, exist_ok=True)
    lock = open(os.path.join(out, '.build.lock'), 'w')
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise KvmtuneError('another nested image build is running',
                           source=out, fix='wait for it to finish')
    with lock:
        return _build_locked(base_dir, out, base, static_fio, log)


def _build_locked(base_dir: str, out: str, base: dict[str, Any],
                  static_fio: bool,
                  log: Callable[[str], object]) -> dict[str, Any]:
    cache = (os.environ.get('KVMTUNE_IMAGE_CACHE')
             or os.path.join(base_dir, 'cache'))
    tools = build.DISK_TOOLS + (QEMU_BINARY,)
    log(f'nested image: {QEMU_PACKAGE} and the benchmark tools (+ their '
        f'libraries), the KVM modules of {base["kernel_package"]}')
    extra = ('libaio-dev',) if static_fio else ()
    tool_debs, fetched = debs.fetch(
        os.path.join(cache, 'debs'),
        ('busybox-static',) + build.DISK_TOOLS + (QEMU_PACKAGE,) + extra)
    kernel_deb, _ = debs.fetch_kernel(os.path.join(cache, 'kernel'),
                                      base['kernel_package'])
    log(f'.debs: {len(tool_debs) - len(fetched)} reused from the cache, '
        f'{len(fetched)} downloaded')
    fingerprint = _fingerprint(tool_debs + [kernel_deb], base)
    manifest_path = os.path.join(out, image.MANIFEST)
    current = build._read_manifest(manifest_path)
    outputs = (image.KERNEL, image.INITRD, image.RAW, image.QCOW2)
    if (current.get('fingerprint') == fingerprint and
            all(os.path.exists(os.path.join(out, n)) for n in outputs)):
        log(f'nested image up to date in {out}: nothing rebuilt')
        current['changed'] = False
        return current
    return build.publish(
        out, outputs, manifest_path,
        lambda work: _build_in(work, cache, base_dir, tool_debs, kernel_deb,
                               tools, static_fio, log),
        dict(fingerprint=fingerprint, nested=True, static_fio=static_fio,
             with_net=False, kernel_package=base['kernel_package'],
             l2_image=base_dir,
             debs=[os.path.basename(p) for p in tool_debs + [kernel_deb]]))


def _build_in(work: str, cache: str, base_dir: str, tool_debs: list[str],
              kernel_deb: str, tools: Sequence[str], static_fio: bool,
              log: Callable[[str], object]) -> dict[str, Any]:
    root, kernel_root = build.unpack(work, tool_debs, kernel_deb)
    loaded = build._initrd(root, kernel_root,
                           os.path.join(work, image.INITRD), False,
                           extra=_kvm_files)
    log(f'initrd: {len(loaded)} modules at boot, KVM modules for '
        f'{" and ".join(KVM_MODULES)} with nested=1')
    cfg = os.path.join(work, 'syslinux.cfg')
    with open(cfg, 'w') as f:
        f.write(disk.SYSLINUX_CFG.format(cmdline=KERNEL_CMDLINE))
    static = None
    if static_fio:
        static = fio_static.build(cache, build._fio_version(tool_debs), root,
                                  work, log)
    files = build._tool_files(root, tools, static)
    log(f'tools: {" ".join(tools)} with {len(files) - len(tools)} '
        'libraries')
    files += _firmware(root)
    files += [(os.path.join(base_dir, image.KERNEL), '/kvmtune/l2/vmlinuz'),
              (os.path.join(base_dir, image.INITRD),
               '/kvmtune/l2/initrd.img'),
              (os.path.join(work, image.KERNEL), '/vmlinuz'),
              (os.path.join(work, image.INITRD), '/initrd.img'),
              (cfg, '/syslinux.cfg')]
    return {'sizes': build.write_disks(work, files), 'tools': list(tools),
            'modules': loaded, 'kvm_modules': list(KVM_MODULES)}
