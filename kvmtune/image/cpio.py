"""A newc (SVR4, no CRC) cpio writer: what the kernel unpacks as initramfs.

Written here so the build needs no root, no mounts and no host cpio.
"""

import stat
from typing import BinaryIO

TRAILER = 'TRAILER!!!'


def _header(ino: int, mode: int, size: int, name: str,
            nlink: int = 1) -> bytes:
    fields = (ino, mode, 0, 0, nlink, 0, size, 0, 0, 0, 0, len(name) + 1, 0)
    return ('070701' + ''.join(f'{v:08X}' for v in fields)).encode()


def _pad(n: int) -> bytes:
    return b'\0' * (-n % 4)


class Archive:
    """Collects entries, then ``write(fileobj)``; directories first."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, int, bytes]] = []

    def add_dir(self, name: str, mode: int = 0o755) -> None:
        self.entries.append((name, stat.S_IFDIR | mode, b''))

    def add_file(self, name: str, data: bytes, mode: int = 0o644) -> None:
        self.entries.append((name, stat.S_IFREG | mode, data))

    def add_symlink(self, name: str, target: str) -> None:
        self.entries.append((name, stat.S_IFLNK | 0o777, target.encode()))

    def write(self, fileobj: BinaryIO) -> None:
        entries = self.entries + [(TRAILER, 0, b'')]
        for ino, (name, mode, data) in enumerate(entries, start=1):
            head = _header(ino, mode, len(data), name,
                           nlink=2 if stat.S_ISDIR(mode) else 1)
            record = head + name.encode() + b'\0'
            fileobj.write(record + _pad(len(record)))
            fileobj.write(data + _pad(len(data)))
