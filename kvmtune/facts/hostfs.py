"""Read files under a root directory, remembering what was looked at.

``kvmtune host capture`` replays that record to copy exactly the files
``gather()`` reads, so a captured tree answers every question the live host
answered (see kvmtune/cmd/host_capture.py).
"""

import os


class HostFiles:
    """The /proc, /sys and /dev view of one host, live or captured."""

    def __init__(self, root='/'):
        self.root = root
        self.contents = {}      # path -> bytes read (None: unreadable)
        self.existence = {}     # path -> 'dir' | 'file' | None
        self.listed = set()     # directories whose entries were listed

    def _abs(self, path):
        return os.path.join(self.root, path.lstrip('/'))

    def read(self, path):
        """Return a file's text, stripped, or None if missing/unreadable."""
        if path not in self.contents:
            try:
                with open(self._abs(path), 'rb') as f:
                    self.contents[path] = f.read()
            except OSError:
                self.contents[path] = None
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
            if os.path.isdir(full):
                kind = 'dir'
            elif os.path.lexists(full):
                kind = 'file'
            self.existence[path] = kind
        return self.existence[path] is not None

    def listdir(self, path):
        """Return the sorted entry names of a directory ([] if missing)."""
        self.listed.add(path)
        try:
            return sorted(os.listdir(self._abs(path)))
        except OSError:
            return []
