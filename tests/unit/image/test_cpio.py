"""kvmtune.image.cpio: the newc archive the kernel unpacks as initramfs,
read back field by field as the kernel's init/initramfs.c reads it."""

import io
import stat

from kvmtune.image import cpio


def read_newc(data):
    """[(name, mode, nlink, body)] of a newc archive, checking alignment."""
    entries = []
    pos = 0
    while True:
        assert pos % 4 == 0
        head = data[pos:pos + 110]
        assert head[:6] == b'070701'
        fields = [int(head[6 + 8 * i:14 + 8 * i], 16) for i in range(13)]
        ino, mode, uid, gid, nlink, mtime, size = fields[:7]
        namesize = fields[11]
        name = data[pos + 110:pos + 110 + namesize]
        assert name.endswith(b'\0')
        pos += 110 + namesize
        pos += -pos % 4
        body = data[pos:pos + size]
        pos += size
        pos += -pos % 4
        entries.append((name[:-1].decode(), mode, nlink, body,
                        (uid, gid, fields[-1])))
        if name[:-1] == b'TRAILER!!!':
            break
    assert pos == len(data)
    return entries


def test_entries_read_back_in_order_with_their_modes():
    archive = cpio.Archive()
    archive.add_dir('bin')
    archive.add_file('init', b'#!/bin/sh\necho hi\n', mode=0o755)
    archive.add_file('bin/empty', b'')
    archive.add_symlink('bin/sh', 'busybox')
    out = io.BytesIO()
    archive.write(out)
    entries = read_newc(out.getvalue())
    assert [(name, stat.S_IFMT(mode), stat.S_IMODE(mode), nlink, body)
            for name, mode, nlink, body, _ in entries] == [
        ('bin', stat.S_IFDIR, 0o755, 2, b''),
        ('init', stat.S_IFREG, 0o755, 1, b'#!/bin/sh\necho hi\n'),
        ('bin/empty', stat.S_IFREG, 0o644, 1, b''),
        ('bin/sh', stat.S_IFLNK, 0o777, 1, b'busybox'),
        ('TRAILER!!!', 0, 0, 1, b'')]
    # owned by root, no CRC (the newc, not the crc, format)
    assert {rest for *_, rest in entries} == {(0, 0, 0)}


def test_every_name_and_body_length_is_padded_to_four():
    archive = cpio.Archive()
    for length in range(1, 9):
        archive.add_file('f' * length, b'x' * length)
    out = io.BytesIO()
    archive.write(out)
    entries = read_newc(out.getvalue())
    assert [(name, body) for name, _, _, body, _ in entries[:-1]] == [
        ('f' * n, b'x' * n) for n in range(1, 9)]


def test_an_empty_archive_is_the_trailer_alone():
    out = io.BytesIO()
    cpio.Archive().write(out)
    assert [e[0] for e in read_newc(out.getvalue())] == [cpio.TRAILER]
