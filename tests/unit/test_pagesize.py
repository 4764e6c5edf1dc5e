"""kvmtune.pagesize: the one page-size formatter and parser, on the
spellings the kernel, profiles and pool specs use."""

import pytest

from kvmtune import pagesize

KB_2M, KB_1G = 2048, 1024 * 1024


@pytest.mark.parametrize('size_kb, spaced, compact', [
    (KB_2M, '2 MB', '2M'), (KB_1G, '1 GB', '1G'), (16 * KB_1G, '16 GB', '16G'),
    (64, '64 kB', '64k'), (512 * 1024, '512 MB', '512M'),
    (3 * 1024 + 512, '3584 kB', '3584k')])
def test_text_takes_the_largest_unit_that_divides(size_kb, spaced, compact):
    assert pagesize.text(size_kb) == spaced
    assert pagesize.text(size_kb, compact=True) == compact


@pytest.mark.parametrize('spelled, kib', [
    ('2M', KB_2M), ('2MB', KB_2M), ('2m', KB_2M), ('1G', KB_1G),
    ('1GiB', KB_1G), ('2048k', KB_2M), ('2048', KB_2M), (2048, KB_2M),
    (' 1G ', KB_1G), ('1T', 1024 * KB_1G)])
def test_kib_reads_every_spelling(spelled, kib):
    assert pagesize.kib(spelled) == kib


def test_a_bare_number_is_bytes_on_the_kernel_command_line():
    assert pagesize.kib('2097152', bare='bytes') == KB_2M
    assert pagesize.kib('2M', bare='bytes') == KB_2M
    with pytest.raises(ValueError, match='no whole KiB'):
        pagesize.kib('1000', bare='bytes')


@pytest.mark.parametrize('bad', ['x', '', 'large', '2X', '-2M', '1.5G'])
def test_kib_refuses_what_is_no_size(bad):
    with pytest.raises(ValueError, match='is not a page size'):
        pagesize.kib(bad)


def test_text_and_kib_round_trip():
    for size_kb in (64, KB_2M, 32 * 1024, KB_1G, 16 * KB_1G):
        assert pagesize.kib(pagesize.text(size_kb, compact=True)) == size_kb
