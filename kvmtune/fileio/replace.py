"""How kvmtune.fileio (the one writer) puts new content in place.

- ``replace()``: the new content goes to a temporary file in the same
  directory, is fsync'ed and renamed over the target (then the directory
  is fsync'ed), so a reader sees the old or the new file, never a mix.
  The new file gets the old one's owner, group, mode and extended
  attributes (POSIX ACLs are the xattr ``system.posix_acl_access``,
  SELinux labels ``security.selinux``); when it cannot carry them,
  nothing is left and the caller writes in place.
- ``needs_in_place()`` says when a rename would lose something it cannot
  copy (other hard links, a mount point such as a single file
  bind-mounted into a container, a directory it may not write);
  ``in_place()`` then rewrites the same inode, truncated and fsync'ed.
- ``refuse_if_immutable()``: an immutable or append-only file is refused.
- ``clean_stale()`` removes temporary files of kvmtune's own pattern
  (``.<name>.kvmtune-*.tmp``) left by a killed writer.

Call these under fileio's lock; fileio.write_atomic() is the only caller.
"""

import contextlib
import fcntl
import glob
import os
import stat
import struct
import tempfile

from kvmtune.errors import InputError
from kvmtune.fileio import mounts

_TEMP_INFIX = '.kvmtune-'
_TEMP_SUFFIX = '.tmp'
_FS_IOC_GETFLAGS = 0x80086601       # linux/fs.h, _IOR('f', 1, long)
_FS_IMMUTABLE_FL = 0x10
_FS_APPEND_FL = 0x20


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _flags(fd: int) -> int:
    buf = struct.pack('l', 0)
    try:
        flags: int = struct.unpack(
            'l', fcntl.ioctl(fd, _FS_IOC_GETFLAGS, buf))[0]
        return flags
    except OSError:
        return 0        # the filesystem has no such flags


def xattrs(fd: int) -> dict[str, bytes]:
    try:
        names = os.listxattr(fd)
    except OSError:
        return {}
    values = {}
    for name in names:
        with contextlib.suppress(OSError):
            values[name] = os.getxattr(fd, name)
    return values


def _copy_metadata(fd: int, old: os.stat_result,
                   attrs: dict[str, bytes]) -> bool:
    """Give the temporary file ``fd`` the old file's owner, mode and
    xattrs; False when something could not be copied exactly."""
    try:
        if (old.st_uid, old.st_gid) != (os.getuid(), os.getgid()):
            # chown first: it may clear set-id bits that chmod restores.
            os.fchown(fd, old.st_uid, old.st_gid)
        for name in set(xattrs(fd)) - set(attrs):
            os.removexattr(fd, name)    # e.g. a directory's default ACL
        for name, value in attrs.items():
            os.setxattr(fd, name, value)
        os.fchmod(fd, stat.S_IMODE(old.st_mode))
    except OSError:
        return False
    new = os.fstat(fd)
    return ((new.st_uid, new.st_gid, stat.S_IMODE(new.st_mode))
            == (old.st_uid, old.st_gid, stat.S_IMODE(old.st_mode))
            and xattrs(fd) == attrs)


def needs_in_place(real: str, old: os.stat_result,
                   attrs: dict[str, bytes]) -> str | None:
    if old.st_nlink > 1:
        return 'it has other hard links'
    if real in mounts.mount_points():
        return 'it is a mount point (a bind-mounted file)'
    if not os.access(os.path.dirname(real), os.W_OK | os.X_OK):
        return 'its directory is not writable'
    return None


def refuse_if_immutable(real: str, fd: int | None = None) -> None:
    if fd is None:
        try:
            fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW
                         | os.O_CLOEXEC)
        except OSError:
            return
        try:
            return refuse_if_immutable(real, fd)
        finally:
            os.close(fd)
    if _flags(fd) & (_FS_IMMUTABLE_FL | _FS_APPEND_FL):
        raise InputError('is immutable or append-only (chattr +i/+a); '
                         'nothing was written',
                         fix='chattr -i/-a it first if the change is '
                         'wanted')


def clean_stale(real: str) -> list[str]:
    """Remove temporary files of kvmtune's pattern beside ``real``; call
    under lock(): no live writer owns one then."""
    directory, name = os.path.split(real)
    pattern = os.path.join(glob.escape(directory),
                           glob.escape(f'.{name}{_TEMP_INFIX}')
                           + f'*{_TEMP_SUFFIX}')
    removed = []
    for temp in glob.glob(pattern):
        with contextlib.suppress(OSError):
            if stat.S_ISREG(os.lstat(temp).st_mode):
                os.unlink(temp)
                removed.append(temp)
    return removed


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _temp(real: str) -> tuple[int, str]:
    directory, name = os.path.split(real)
    return tempfile.mkstemp(dir=directory, prefix=f'.{name}{_TEMP_INFIX}',
                            suffix=_TEMP_SUFFIX)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def prepare(real: str, data: bytes, old: os.stat_result | None,
            attrs: dict[str, bytes], mode: int | None) -> str | None:
    """A fsync'ed temporary file beside ``real`` holding ``data`` with the
    old file's metadata (or ``mode`` for a new file); None (and nothing
    left) when it cannot carry the old metadata."""
    fd: int | None
    fd, temp = _temp(real)
    try:
        _write_all(fd, data)
        if old is None:
            os.fchmod(fd, mode if mode is not None else 0o666 & ~_umask())
        elif not _copy_metadata(fd, old, attrs):
            os.close(fd)
            fd = None
            os.unlink(temp)
            return None
        os.fsync(fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    finally:
        if fd is not None:
            os.close(fd)
    return temp


def _commit(temp: str, real: str) -> None:
    try:
        os.replace(temp, real)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    # The rename is done: a failing directory fsync must not be reported
    # as "nothing written" (nor drop the backup of what was there).
    with contextlib.suppress(OSError):
        _fsync_dir(os.path.dirname(real))


def replace(real: str, data: bytes, old: os.stat_result | None,
            attrs: dict[str, bytes], mode: int | None) -> bool:
    temp = prepare(real, data, old, attrs, mode)
    if temp is None:
        return False
    _commit(temp, real)
    return True


def in_place(fd: int, data: bytes) -> None:
    os.lseek(fd, 0, os.SEEK_SET)
    _write_all(fd, data)
    os.ftruncate(fd, len(data))
    os.fsync(fd)
