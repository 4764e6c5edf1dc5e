"""kvmtune.bench.targets: a write workload never runs on a target holding
data unasked; what a device holds is named from its signature."""

import os

import pytest

from kvmtune.bench import targets


def test_write_refuses_a_file_holding_data(tmp_path):
    path = tmp_path / 'data.img'
    path.write_bytes(b'precious')
    assert targets.refusal(str(path), writes=True) == 'a file holding data'
    assert targets.refusal(str(path), writes=False) is None
    (tmp_path / 'empty.img').write_bytes(b'')
    assert targets.refusal(str(tmp_path / 'empty.img'), writes=True) is None
    assert targets.refusal(str(tmp_path / 'new.img'), writes=True) is None


def test_signatures_are_recognised(tmp_path):
    ext4 = bytearray(70000)
    ext4[1080:1082] = b'\x53\xef'
    (tmp_path / 'fs').write_bytes(bytes(ext4))
    assert targets.signature(str(tmp_path / 'fs')) == \
        'an ext2/3/4 filesystem'
    mbr = bytearray(70000)
    mbr[510:512] = b'\x55\xaa'
    (tmp_path / 'disk').write_bytes(bytes(mbr))
    assert targets.signature(str(tmp_path / 'disk')) == \
        'an MBR partition table'
    (tmp_path / 'zero').write_bytes(bytes(70000))
    assert targets.signature(str(tmp_path / 'zero')) is None


@pytest.mark.parametrize('offset, magic, what', [
    (offset, magic, what) for offset, magic, what in targets.SIGNATURES])
def test_every_signature_at_its_offset(tmp_path, offset, magic, what):
    image = bytearray(70000)
    image[offset:offset + len(magic)] = magic
    path = tmp_path / 'image'
    path.write_bytes(bytes(image))
    assert targets.signature(str(path)) == what
    # one byte further it is nothing
    shifted = bytearray(70000)
    shifted[offset + 1:offset + 1 + len(magic)] = magic
    path.write_bytes(bytes(shifted))
    assert targets.signature(str(path)) is None


def test_a_file_shorter_than_the_signatures_is_read(tmp_path):
    path = tmp_path / 'short'
    path.write_bytes(b'XFSB')
    assert targets.signature(str(path)) == 'an XFS filesystem'
    path.write_bytes(b'')
    assert targets.signature(str(path)) is None


def test_a_fifo_or_directory_is_neither_file_nor_device(tmp_path):
    os.mkfifo(tmp_path / 'fifo')
    for path in (tmp_path / 'fifo', tmp_path):
        assert targets.refusal(str(path), writes=True) == \
            'neither a file nor a block device'
        assert targets.refusal(str(path), writes=False) is None
