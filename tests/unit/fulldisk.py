"""A small tmpfs, mounted by the test and filled up or made read-only.

Not a test module: the full-disk and read-only tests of every command that
writes files (tests/unit/cmd/test_*.py) share it. Mounting needs root; the
mount is undone whatever the test did.
"""

import contextlib
import errno
import os
import subprocess

import pytest

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0,
                               reason='mounting a tmpfs needs root')
FILLER = '.filler'


@contextlib.contextmanager
def _tmpfs(directory, label, originals, prepare):
    """Mount a 512 KiB tmpfs on directory, write ``originals`` ({name:
    bytes}) into it and call ``prepare(directory)``; unmounted after."""
    directory.mkdir(exist_ok=True)
    subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=512k,mode=0755',
                    label, str(directory)], check=True, timeout=30)
    try:
        for name, data in (originals or {}).items():
            (directory / name).write_bytes(data)
        if prepare is not None:
            prepare(directory)
        yield directory
    finally:
        subprocess.run(['umount', str(directory)], check=True, timeout=30)


@contextlib.contextmanager
def full_tmpfs(directory, originals=None, prepare=None):
    """A tmpfs with ``originals`` and ``prepare`` done (``_tmpfs``), then
    every byte left filled; yields the directory."""
    with _tmpfs(directory, 'kvmtune-test-full', originals, prepare):
        fd = os.open(directory / FILLER, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while True:
                os.write(fd, b'\0' * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
        finally:
            os.close(fd)
        yield directory


@contextlib.contextmanager
def readonly_tmpfs(directory, originals=None, prepare=None):
    """A tmpfs with ``originals`` and ``prepare`` done (``_tmpfs``), then
    remounted read-only (what a filesystem that went read-only after an
    error looks like); yields the directory."""
    with _tmpfs(directory, 'kvmtune-test-ro', originals, prepare):
        subprocess.run(['mount', '-o', 'remount,ro', str(directory)],
                       check=True, timeout=30)
        with pytest.raises(OSError, match='Read-only file system'):
            (directory / 'probe').write_bytes(b'')
        yield directory


def assert_left_as_it_was(directory, originals, filler=True):
    """Each original byte for byte, and nothing else beside the filler
    (no temp file, no lock file, no backup)."""
    names = sorted(p.name for p in directory.iterdir())
    assert names == sorted([*originals, *([FILLER] if filler else [])]), \
        names
    for name, data in originals.items():
        assert (directory / name).read_bytes() == data, name


def assert_one_line_full(err):
    assert err.startswith('kvmtune: error: ') and err.count('\n') == 1, err
    assert 'No space left on device' in err and 'Traceback' not in err, err
    assert 'nothing was written' in err or 'not written' in err, err


def assert_one_line_readonly(err, mount=None):
    """One line saying the filesystem is read-only (not "permission
    denied": root is refused too), naming its mount and the fix."""
    assert err.startswith('kvmtune: error: ') and err.count('\n') == 1, err
    assert 'Traceback' not in err, err
    assert 'read-only filesystem' in err and 'permission denied' not in \
        err, err
    assert '(fix: remount it read-write: mount -o remount,rw ' in err, err
    if mount is not None:
        assert f'mounted read-only at {mount})' in err, err
    assert any(words in err for words in ('nothing was written',
                                          'nothing written', 'not written')), \
        err
