"""kvmtune.facts.versions: libvirt and QEMU versions asked of the binaries
themselves, here stand-in binaries on PATH that print what the real ones
print (and worse)."""

import os
import stat

import pytest

from kvmtune.facts import versions


@pytest.fixture
def bin_dir(tmp_path, monkeypatch):
    monkeypatch.setenv('PATH', str(tmp_path))
    # no /usr/sbin fallback: only the stand-ins are found
    monkeypatch.setattr(versions, 'EXTRA_PATH', ())

    def binary(name, script):
        path = tmp_path / name
        path.write_text('#!/bin/sh\n' + script + '\n')
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return binary


def test_both_versions_from_their_first_line(bin_dir):
    bin_dir('libvirtd', 'echo "libvirtd (libvirt) 9.0.0"')
    bin_dir('qemu-system-x86_64',
            'echo "QEMU emulator version 7.2.19 (Debian 1:7.2+dfsg-7)"; '
            'echo "Copyright (c) 2003-2022 Fabrice Bellard"')
    assert versions.probe() == {'libvirt': '9.0.0', 'qemu': '7.2.19'}


def test_a_two_part_version(bin_dir):
    bin_dir('libvirtd', 'echo "libvirtd (libvirt) 10.1"')
    assert versions.probe()['libvirt'] == '10.1'


@pytest.mark.parametrize('script', [
    'echo "libvirtd: no version here"',
    'exit 1',                               # prints nothing
    'echo; echo "libvirtd (libvirt) 9.0.0"',    # not on the first line
])
def test_output_without_a_version_is_unknown(bin_dir, script):
    bin_dir('libvirtd', script)
    assert versions.probe()['libvirt'] is None


def test_missing_binaries_are_unknown(bin_dir):
    assert versions.probe() == {'libvirt': None, 'qemu': None}


def test_a_binary_that_hangs_is_unknown(bin_dir, monkeypatch):
    monkeypatch.setattr(versions, 'TIMEOUT', 0.2)
    bin_dir('qemu-system-x86_64', 'exec sleep 30')
    assert versions.probe()['qemu'] is None


def test_sbin_is_searched_without_it_on_path(tmp_path, monkeypatch):
    sbin = tmp_path / 'sbin'
    sbin.mkdir()
    libvirtd = sbin / 'libvirtd'
    libvirtd.write_text('#!/bin/sh\necho "libvirtd (libvirt) 8.0.0"\n')
    libvirtd.chmod(0o755)
    monkeypatch.setenv('PATH', os.fspath(tmp_path / 'bin'))
    monkeypatch.setattr(versions, 'EXTRA_PATH', (os.fspath(sbin),))
    assert versions.probe()['libvirt'] == '8.0.0'
