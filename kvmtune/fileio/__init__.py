"""The one writer: every file kvmtune writes goes through write_atomic().

What it promises (doc/design.md section 8):

- Only regular files are written. A path naming a device, a FIFO, a socket,
  a directory or a dangling symbolic link is refused before anything is
  opened or created; a symbolic link to a regular file is followed (the file
  it names is written, the link stays a link).
- Writers are serialised: an flock(2) on the target itself (on its
  directory while it does not exist), taken again when a writer that went
  before replaced the file; no lock file is left behind. Use
  ``with lock(path):`` around a read-modify-write so that a second writer
  reads what the first one wrote; write_atomic() inside it does not lock
  again.
- The new content goes to a temporary file in the same directory, is
  fsync'ed and renamed over the target (then the directory is fsync'ed), so
  a reader sees the old or the new file, never a mix. The new file gets the
  old one's owner, group, mode and extended attributes (POSIX ACLs are the
  xattr ``system.posix_acl_access``, SELinux labels ``security.selinux``).
- When a rename would lose something it cannot copy (the file has other
  hard links, it is a mount point such as a single file bind-mounted into a
  container, an owner or attribute cannot be set, or the directory is not
  writable) the file is rewritten in place instead: same inode, under the
  lock, truncated and written, fsync'ed.
  (How, in both cases: kvmtune.fileio.replace, which only this module
  calls.)
- A backup (``backup=``) is written only once the write itself has been
  shown to be possible (an immutable or append-only target is refused
  first), and only after the new content is in place, so a refused write
  never overwrites an earlier backup.
- Temporary files of kvmtune's own pattern (``.<name>.kvmtune-*.tmp``) left
  by a killed writer are removed under the lock.
- Every failure is one InputError line naming the file and the fix; on a
  filesystem mounted read-only the line says so, naming the mount
  (kvmtune.fileio.mounts.read_only_error: "permission denied" would
  mislead, root is refused too).
"""

from collections.abc import Iterator
import contextlib
import errno
import fcntl
import os
import stat
import threading
from typing import cast

from kvmtune.errors import InputError
from kvmtune.fileio import mounts
from kvmtune.fileio import replace

_KINDS = (
    (stat.S_ISCHR, 'a character device'),
    (stat.S_ISBLK, 'a block device'),
    (stat.S_ISFIFO, 'a FIFO (named pipe)'),
    (stat.S_ISSOCK, 'a socket'),
    (stat.S_ISDIR, 'a directory'),
)
_held = threading.local()


def kind(mode: int) -> str | None:
    """'a character device', 'a directory', ... or None for a regular
    file (anything else that is not a regular file is 'not a regular
    file')."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else 'not a regular file'


def _error(problem: str, source: object, fix: str | None) -> InputError:
    return InputError(problem, source=source, fix=fix)


def resolve(path: str, source: object = None, fix: str | None = None
            ) -> tuple[str, os.stat_result | None]:
    """The real path to write for ``path`` and its stat (None when the file
    does not exist yet); InputError for anything but a regular file."""
    source = source or path
    fix = fix or 'give the path of a regular file'
    if not isinstance(path, str) or not path.strip():
        raise _error('an empty path', source or "''", fix)
    try:
        link = os.lstat(path)
    except FileNotFoundError:
        link = None
    except OSError as exc:
        raise _error(f'cannot look at it: {exc.strerror}', source,
                     fix) from None
    target: os.stat_result | None
    if link is not None and stat.S_ISLNK(link.st_mode):
        real = os.path.realpath(path)
        try:
            target = os.stat(real)
        except FileNotFoundError:
            raise _error('is a symbolic link to nothing (dangling)', source,
                         'point the link at an existing file or remove '
                         'it') from None
        except OSError as exc:
            raise _error(f'cannot follow the link: {exc.strerror}', source,
                         fix) from None
    else:
        real, target = os.path.abspath(path), link
    if target is not None:
        what = kind(target.st_mode)
        if what:
            raise _error(f'cannot write {what}: kvmtune writes only '
                         'regular files (nothing was written)', source, fix)
    directory = os.path.dirname(real)
    try:
        dstat = os.stat(directory)
    except OSError as exc:
        raise _error(f'cannot write into {directory}: {exc.strerror}',
                     source, 'create the directory or give another '
                     'path') from None
    if not stat.S_ISDIR(dstat.st_mode):
        raise _error(f'{directory} is not a directory', source, fix)
    return real, target


@contextlib.contextmanager
def lock(path: str, source: object = None,
         wait: bool = True) -> Iterator[str]:
    """Hold the writers' lock of ``path`` (reentrant within a thread).

    The lock is an flock(2) on the file itself (on its directory while the
    file does not exist): no lock file is left beside nova.conf. A writer
    that replaces the file does so holding the lock, so one that waited
    finds a new inode at the path, and locks again.

    ``wait=False``: when another writer holds the lock of an existing
    file, refuse at once (InputError) instead of waiting for it: a file
    that one program owns, such as a node_exporter textfile, has a second
    writer only by mistake. (The lock of a file not yet created is its
    directory's, shared with the directory's other files: that one is
    still waited for.)
    """
    real, _ = resolve(path, source)
    held: dict[str, int] | None = getattr(_held, 'paths', None)
    if held is None:
        held = _held.paths = {}
    if real in held:
        held[real] += 1
        try:
            yield real
        finally:
            held[real] -= 1
        return
    fd = _acquire(real, source or path, wait)
    try:
        held[real] = 1
        try:
            yield real
        finally:
            del held[real]
    finally:
        os.close(fd)


def _acquire(real: str, source: object, wait: bool = True) -> int:
    for _ in range(1000):
        exists = os.path.lexists(real)
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (
            os.O_NOFOLLOW if exists else os.O_DIRECTORY)
        try:
            fd = os.open(real if exists else os.path.dirname(real), flags)
        except FileNotFoundError:
            continue                        # removed meanwhile: look again
        except OSError as exc:
            raise _error(f'cannot lock it: {exc.strerror}', source,
                         'run as a user who may read and write the file '
                         'and its directory') from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (
                0 if wait or not exists else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            raise _error('another program is writing it now (it holds '
                         'the lock); nothing was written', source,
                         'let one program write each file: stop the '
                         'second writer, or give it a file of its '
                         'own') from None
        try:
            now = os.lstat(real)
        except FileNotFoundError:
            now = None
        if not exists and now is None:
            return fd
        if exists and now is not None:
            mine = os.fstat(fd)
            if (now.st_ino, now.st_dev) == (mine.st_ino, mine.st_dev):
                what = kind(now.st_mode)
                if what:
                    os.close(fd)
                    raise _error(f'cannot write {what}: kvmtune writes '
                                 'only regular files (nothing was '
                                 'written)', source,
                                 'give the path of a regular file')
                return fd
        os.close(fd)                        # replaced while we waited
    raise _error('kept being replaced while kvmtune waited for its lock',
                 source, 'stop the other program writing it')


def check_writable(path: str, source: object = None,
                   fix: str | None = None) -> str:
    """Refuse, before anything is written, what write_atomic() would
    refuse: a command writing several files (``report --png --html``)
    checks them all first so that it never writes one and fails on the
    next. Returns the real path."""
    source = source or path
    real, old = resolve(path, source, fix)
    fix = fix or 'give a path in a directory you may write'
    directory = os.path.dirname(real)
    read_only = mounts.read_only_error(real, source)
    if read_only is not None:
        raise read_only
    if old is not None:
        try:
            replace.refuse_if_immutable(real)
        except InputError as exc:
            raise InputError(exc.problem, source=source, fix=exc.fix) \
                from None
        if not os.access(real, os.W_OK):
            raise _error('is not writable; nothing was written', source,
                         fix)
    elif not os.access(directory, os.W_OK | os.X_OK):
        raise _error(f'its directory {directory} is not writable; nothing '
                     'was written', source, fix)
    return real


def write_atomic(path: str, data: bytes | str, *, backup: str | None = None,
                 mode: int | None = None, source: object = None,
                 fix: str | None = None) -> str:
    """Make the regular file ``path`` hold ``data`` (bytes or str, UTF-8).

    :param backup: a path that receives the previous content, written only
        after the new content is in place (None: no backup).
    :param mode: the permission bits of a file that does not exist yet
        (default 0666 & ~umask); an existing file keeps its own.
    :param source: how to name the file in errors (default ``path``).
    :param fix: the fix errors propose (default: how to make it writable).
    :returns: 'replaced', 'in place' or 'created'.
    :raises InputError: not a regular file, not writable, immutable, ...;
        the file and the backup are then as they were.
    """
    if isinstance(data, str):
        data = data.encode('utf-8')
    source = source or path
    real, _ = resolve(path, source, fix)
    fix = fix or ('run as root or as the owner of the file and its '
                  'directory')
    if backup is not None:
        _backup_place(backup)
    with lock(path, source):
        real, old = resolve(path, source)       # again, under the lock
        replace.clean_stale(real)
        try:
            return _write_locked(real, data, old, backup, mode)
        except InputError as exc:
            if exc.source:
                raise
            raise mounts.read_only_error(real, source) or InputError(
                exc.problem, source=source, key=exc.key,
                fix=exc.fix or fix) from None
        except OSError as exc:
            name = exc.filename or real
            read_only = mounts.read_only_error(real, source) \
                if exc.errno == errno.EROFS else None
            if read_only is not None:
                raise read_only from None
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                # Not a permission matter: the filesystem is full (space
                # or inodes) or the quota is used up.
                fix = (f'free space or inodes on the filesystem of '
                       f'{os.path.dirname(real)} (df -h, df -i)')
            raise _error(f'cannot write {name}: {exc.strerror}; nothing '
                         'was written', source, fix) from None


def write_if_changed(path: str, data: bytes | str, *,
                     mode: int | None = None, source: object = None,
                     fix: str | None = None) -> bool:
    """write_atomic() unless ``path`` already holds ``data``; True when it
    wrote. The comparison reads at most the file's size, and only when
    that size is the new content's: a file of another size differs."""
    if isinstance(data, str):
        data = data.encode('utf-8')
    real, old = resolve(path, source or path, fix)
    if old is not None and old.st_size == len(data):
        try:
            # a regular file (resolve refused anything else): no blocking
            fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
                         | os.O_CLOEXEC)
        except OSError:
            pass                # unreadable: it differs
        else:
            try:
                if _read_all(fd) == data:
                    return False
            finally:
                os.close(fd)
    write_atomic(path, data, mode=mode, source=source, fix=fix)
    return True


def _write_locked(real: str, data: bytes, old: os.stat_result | None,
                  backup: str | None, mode: int | None) -> str:
    if old is None:
        if backup is not None:
            raise InputError('there is nothing to back up (the file does '
                             'not exist)', fix='create the file first')
        directory = os.path.dirname(real)
        if not os.access(directory, os.W_OK | os.X_OK):
            raise InputError(f'its directory {directory} is not writable; '
                             'nothing was written',
                             fix='give a path in a writable directory')
        replace.replace(real, data, None, {}, mode)
        return 'created'
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(real, flags)
    except OSError as exc:
        replace.refuse_if_immutable(real)
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise InputError(f'is not writable ({exc.strerror}); nothing '
                             'was written',
                             fix='run as root or as the file\'s owner, on '
                                 'a filesystem mounted read-write') from None
        raise
    backup_temp = None
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or now.st_ino != old.st_ino:
            raise InputError('was replaced while kvmtune was writing it; '
                             'nothing was written',
                             fix='run the command again')
        replace.refuse_if_immutable(real, fd)
        if backup is not None:
            backup_temp = _prepare_backup(backup, _read_all(fd), old)
        attrs = replace.xattrs(fd)
        done = False
        if replace.needs_in_place(real, old, attrs) is None:
            done = replace.replace(real, data, old, attrs, mode)
        if not done:
            replace.in_place(fd, data)
    except BaseException:
        if backup_temp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(backup_temp)
        raise
    finally:
        os.close(fd)
    if backup_temp is not None:     # made only when backup is given
        _commit_backup(backup_temp, cast(str, backup))
    return 'replaced' if done else 'in place'


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    os.lseek(fd, 0, os.SEEK_SET)
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b''.join(chunks)
        chunks.append(chunk)


def _backup_place(backup: str) -> str:
    """Where the backup goes: its own name, never through a link.

    The target may be a link (nova.conf kept elsewhere is written where it
    lives), but the backup's name is kvmtune's choice: a link planted there
    would make kvmtune, as root, overwrite the link's target with the old
    nova.conf (tests/unit/test_hostile.py). Such a link is refused,
    untouched."""
    try:
        if stat.S_ISLNK(os.lstat(backup).st_mode):
            raise _error('is a symbolic link: kvmtune writes a backup only '
                         'under its own name (nothing was written)', backup,
                         f'remove the link {backup} (rm, not the file it '
                         'points to), then run again')
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise _error(f'cannot look at it: {exc.strerror}', backup,
                     'remove what is in the backup\'s place') from None
    real, _ = resolve(backup, backup, 'remove what is in the backup\'s '
                      'place')
    return real


def _prepare_backup(backup: str, previous: bytes,
                    like: os.stat_result) -> str | None:
    """The previous content in a temporary file beside ``backup``: written
    before the target changes (a full disk stops everything), renamed
    into place only after."""
    real = _backup_place(backup)
    replace.clean_stale(real)
    temp = replace.prepare(real, previous, like, {}, None)
    if temp is None:
        # The owner cannot be copied (not root): keep it private.
        temp = replace.prepare(real, previous, None, {}, 0o600)
    return temp


def _commit_backup(temp: str, backup: str) -> None:
    # The rename replaces whatever stands at the name (a link planted
    # since the check included), never what a link points to.
    real = os.path.abspath(backup)
    try:
        os.replace(temp, real)
    except OSError as exc:
        raise InputError(f'the new content was written, but the backup '
                         f'could not be renamed: {exc.strerror}',
                         source=backup, fix=f'the previous content is in '
                         f'{temp}; move it to {backup}') from None
