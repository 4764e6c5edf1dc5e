"""A newc (SVR4, no CRC) cpio writer: what the kernel unpacks as initramfs.

Written here so the build needs no root, no mounts and no host cpio.
"""

import stat

TRAILER = 'TRAILER!!!'


def _header(ino, mode, size, name, nlink=1):
    fields = (ino, mode, 0, 0, nlink, 0, size, 0, 0, 0, 0, len(name) + 1, 0)
    return ('070701' + ''.join(f'{v:08X}' for v in fields)).encode()


def _pad(n):
    return b'\0' * (-n % 4)


class Archive:
    """Collects entries, then ``write(fileobj)``; directories first."""

    def __init__(self):
        self.entries = []

    def add_dir(self, name, mode=0o755):
        self.entries.append((name, stat.S_IFDIR | mode, b''))

    def add_file(self, name, data, mode=0o644):
        self.entries.append((name, stat.S_IFREG | mode, data))

    def add_symlink(self, name, target):
        self.entries.append((name, stat.S_IFLNK | 0o777, target.encode()))

    def write(self, fileobj):
        entries = self.entries + [(TRAILER, 0, b'')]
        for ino, (name, mode, data) in enumerate(entries, start=1):
            head = _header(ino, mode, len(data), name,
                           nlink=2 if stat.S_ISDIR(mode) else 1)
            record = head + name.encode() + b'\0'
            fileobj.write(record + _pad(len(record)))
            fileobj.write(data + _pad(len(data)))
