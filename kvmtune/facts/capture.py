"""Copy what gather() read on this host into a tree that replays it."""

import datetime
import json
import os
import shutil
import tempfile
from typing import Any

from kvmtune.errors import InputError
from kvmtune import facts as host_facts
from kvmtune.facts import cpu
from kvmtune.facts import hostfs
from kvmtune.facts import memory
from kvmtune.facts import virt
from kvmtune import fileio


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


def capture(root: str, target: str) -> dict[str, Any]:
    """Capture root's facts into target (built aside, then renamed).

    Returns the record written to ``kvmtune-capture.json``, with the facts
    of the live host at capture time under ``facts``.
    """
    probe = virt.probe_kvm(os.path.join(root, virt.KVM_DEVICE[1:]))
    files = hostfs.HostFiles(root)
    facts = host_facts.collect(files, probe)
    cpu.read_for_capture(files)
    memory.read_for_capture(files)
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
        record = {
            'kvmtune_version': _kvmtune_version(),
            'captured_at': datetime.datetime.now(
                datetime.timezone.utc).isoformat(timespec='seconds'),
            'hostname': facts['hostname'],
            'kvm_probe': probe,
            'files': written,
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
