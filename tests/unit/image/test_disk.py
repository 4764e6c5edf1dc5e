"""kvmtune.image.disk: a BIOS-bootable raw disk made without root or
mounts (mkfs.vfat, mtools, syslinux, qemu-img: the real tools), read back
with mtools and qemu-img."""

import json
import struct
import subprocess

import pytest

from kvmtune.errors import KvmtuneError
from kvmtune.image import disk


@pytest.fixture
def files(tmp_path):
    kernel = tmp_path / 'vmlinuz'
    kernel.write_bytes(b'K' * 3000)
    tool = tmp_path / 'fio'
    tool.write_bytes(b'F' * 5000)
    return [(str(kernel), '/vmlinuz'), (str(tool), '/usr/bin/fio')]


def mtools(*argv):
    return subprocess.run(argv, capture_output=True, text=True, check=True,
                          env={'MTOOLS_SKIP_CHECK': '1', 'PATH':
                               '/usr/bin:/bin'}).stdout


def test_fat_holds_the_files_and_syslinux(tmp_path, files):
    fat = str(tmp_path / 'part.fat')
    disk.make_fat(fat, files, 'KVMTUNE')
    listing = mtools('mdir', '-a', '-i', fat, '-b', '-/', '::/')
    assert '::/VMLINUZ' in listing.upper()
    assert '::/USR/BIN/FIO' in listing.upper()
    assert '::/LDLINUX.SYS' in listing.upper()
    copied = tmp_path / 'back'
    mtools('mcopy', '-i', fat, '::/usr/bin/fio', str(copied))
    assert copied.read_bytes() == b'F' * 5000
    assert 'KVMTUNE' in mtools('minfo', '-i', fat, '::')


def test_raw_has_an_mbr_with_one_bootable_fat16_partition(tmp_path, files):
    fat = str(tmp_path / 'part.fat')
    disk.make_fat(fat, files, 'KVMTUNE')
    raw = str(tmp_path / 'disk.raw')
    disk.make_raw(raw, fat)
    data = open(raw, 'rb').read()
    assert data[510:512] == b'\x55\xaa'
    with open(disk.MBR_BIN, 'rb') as f:
        assert data[:440] == f.read(440)
    boot, kind, start, sectors = struct.unpack_from('<B3xB3xII', data, 446)
    assert (boot, kind) == (0x80, disk.FAT16_LBA)
    assert start * disk.SECTOR == disk.PART_OFFSET
    fat_bytes = open(fat, 'rb').read()
    assert sectors * disk.SECTOR == len(fat_bytes)
    assert data[disk.PART_OFFSET:] == fat_bytes
    # no other partition
    assert data[462:510] == b'\0' * 48

    qcow2 = str(tmp_path / 'disk.qcow2')
    disk.make_qcow2(raw, qcow2)
    info = json.loads(subprocess.run(
        ['qemu-img', 'info', '--output=json', qcow2], capture_output=True,
        text=True, check=True).stdout)
    assert info['format'] == 'qcow2'
    assert info['virtual-size'] == len(data)


def test_a_failing_tool_is_one_line(tmp_path, files):
    # '*' is no FAT name: mcopy refuses it
    with pytest.raises(KvmtuneError, match=r'^mcopy -i .* ::/a\*b failed:'
                       ) as err:
        disk.make_fat(str(tmp_path / 'part.fat'), [(files[0][0], '/a*b')],
                      'KVMTUNE')
    assert '\n' not in err.value.line()


def test_a_missing_host_tool_names_its_package(monkeypatch, tmp_path):
    monkeypatch.setenv('PATH', str(tmp_path))
    with pytest.raises(KvmtuneError) as err:
        disk.check_host_tools()
    assert err.value.line() == ('mkfs.vfat not found (fix: apt-get install '
                                'dosfstools)')


def test_the_host_tools_are_here():
    assert disk.check_host_tools() is None
