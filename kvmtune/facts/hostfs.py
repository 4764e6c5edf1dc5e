"""Read files under a root directory, remembering what was looked at.

``kvmtune host capture`` replays that record to copy exactly the files
``gather()`` reads, so a captured tree answers every question the live host
answered (see kvmtune/cmd/host_capture.py).
"""

import os
import stat

# The largest file read under /proc or /sys: /proc/cpuinfo of a 4096-CPU
# host is about 6 MiB (~1.5 kB a CPU); nothing kvmtune reads is near this.
MAX_BYTES = 32 * 1024 * 1024


class HostFiles:
    """The /proc, /sys and /dev view of one host, live or captured."""

    def __init__(self, root='/'):
        self.root = root
        self.contents = {}      # path -> bytes read (None: unreadable)
        self.existence = {}     # path -> 'dir' | 'file' | None
        self.listed = set()     # directories whose entries were listed
        self.refused = {}       # path -> why it was not read (not missing)
        # A captured tree is read only inside itself: a link that leads
        # out of it (to the machine's own /etc, say) is not followed.
        self._inside = None if os.path.realpath(root) == '/' \
            else os.path.realpath(root)

    def _abs(self, path):
        return os.path.join(self.root, path.lstrip('/'))

    def _outside(self, full):
        if self._inside is None:
            return False
        real = os.path.realpath(full)
        return os.path.commonpath([real, self._inside]) != self._inside

    def _opened_outside(self, fd, full):
        """Whether the file open as ``fd`` lies outside a captured tree:
        one readlink of /proc/self/fd (realpath's walk, component by
        component, doubled gather's time on a 4,096-CPU tree)."""
        if self._inside is None:
            return False
        try:
            real = os.readlink(f'/proc/self/fd/{fd}')
        except OSError:
            return self._outside(full)
        return os.path.commonpath([real, self._inside]) != self._inside

    def _read_bounded(self, path):
        """The bytes of a regular file, at most MAX_BYTES; None (and the
        reason in ``refused``) for a FIFO, device, socket, directory, a
        link out of a captured tree or a file too large: opened without
        blocking, so a FIFO in place of /proc/meminfo cannot hang us."""
        full = self._abs(path)
        try:
            fd = os.open(full, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            if self._opened_outside(fd, full):
                self.refused[path] = 'a link out of the captured tree'
                return None
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                self.refused[path] = 'not a regular file'
                return None
            chunks, size = [], 0
            while True:
                chunk = os.read(fd, 1024 * 1024)
                if not chunk:
                    return b''.join(chunks)
                size += len(chunk)
                if size > MAX_BYTES:
                    self.refused[path] = f'larger than {MAX_BYTES} bytes'
                    return None
                chunks.append(chunk)
        except OSError:
            return None
        finally:
            os.close(fd)

    def read(self, path):
        """Return a file's text, stripped, or None if missing/unreadable."""
        if path not in self.contents:
            self.contents[path] = self._read_bounded(path)
        data = self.contents[path]
        return None if data is None else data.decode('utf-8', 'replace')

    def read_value(self, path):
        text = self.read(path)
        return None if text is None else text.strip()

    def read_int(self, path):
        text = self.read_value(path)
        try:
            return int(text)
        except (TypeError, ValueError):
            return None

    def exists(self, path):
        if path not in self.existence:
            full = self._abs(path)
            kind = None
            if self._outside(full):
                self.refused[path] = 'a link out of the captured tree'
            elif os.path.isdir(full):
                kind = 'dir'
            elif os.path.lexists(full):
                kind = 'file'
            self.existence[path] = kind
        return self.existence[path] is not None

    def listdir(self, path):
        """Return the sorted entry names of a directory ([] if missing)."""
        self.listed.add(path)
        if self._outside(self._abs(path)):
            self.refused[path] = 'a link out of the captured tree'
            return []
        try:
            return sorted(os.listdir(self._abs(path)))
        except OSError:
            return []
