"""Build the benchmark guest image (``kvmtune image build``)."""

from collections.abc import Callable
from collections.abc import Sequence
import fcntl
import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import tempfile
from typing import Any

from kvmtune.errors import KvmtuneError
from kvmtune import image
from kvmtune.image import cpio
from kvmtune.image import debs
from kvmtune.image import disk
from kvmtune.image import fio_static
from kvmtune.image import modules

# Bump when the layout changes, so an old image is not taken as current.
LAYOUT = 4
# Always in the image: fio (disk) and sysbench (CPU and memory: the
# sysbench-* workloads). Debian's sysbench is dynamic and links the MySQL
# and PostgreSQL clients: beside Debian's fio it adds 7 libraries (2.1 MB,
# 0.7 MB xz); beside the static fio (the default) it brings all 31 of its
# libraries (19 MB, 6.0 MB xz, measured 2026-11-22 on Debian 12). A static
# sysbench without the database drivers, built like fio_static, would
# shrink that; it is not built yet.
DISK_TOOLS = ('fio', 'sysbench')
NET_TOOLS = ('iperf3', 'sockperf')
NET_MODULES = ('virtio_net',)
HERE = os.path.dirname(__file__)


def _data(name: str) -> bytes:
    with open(os.path.join(HERE, name), 'rb') as f:
        return f.read()


def _templates() -> dict[str, str]:
    from kvmtune import workloads
    from kvmtune.workloads import guestjob

    return guestjob.templates(workloads.load_all())


def _fingerprint(deb_paths: Sequence[str], with_net: bool,
                 static_fio: bool) -> str:
    h = hashlib.sha256(f'layout={LAYOUT} net={with_net} '
                       f'static_fio={static_fio}\n'.encode())
    if static_fio:
        h.update(' '.join(fio_static.CONFIGURE).encode())
    for path in deb_paths:
        h.update(os.path.basename(path).encode() + b'\n')
    h.update(_data('init.sh') + _data('guestlib.sh') +
             _data('udhcpc.script'))
    h.update(disk.KERNEL_CMDLINE.encode())
    h.update(' '.join(modules.WANTED).encode())
    h.update(json.dumps(_templates(), sort_keys=True).encode())
    return h.hexdigest()


def _libraries(root: str, binary: str) -> list[tuple[str, str]]:
    """(soname, path in root) for every library ``binary`` loads.

    The guest's own loader resolves them with only ``root``'s library
    directories, so nothing is borrowed from the host.
    """
    loader = os.path.join(root, 'lib/x86_64-linux-gnu/ld-linux-x86-64.so.2')
    lib_dirs = sorted({d for d, _, files in os.walk(root)
                       if any('.so' in f for f in files)})
    proc = subprocess.run([loader, '--list', '--library-path',
                           ':'.join(lib_dirs), binary],
                          capture_output=True, text=True)
    if proc.returncode:
        raise KvmtuneError(f'cannot list the libraries of {binary}: '
                           f'{" ".join(proc.stdout.split()[-8:])}')
    found = [('ld-linux-x86-64.so.2', loader)]
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] == '=>':
            if parts[2] == 'not' or not parts[2].startswith(root):
                raise KvmtuneError(f'{os.path.basename(binary)} needs '
                                   f'{parts[0]}, not in the fetched packages')
            found.append((os.path.basename(parts[0]), parts[2]))
    return found


def _tool_files(root: str, tools: Sequence[str],
                static_fio: str | None = None) -> list[tuple[str, str]]:
    """[(path in root, path on the image)] for the tools and libraries.

    mtools copies them straight from the extracted packages, each under
    the name the loader looks for (the soname).
    """
    files: dict[str, str] = {}
    for tool in tools:
        if tool == 'fio' and static_fio:
            files['/kvmtune/bin/fio'] = static_fio   # needs no library
            continue
        binary = os.path.join(root, 'usr/bin', tool)
        files[f'/kvmtune/bin/{tool}'] = binary
        for soname, path in _libraries(root, binary):
            files[f'/kvmtune/lib/{soname}'] = os.path.realpath(path)
    return [(src, dest) for dest, src in sorted(files.items())]


def _initrd(root: str, kernel_root: str, dest: str, with_net: bool,
            extra: Callable[[cpio.Archive, str, set[str]], object] | None
            = None) -> list[str]:
    """:param extra: called with (archive, modules_dir, builtin names)
        to add files (the nested image's, kvmtune.image.nested)"""
    (modules_dir,) = [os.path.join(kernel_root, 'lib/modules', v)
                      for v in os.listdir(os.path.join(kernel_root,
                                                       'lib/modules'))]
    wanted = modules.WANTED if with_net else tuple(
        m for m in modules.WANTED if m not in NET_MODULES)
    ordered = modules.load_order(modules_dir, wanted,
                                 modules.builtin_names(modules_dir))
    archive = cpio.Archive()
    for d in ('bin', 'dev', 'etc', 'etc/kvmtune', 'lib', 'lib/modules',
              'proc', 'sys'):
        archive.add_dir(d)
    archive.add_file('init', _data('init.sh'), 0o755)
    archive.add_file('etc/kvmtune/guestlib.sh', _data('guestlib.sh'))
    with open(os.path.join(root, 'bin/busybox'), 'rb') as f:
        archive.add_file('bin/busybox', f.read(), 0o755)
    archive.add_symlink('bin/sh', 'busybox')
    archive.add_file('etc/udhcpc.script', _data('udhcpc.script'), 0o755)
    archive.add_dir('etc/kvmtune/workloads')
    for name, command in sorted(_templates().items()):
        archive.add_file(f'etc/kvmtune/workloads/{name}',
                         command.encode() + b'\n')
    archive.add_file('etc/kvmtune-tools-label',
                     image.TOOLS_LABEL.encode() + b'\n')
    names = []
    for path in ordered:
        name = os.path.basename(path)
        with open(path, 'rb') as f:
            archive.add_file(f'lib/modules/{name}', f.read())
        names.append(name)
    archive.add_file('lib/modules/load.order',
                     ('\n'.join(names) + '\n').encode())
    if extra is not None:
        extra(archive, modules_dir, modules.builtin_names(modules_dir))
    buf = io.BytesIO()
    archive.write(buf)
    with open(dest, 'wb') as f:
        f.write(gzip.compress(buf.getvalue(), compresslevel=6, mtime=0))
    return [n[:-3] for n in names]


def build(output: str | None = None, with_net: bool = False,
          static_fio: bool = False,
          log: Callable[[str], object] = print) -> dict[str, Any]:
    """Build (or find up to date) the image; return the manifest dict."""
    out = image.image_dir(output)
    os.makedirs(out, exist_ok=True)
    lock = open(os.path.join(out, '.build.lock'), 'w')
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise KvmtuneError('another image build is running', source=out,
                           fix='wait for it to finish')
    with lock:
        return _build_locked(out, with_net, static_fio, log)


def _build_locked(out: str, with_net: bool, static_fio: bool,
                  log: Callable[[str], object]) -> dict[str, Any]:
    disk.check_host_tools()
    # One cache may serve several image directories (the disk-only and the
    # --with-net image share their .debs and the compiled static fio).
    cache = os.environ.get('KVMTUNE_IMAGE_CACHE') or os.path.join(out, 'cache')
    tools = DISK_TOOLS + (NET_TOOLS if with_net else ())
    kernel_pkg = debs.kernel_package()
    log(f'packages: busybox-static {" ".join(tools)} {kernel_pkg} '
        f'(+ their libraries), cache {cache}')
    extra = ('libaio-dev',) if static_fio else ()
    tool_debs, fetched = debs.fetch(os.path.join(cache, 'debs'),
                                    ('busybox-static',) + tools + extra)
    kernel_deb, kernel_fetched = debs.fetch_kernel(
        os.path.join(cache, 'kernel'), kernel_pkg)
    reused = len(tool_debs) + 1 - len(fetched) - kernel_fetched
    log(f'.debs: {reused} reused from the cache, '
        f'{len(fetched) + kernel_fetched} downloaded')

    fingerprint = _fingerprint(tool_debs + [kernel_deb], with_net,
                               static_fio)
    manifest_path = os.path.join(out, image.MANIFEST)
    current = _read_manifest(manifest_path)
    outputs = (image.KERNEL, image.INITRD, image.RAW, image.QCOW2)
    if (current.get('fingerprint') == fingerprint and
            all(os.path.exists(os.path.join(out, n)) for n in outputs)):
        log(f'image up to date in {out} (same packages and init): '
            'nothing rebuilt')
        current['changed'] = False
        return current

    return publish(
        out, outputs, manifest_path,
        lambda work: _build_in(work, cache, tool_debs, kernel_deb, tools,
                               with_net, static_fio, log),
        dict(fingerprint=fingerprint, with_net=with_net,
             static_fio=static_fio, kernel_package=kernel_pkg,
             debs=[os.path.basename(p) for p in tool_debs + [kernel_deb]]))


def publish(out: str, outputs: Sequence[str], manifest_path: str,
            build: Callable[[str], dict[str, Any]],
            extra: dict[str, Any]) -> dict[str, Any]:
    """Build in a temporary directory beside the image (``build(work)``
    returns the manifest), move ``outputs`` into ``out`` and write the
    manifest (with ``extra``) last: a reader never sees half an image."""
    work = tempfile.mkdtemp(prefix='.build-', dir=out)
    try:
        _remove_stale_builds(out, keep=work)
        manifest = build(work)
        manifest.update(extra)
        for name in outputs:
            os.replace(os.path.join(work, name), os.path.join(out, name))
        tmp = manifest_path + '.tmp'
        with open(tmp, 'w') as f:
            json.dump(manifest, f, indent=2, sort_keys=True)
            f.write('\n')
        os.replace(tmp, manifest_path)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    manifest['changed'] = True
    return manifest


def _remove_stale_builds(out: str, keep: str) -> None:
    """Work directories of builds that were killed (no finally ran)."""
    for name in os.listdir(out):
        path = os.path.join(out, name)
        if name.startswith('.build-') and path != keep:
            shutil.rmtree(path, ignore_errors=True)


def _read_manifest(path: str) -> dict[str, Any]:
    try:
        with open(path) as f:
            manifest: dict[str, Any] = json.load(f)
            return manifest
    except (OSError, ValueError):
        return {}


def _fio_version(deb_paths: Sequence[str]) -> str:
    for path in deb_paths:
        name = os.path.basename(path)
        if name.startswith('fio_'):
            return name.split('_')[1].replace('%3a', ':')
    raise KvmtuneError('no fio package among the fetched .debs')


def _build_in(work: str, cache: str, tool_debs: list[str], kernel_deb: str,
              tools: Sequence[str], with_net: bool, static_fio: bool,
              log: Callable[[str], object]) -> dict[str, Any]:
    root, kernel_root = unpack(work, tool_debs, kernel_deb)
    loaded = _initrd(root, kernel_root, os.path.join(work, image.INITRD),
                     with_net)
    log(f'initrd: {len(loaded)} modules in load order: {" ".join(loaded)}')
    cfg = os.path.join(work, 'syslinux.cfg')
    with open(cfg, 'w') as f:
        f.write(disk.SYSLINUX_CFG.format(cmdline=disk.KERNEL_CMDLINE))
    static = None
    if static_fio:
        static = fio_static.build(cache, _fio_version(tool_debs), root, work,
                                  log)
    files = _tool_files(root, tools, static)
    log(f'tools: {" ".join(tools)} with {len(files) - len(tools)} '
        'libraries' + (' (fio static)' if static else ''))
    files += [(os.path.join(work, image.KERNEL), '/vmlinuz'),
              (os.path.join(work, image.INITRD), '/initrd.img'),
              (cfg, '/syslinux.cfg')]
    return {'sizes': write_disks(work, files), 'tools': list(tools),
            'modules': loaded}


def unpack(work: str, tool_debs: Sequence[str],
           kernel_deb: str) -> tuple[str, str]:
    """Extract the tools' and the kernel's packages under ``work`` and copy
    the kernel to ``work/image.KERNEL``; return (root, kernel_root)."""
    root = os.path.join(work, 'root')
    kernel_root = os.path.join(work, 'kernel')
    debs.extract(tool_debs, root)
    debs.extract([kernel_deb], kernel_root)
    (vmlinuz,) = [os.path.join(kernel_root, 'boot', n) for n in
                  os.listdir(os.path.join(kernel_root, 'boot'))
                  if n.startswith('vmlinuz-')]
    shutil.copyfile(vmlinuz, os.path.join(work, image.KERNEL))
    return root, kernel_root


def write_disks(work: str, files: Sequence[tuple[str, str]]
                ) -> dict[str, int | None]:
    """Put ``files`` ([(host path, image path)]) on the image's FAT
    partition and write the raw and qcow2 disks under ``work``; return the
    files' sizes in bytes (kernel, initrd, raw, qcow2). The raw disk's
    xz size, the image's size figure, is benchmarks/guest_boot.py's: xz
    -6 of the raw disk took 18 s of CPU, on the main job's way, for a
    figure nobody read there."""
    fat = os.path.join(work, 'part.fat')
    disk.make_fat(fat, files, image.TOOLS_LABEL)
    raw = os.path.join(work, image.RAW)
    disk.make_raw(raw, fat)
    os.unlink(fat)
    disk.make_qcow2(raw, os.path.join(work, image.QCOW2))
    sizes: dict[str, int | None] = {
        name: os.path.getsize(os.path.join(work, name))
        for name in (image.KERNEL, image.INITRD, image.RAW, image.QCOW2)}
    return sizes
