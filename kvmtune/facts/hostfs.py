"""Read files under a root directory, remembering what was looked at.

``kvmtune host capture`` replays that record to copy exactly the files
``gather()`` reads, so a captured tree answers every question the live host
answered (see kvmtune/cmd/host_capture.py).
"""

import os

from kvmtune.errors import InputError
from kvmtune import inputs

# The largest file read under /proc or /sys: /proc/cpuinfo of a 4096-CPU
# host is about 6 MiB (~1.5 kB a CPU); nothing kvmtune reads is near this.
MAX_BYTES = 32 * 1024 * 1024


def _real(path: str) -> str:
    """os.path.realpath(path), from the kernel where ``path`` opens: its
    /proc/self/fd link, as kvmtune.inputs checks a file it opened, one
    open instead of realpath's lstat of each component (a third of the
    facts' time per host at --check over 500 hosts,
    benchmarks/rollout_check.py). O_PATH opens nothing for reading (no
    FIFO waits, no device is touched). A path that does not open (not
    there, a loop, no access): realpath's answer, as before."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return os.path.realpath(path)
    try:
        return os.readlink(f'/proc/self/fd/{fd}')
    except OSError:
        return os.path.realpath(path)
    finally:
        os.close(fd)


class HostFiles:
    """The /proc, /sys and /dev view of one host, live or captured."""

    def __init__(self, root: str = '/') -> None:
        self.root = root
        # path -> bytes read (None: unreadable)
        self.contents: dict[str, bytes | None] = {}
        # path -> 'dir' | 'file' | None
        self.existence: dict[str, str | None] = {}
        # directories whose entries were listed
        self.listed: set[str] = set()
        # path -> why it was not read (not missing)
        self.refused: dict[str, str] = {}
        # A captured tree is read only inside itself: a link that leads
        # out of it (to the machine's own /etc, say) is not followed.
        real = os.path.realpath(root)
        self._inside = None if real == '/' else real

    def _abs(self, path: str) -> str:
        return os.path.join(self.root, path.lstrip('/'))

    def _outside(self, full: str) -> bool:
        if self._inside is None:
            return False
        return not inputs.within(_real(full), self._inside)

    def _read_bounded(self, path: str) -> bytes | None:
        """The bytes of a regular file, at most MAX_BYTES, through the one
        bounded reader (kvmtune.inputs); None, and the reason in
        ``refused``, for a FIFO, device, socket, directory, a link out of
        a captured tree or a file too large: opened without blocking, so a
        FIFO in place of /proc/meminfo cannot hang us. A missing file is
        simply None."""
        try:
            return inputs.read_bytes(self._abs(path), max_bytes=MAX_BYTES,
                                     inside=self._inside)
        except InputError as exc:
            if exc.problem != 'no such file':
                self.refused[path] = exc.problem
            return None

    def read(self, path: str) -> str | None:
        """Return a file's text, stripped, or None if missing/unreadable."""
        if path not in self.contents:
            self.contents[path] = self._read_bounded(path)
        data = self.contents[path]
        return None if data is None else data.decode('utf-8', 'replace')

    def read_value(self, path: str) -> str | None:
        text = self.read(path)
        return None if text is None else text.strip()

    def read_int(self, path: str) -> int | None:
        text = self.read_value(path)
        try:
            return int(text)    # type: ignore[arg-type]  # None: TypeError
        except (TypeError, ValueError):
            return None

    def exists(self, path: str) -> bool:
        if path not in self.existence:
            full = self._abs(path)
            kind = None
            if self._outside(full):
                self.refused[path] = 'is a link out of the tree'
            elif os.path.isdir(full):
                kind = 'dir'
            elif os.path.lexists(full):
                kind = 'file'
            self.existence[path] = kind
        return self.existence[path] is not None

    def listdir(self, path: str) -> list[str]:
        """Return the sorted entry names of a directory ([] if missing)."""
        self.listed.add(path)
        if self._outside(self._abs(path)):
            self.refused[path] = 'is a link out of the tree'
            return []
        try:
            return sorted(os.listdir(self._abs(path)))
        except OSError:
            return []
