"""kvmtune.image.fio_static: the deb-src list made from the host's own apt
sources (one-line and deb822), a cached static fio reused, and a missing
compiler named before anything is fetched. Compiling fio itself is the
image build's (tests/functional/test_image_bench.py)."""

import pytest

from kvmtune.errors import KvmtuneError
from kvmtune.image import fio_static


def apt_root(tmp_path, sources_list=None, **parts):
    root = tmp_path / 'root'
    (root / 'etc/apt/sources.list.d').mkdir(parents=True)
    if sources_list is not None:
        (root / 'etc/apt/sources.list').write_text(sources_list)
    for name, text in parts.items():
        (root / 'etc/apt/sources.list.d' / name.replace('_', '.')).write_text(
            text)
    return str(root)


def test_one_line_entries_become_deb_src(tmp_path):
    root = apt_root(
        tmp_path,
        '# a comment\n'
        'deb http://deb.debian.org/debian bookworm main\n'
        'deb-src http://deb.debian.org/debian bookworm main\n'
        '  deb [arch=amd64] http://mirror.example/debian bookworm main\n',
        extra_list='deb http://security.debian.org bookworm-security main\n')
    one_line, deb822 = fio_static._deb_src_lists(root)
    assert one_line.splitlines() == [
        'deb-src http://deb.debian.org/debian bookworm main',
        'deb-src [arch=amd64] http://mirror.example/debian bookworm main',
        'deb-src http://security.debian.org bookworm-security main']
    assert deb822 == '\n'


def test_deb822_stanzas_get_types_deb_src(tmp_path):
    root = apt_root(tmp_path, debian_sources=(
        'Types: deb\n'
        'URIs: http://deb.debian.org/debian\n'
        'Suites: bookworm bookworm-updates\n'
        'Components: main\n'
        '# a note\n'
        '\n'
        'Types: deb-src\n'
        'URIs: http://only.sources.example\n'
        'Suites: bookworm\n'))
    one_line, deb822 = fio_static._deb_src_lists(root)
    assert one_line == '\n'
    assert deb822 == ('Types: deb-src\n'
                      'URIs: http://deb.debian.org/debian\n'
                      'Suites: bookworm bookworm-updates\n'
                      'Components: main\n')


def test_no_deb_entry_at_all_is_refused(tmp_path):
    root = apt_root(tmp_path, '# nothing\n')
    with pytest.raises(KvmtuneError, match='no deb entries in the apt '
                                           'sources') as err:
        fio_static._deb_src_lists(root)
    assert 'without --static-fio' in err.value.line()


def test_a_cached_binary_is_reused_without_tools(tmp_path, monkeypatch):
    cached = tmp_path / 'fio-static' / '3.33-3' / 'fio'
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b'\x7fELF')
    monkeypatch.setenv('PATH', str(tmp_path / 'empty'))
    said = []
    assert fio_static.build(str(tmp_path), '3.33-3', 'sysroot', 'work',
                            log=said.append) == str(cached)
    assert said == ['static fio 3.33-3: reused from the cache']


def test_a_missing_compiler_is_named_first(tmp_path, monkeypatch):
    monkeypatch.setenv('PATH', str(tmp_path / 'empty'))
    with pytest.raises(KvmtuneError) as err:
        fio_static.build(str(tmp_path), '3.33-3', 'sysroot', 'work')
    assert err.value.line() == ('gcc not found (needed by --static-fio) '
                                '(fix: apt-get install gcc)')
    assert not (tmp_path / 'src').exists()
