"""A Run: its rows, emulation, workload and the failures it lists."""

import pytest

from kvmtune.results import kinds
from kvmtune.results import row as rows
from kvmtune.results import run as runs
from tests.unit.results.test_bench import result


def test_a_run_lists_its_guests_without_a_result_and_failed_iterations():
    good = rows.from_result('a', 'client', result(1000.0))
    bad = rows.failed('b', 'client', rows.ERROR, 'fio: boom')
    run = runs.Run('x', 'x.json', kinds.RALLY, None,
                   {2: [[good, bad]], 1: [[good]]}, errors=['Timeout: 9'])
    assert run.rows == [good, good, bad]
    assert run.emulated and run.workload == 'fio-randread-4k'
    assert not run.bare
    assert run.failures == ['2 VMs: b: error (fio: boom)',
                            'iteration failed: Timeout: 9']


def test_a_run_kind_is_known():
    with pytest.raises(ValueError):
        runs.Run('x', 'x.json', 'other', None, {})
