"""kvmtune.results.units: one table of units, which the renderer and the
charts scale by."""

import pytest

from kvmtune.report import render
from kvmtune.results import units


def test_bytes_per_second_print_in_mib_per_second():
    assert units.UNITS['bw_bytes_s'][0] == 'MiB/s'
    # 100 MiB/s, not 104.9 (MB/s)
    assert render.figure('bw_bytes_s', 100 * 1048576) == '100'
    assert render.figure('lat_mean_ns', 2500.0) == '2.5'


def test_throughput_picks_entries_in_the_order_asked():
    assert units.throughput('tps', 'iops') == (
        ('tps', 'transactions/s', 1.0), ('iops', 'IOPS', 1.0))
    with pytest.raises(KeyError):
        units.throughput('bogus')


def test_every_throughput_figure_is_a_row_column():
    from kvmtune.results import row

    assert {k for k, _, _ in units.THROUGHPUT} == set(row.THROUGHPUT)
    assert set(units.UNITS) <= set(row.COLUMNS)


def test_the_emulated_label_is_in_the_report_title():
    from kvmtune.results import analysis
    from kvmtune.results import read
    import os
    from tests import paths

    path = os.path.join(paths.FIXTURES, 'outputs',
                        'rally-disk-sweep-1-at-tcg.json')
    an = analysis.analyse(read.load_all([path]))
    assert render.title(an).endswith(f'({units.EMULATED})')
