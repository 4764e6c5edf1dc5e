"""One rollout at a time on a state file: the run's lock.

``hold(state_file, run_id)`` takes an flock(2) on ``STATE_FILE.lock``
(beside the state file, made once, kept: its content names the holder)
for the run's whole time, without waiting: a second ``kvmtune rollout``
with the same state file while one runs is refused, naming the holder
(its run id, process id, host and start). The state file's own writers'
lock (kvmtune.fileio.lock) stays free for the run's steps
(``kvmtune rollout-step`` records each step under it).
"""

from collections.abc import Iterator
import contextlib
import datetime
import errno
import fcntl
import json
import os
import socket

from kvmtune.errors import InputError


def path_of(state_file: str) -> str:
    return os.path.abspath(state_file) + '.lock'


@contextlib.contextmanager
def hold(state_file: str, run_id: str | None) -> Iterator[None]:
    """Hold the run's lock of ``state_file`` (``run_id``: the one asked
    for, None: the state file's or a new one).

    :raises InputError: another rollout holds it (named)
    """
    path = path_of(state_file)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            raise InputError(
                f'another kvmtune rollout runs on this state file: '
                f'{_holder(fd)}', source=state_file,
                fix='wait for it to finish (or stop it), then run '
                    'kvmtune rollout again with the same --state') from None
        holder = {'run_id': run_id or '(its state file\'s)',
                  'pid': os.getpid(),
                  'host': socket.gethostname(),
                  'started': datetime.datetime.now(
                      datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder).encode() + b'\n', 0)
        yield
    finally:
        os.close(fd)


def _holder(fd: int) -> str:
    try:
        doc = json.loads(os.pread(fd, 4096, 0) or b'{}')
        return (f"run {doc['run_id']}, process {doc['pid']} on "
                f"{doc['host']} since {doc['started']}")
    except (ValueError, KeyError, TypeError, OSError):
        return 'a run that did not say which'
