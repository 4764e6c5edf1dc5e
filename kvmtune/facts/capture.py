"""Copy what gather() read on this host into a tree that replays it,
with the host's boot side.

The boot side is what ``kvmtune boot apply``, verify's host layer and
``rollout --check`` read besides /proc, /sys and /dev
(kvmtune.boot.loader, kvmtune.boot.apply, kvmtune.verify.host):
os-release, /etc/default/grub and its grub.d/*.cfg, /etc/kernel/cmdline,
the BLS entries (/boot/loader/entries/*.conf), /etc/modprobe.d/*.conf,
tuned's cpu-partitioning files and boot apply's reboot record with the
boot id it is pending against; a grub.cfg only as an empty stand-in (the
loader looks at whether it is there, and it may hold a password hash).
Each is a regular file of at most BOOT_MAX_BYTES, read through
kvmtune.inputs (no FIFO, device or link out of the tree), at most
BOOT_MAX_FILES in a directory, and anything shaped like a credential in it
is masked (kvmtune.errors.mask_secrets; the record names the file). The
nova.conf files come from the caller (``extra``), already without their
secrets (kvmtune.tuning.novaconf.capture): this layer does not know Nova.
"""

import datetime
import glob
import json
import os
import shutil
import tempfile
from typing import Any

from kvmtune.errors import InputError
from kvmtune.errors import mask_secrets
from kvmtune import facts as host_facts
from kvmtune.facts import cpu
from kvmtune.facts import hostfs
from kvmtune.facts import memory
from kvmtune.facts.types import KvmProbe
from kvmtune.facts import virt
from kvmtune import fileio
from kvmtune import inputs

# Files of the boot side (tree paths).
BOOT_FILES = ('etc/os-release', 'usr/lib/os-release', 'etc/default/grub',
              'etc/kernel/cmdline', 'etc/tuned/active_profile',
              'etc/tuned/cpu-partitioning-variables.conf',
              # the reboot record of boot apply and the boot id it is
              # pending against (kvmtune.boot.record)
              'var/lib/kvmtune/reboot-required.json',
              'proc/sys/kernel/random/boot_id')
# Directories of the boot side and the files in them that count: what
# grub-mkconfig sources, the Boot Loader Specification's entries, what
# modprobe reads (modprobe.d(5): *.conf).
BOOT_DIRS = (('etc/default/grub.d', '.cfg'), ('boot/loader/entries', '.conf'),
             ('etc/modprobe.d', '.conf'))
# Copied empty: only that they are there is read (kvmtune.boot.loader).
BOOT_STAND_INS = ('boot/grub2/grub.cfg', 'boot/efi/EFI/*/grub.cfg')
BOOT_MAX_BYTES = 1 << 20
BOOT_MAX_FILES = 256


def _inside(root: str) -> str | None:
    real = os.path.realpath(root)
    return None if real == '/' else real


def boot_side(root: str) -> tuple[dict[str, bytes], dict[str, str],
                                  list[str]]:
    """({tree path: bytes}, {tree path: why not copied}, [tree paths
    whose text was masked]) of the boot side of ``root``."""
    inside = _inside(root)
    wanted = list(BOOT_FILES)
    for directory, suffix in BOOT_DIRS:
        try:
            names = sorted(os.listdir(os.path.join(root, directory)))
        except OSError:
            continue
        wanted += [f'{directory}/{name}' for name in names
                   if name.endswith(suffix)][:BOOT_MAX_FILES]
    copied: dict[str, bytes] = {}
    refused: dict[str, str] = {}
    masked: list[str] = []
    for path in wanted:
        try:
            data = inputs.read_bytes(os.path.join(root, path),
                                     max_bytes=BOOT_MAX_BYTES, source=path,
                                     inside=inside)
        except InputError as exc:
            if exc.problem != 'no such file':
                refused[path] = exc.problem
            continue
        text = data.decode('utf-8', 'replace')
        clean = mask_secrets(text)
        if clean != text:
            masked.append(path)
            data = clean.encode()
        copied[path] = data
    for pattern in BOOT_STAND_INS:
        for full in sorted(glob.glob(os.path.join(glob.escape(root),
                                                  pattern))):
            path = os.path.relpath(full, root)
            if os.path.isfile(full) and not os.path.islink(full):
                copied[path] = b''
    return copied, refused, masked


def _kvmtune_version() -> str | None:
    from importlib import metadata     # slow: only here, never in inspect
    try:
        return metadata.version('kvmtune')
    except metadata.PackageNotFoundError:
        return None


def _write(tree: str, path: str, data: bytes) -> None:
    full = os.path.join(tree, path.lstrip('/'))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, 'wb') as f:
        f.write(data)


def write_tree(files: hostfs.HostFiles, tree: str) -> list[str]:
    """Write a HostFiles record into tree; return the paths written."""
    written = []
    for path, data in sorted(files.contents.items()):
        if data is not None:
            _write(tree, path, data)
            written.append(path)
    for path, kind in sorted(files.existence.items()):
        if kind == 'dir':
            os.makedirs(os.path.join(tree, path.lstrip('/')), exist_ok=True)
        elif kind == 'file' and path not in files.contents:
            _write(tree, path, b'')     # only its existence was looked at
            written.append(path)
    for path in sorted(files.listed):
        if files.exists(path):
            os.makedirs(os.path.join(tree, path.lstrip('/')), exist_ok=True)
    return written


def _write_files(tree: str, copied: dict[str, bytes]) -> list[str]:
    for path, data in sorted(copied.items()):
        _write(tree, path, data)
    return ['/' + path.lstrip('/') for path in sorted(copied)]


def capture(root: str, target: str,
            extra: tuple[dict[str, bytes], dict[str, str]] | None = None
            ) -> dict[str, Any]:
    """Capture root's facts and boot side into target (built aside, then
    renamed).

    ``extra``: ({host path: bytes}, {host path: why not copied}), files
    a higher layer read and cleaned (nova.conf,
    kvmtune.tuning.novaconf.capture.read); they are written as given.
    Returns the record written to ``kvmtune-capture.json``, with the facts
    of the live host at capture time under ``facts``. /dev/kvm is probed
    on the live host only; a tree passes on the probe it recorded (null
    when it has none: unknown, as its own facts say).
    """
    if host_facts.is_live(root):
        probe: KvmProbe | None = virt.probe_kvm(
            os.path.join(root, virt.KVM_DEVICE[1:]))
    else:
        probe = host_facts.recorded_probe(root)
    files = hostfs.HostFiles(root)
    facts = host_facts.collect(files, probe)
    cpu.read_for_capture(files)
    memory.read_for_capture(files)
    boot, not_copied, masked = boot_side(root)
    extra_files, extra_refused = extra or ({}, {})
    not_copied.update(extra_refused)
    parent = os.path.dirname(os.path.abspath(target))
    try:
        os.makedirs(parent, exist_ok=True)
        staging = tempfile.mkdtemp(dir=parent, prefix='.kvmtune-capture-')
    except OSError as exc:
        raise InputError(f'cannot create it in {parent}: {exc.strerror}; '
                         'nothing was written', source=target,
                         fix='give a directory in a place you may '
                         'write') from None
    try:
        written = write_tree(files, staging)
        written += _write_files(staging, boot)
        written += _write_files(staging, extra_files)
        record = {
            'kvmtune_version': _kvmtune_version(),
            'captured_at': datetime.datetime.now(
                datetime.timezone.utc).isoformat(timespec='seconds'),
            'hostname': facts['hostname'],
            'kvm_probe': probe,
            'files': written,
            'masked': ['/' + path for path in masked],
            'not_copied': {'/' + path.lstrip('/'): why
                           for path, why in sorted(not_copied.items())},
        }
        fileio.write_atomic(os.path.join(staging, host_facts.CAPTURE_FILE),
                            json.dumps(record, indent=2) + '\n')
        if os.path.isdir(target):
            os.rmdir(target)        # empty, checked by the caller
        os.rename(staging, target)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise InputError(f'cannot write {exc.filename or target}: '
                         f'{exc.strerror}; nothing was kept', source=target,
                         fix='give a new directory in a place you may '
                         'write, with free space') from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return dict(record, facts=facts)
