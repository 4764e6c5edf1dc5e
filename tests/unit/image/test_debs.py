"""kvmtune.image.debs: the guest's Debian packages, asked of this host's
apt (its package lists; nothing is downloaded here: fetch() is run by
the image build, tests/functional/test_image_bench.py) and unpacked with
dpkg-deb."""

import os
import re
import shutil
import subprocess

import pytest

from kvmtune.errors import KvmtuneError
from kvmtune.image import debs


def test_kernel_package_is_the_versioned_image_the_meta_names():
    name = debs.kernel_package()
    assert re.fullmatch(r'linux-image-\d[\w.-]*-amd64', name), name
    assert name != debs.KERNEL_META


def test_closure_names_the_files_apt_would_fetch(tmp_path):
    names = debs.closure(str(tmp_path), ['busybox-static'])
    # as if nothing were installed: a static binary needs nothing else
    assert len(names) == 1
    # the epoch's colon as apt writes it in the archive file name
    assert re.fullmatch(r'busybox-static_\d+%3a[^_:]+_amd64\.deb',
                        names[0]), names
    with_deps = debs.closure(str(tmp_path), ['fio'])
    assert any(n.startswith('fio_') for n in with_deps)
    assert any(n.startswith('libaio1_') for n in with_deps)


def test_an_unknown_package_is_one_line(tmp_path):
    with pytest.raises(KvmtuneError) as err:
        debs.closure(str(tmp_path), ['kvmtune-no-such-package'])
    line = err.value.line()
    assert line.startswith('apt-get -s -o failed: ')
    assert 'kvmtune-no-such-package' in line and '\n' not in line
    assert line.endswith('(fix: apt-get update, then retry)')


def test_apt_missing_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv('PATH', str(tmp_path))
    with pytest.raises(KvmtuneError, match='^apt-cache not found'):
        debs.kernel_package()


def test_extract_unpacks_each_deb(tmp_path):
    made = []
    for name in ('one', 'two'):
        pkg = tmp_path / name
        (pkg / 'DEBIAN').mkdir(parents=True)
        (pkg / 'DEBIAN' / 'control').write_text(
            f'Package: kvmtune-test-{name}\nVersion: 1.0\n'
            'Architecture: all\nMaintainer: t <t@example.org>\n'
            'Description: test\n')
        (pkg / 'usr' / 'bin').mkdir(parents=True)
        (pkg / 'usr' / 'bin' / name).write_text(name)
        deb = tmp_path / f'{name}.deb'
        subprocess.run(['dpkg-deb', '--root-owner-group', '--build',
                        str(pkg), str(deb)], check=True,
                       capture_output=True)
        shutil.rmtree(pkg)
        made.append(str(deb))
    dest = tmp_path / 'root'
    debs.extract(made, str(dest))
    assert sorted(os.listdir(dest / 'usr' / 'bin')) == ['one', 'two']
    assert (dest / 'usr' / 'bin' / 'two').read_text() == 'two'
    with pytest.raises(KvmtuneError, match='^dpkg-deb -x .* failed: '):
        debs.extract([str(tmp_path / 'missing.deb')], str(dest))
