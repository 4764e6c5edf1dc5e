"""Writes to host files that only root may change, through sudo when needed.

kvmtune runs as root on a compute host, but under DevStack it runs as the
``stack`` user, which DevStack gives passwordless sudo and which DevStack's
own functions use for every host change (``sudo sysctl``, ``sudo tee``).
This does the same: a path this process can write is written directly;
otherwise the write goes through ``sudo -n`` (never a password prompt), and
when sudo is missing or says no, the caller gets one line saying so.
"""

from collections.abc import Sequence
import os
import shutil
import subprocess

from kvmtune.errors import KvmtuneError

SUDO_FIX = ('run as root, or as a user with passwordless sudo (DevStack\'s '
            'stack user has it)')


class NotAllowed(KvmtuneError):
    """Neither this user nor sudo may make the change."""


def _writable(path: str) -> bool:
    if os.geteuid() == 0:
        return True
    if os.path.exists(path):
        return os.access(path, os.W_OK)
    return os.access(os.path.dirname(path) or '.', os.W_OK | os.X_OK)


def sudo(argv: Sequence[str], path: str, data: str | None = None) -> None:
    """Run ``sudo -n argv`` (stdin ``data``); NotAllowed when refused."""
    if shutil.which('sudo') is None:
        raise NotAllowed('not root, and there is no sudo to change it',
                         source=path, fix=SUDO_FIX)
    done = subprocess.run(['sudo', '-n', *argv], input=data, text=True,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if done.returncode != 0:
        said = ' '.join(done.stderr.split()) or f'exit {done.returncode}'
        raise NotAllowed(f'not root, and "sudo -n {argv[0]}" failed: {said}',
                         source=path, fix=SUDO_FIX)


def write_knob(path: str, text: str) -> None:
    """Write a kernel knob (/proc/sys, /sys) in place."""
    if _writable(path):
        try:
            with open(path, 'w') as handle:
                handle.write(text)
            return
        except PermissionError:
            if os.geteuid() == 0:
                raise
    sudo(['tee', path], path, data=text)


def write_file(path: str, text: str, mode: int = 0o644) -> None:
    """Replace a file atomically: with kvmtune.fileio (the one writer) when
    this process may, else a temporary file and a rename through sudo.
    ``mode`` is for a file that does not exist yet."""
    directory = os.path.dirname(os.path.abspath(path))
    if os.geteuid() == 0 or (os.path.isdir(directory) and
                             os.access(directory, os.W_OK | os.X_OK)):
        from kvmtune import fileio

        os.makedirs(directory, exist_ok=True)
        fileio.write_atomic(path, text, mode=mode)
        return
    tmp = os.path.join(directory, f'.kvmtune-{os.getpid()}.tmp')
    sudo(['mkdir', '-p', directory], path)
    sudo(['tee', tmp], path, data=text)
    try:
        sudo(['chmod', f'{mode:o}', tmp], path)
        sudo(['mv', '-f', tmp, path], path)
    except NotAllowed:
        subprocess.run(['sudo', '-n', 'rm', '-f', tmp],
                       stderr=subprocess.DEVNULL)
        raise


def remove_file(path: str) -> None:
    if not os.path.lexists(path):
        return
    directory = os.path.dirname(os.path.abspath(path))
    if os.geteuid() == 0 or os.access(directory, os.W_OK | os.X_OK):
        os.unlink(path)
    else:
        sudo(['rm', '-f', path], path)
