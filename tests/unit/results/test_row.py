"""The Row: one guest in one unit set, flat for tables and files."""

import pytest

from kvmtune.errors import InputError
from kvmtune.results import row as rows
from tests.unit.results.test_bench import result


def test_a_result_becomes_a_row_and_back_unchanged():
    made = rows.from_result('vm-0', 'client', result(1000.0, p99=3e6,
                                                     mx=9e6), 'tcg')
    assert made.ok and made.iops == 1000.0 and made.bw_bytes_s == 4096000.0
    assert made.lat_ns == rows.Latency(1000.0, None, None, 3e6, 9e6)
    flat = made.flat()
    assert list(flat) == list(rows.COLUMNS)
    assert flat['lat_p99_ns'] == 3e6 and flat['accel'] == 'tcg'
    assert rows.from_flat(flat) == made
    assert made.figure('lat_max_ns') == 9e6 and made.figure('tps') is None


def test_the_old_table_columns_are_read_once_into_the_unit_set():
    old = {'instance': 'a', 'status': 'ok', 'bw_MiB_s': 2.0,
           'lat_mean_us': 1.5, 'lat_p99_us': 3.0, 'lat_max_us': 4.0}
    made = rows.from_flat(old)
    assert made.bw_bytes_s == 2.0 * 1048576
    assert made.lat_ns == rows.Latency(1500.0, None, None, 3000.0, 4000.0)


def test_times_round_to_hundredths():
    made = rows.failed('a', 'client', rows.LATE, 'ready at 9')
    assert made.with_times(ready_s=9.456, start_s=None).ready_s == 9.46
    assert not made.ok and made.measuring


@pytest.mark.parametrize('data, words', [
    ({'status': 'ok', 'iops': -1.0}, 'below 0'),
    ({'status': 'ok', 'iops': '12'}, 'not a number'),
    ({'status': 'ok', 'iops': float('inf')}, 'not a finite number'),
    ({'status': 'maybe'}, 'unknown status'),
    ({'iops': 1.0}, 'without a status'),
    (7, 'without a status'),
])
def test_a_row_not_of_the_shape_is_one_input_error(data, words):
    with pytest.raises(InputError, match=words):
        rows.from_flat(data, 'f.json')


def test_a_legacy_figure_that_overflows_in_the_unit_set_is_refused():
    # 1e305 MiB/s is finite in the file, 1e311 bytes/s is not
    with pytest.raises(InputError) as exc:
        rows.from_flat({'status': 'ok', 'bw_MiB_s': 1e305}, 'f.json',
                       'row 2')
    assert exc.value.key == 'row 2.bw_MiB_s'
    assert 'beyond any real measurement' in exc.value.line()


def test_a_status_is_one_of_the_verdicts():
    with pytest.raises(ValueError):
        rows.Row('a', status='great')
