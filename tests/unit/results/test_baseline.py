"""A baseline file: its shape checked, read as the bare host's Run."""

import pytest

from kvmtune.errors import InputError
from kvmtune.results import baseline
from tests.unit.results.test_bench import baseline_doc
from tests.unit.results.test_bench import result


def test_a_baseline_is_the_bare_hosts_run_of_one_row():
    run = baseline.run_of(baseline_doc(result(events=1500.0, mx=2e6),
                                       workload='sysbench-cpu'), 'b.json')
    assert run.bare and run.label == 'bare host' and not run.emulated
    row, = run.rows
    assert (row.events_s, row.lat_ns.max, row.accel) == (1500.0, 2e6,
                                                         'bare')
    assert run.workload == 'sysbench-cpu'


@pytest.mark.parametrize('change, key', [
    (lambda d: d.update(kind='x'), 'kind'),
    (lambda d: d.update(emulated=True), 'emulated'),
    (lambda d: d['result'].update(iops=float('nan')), 'result.iops'),
    (lambda d: d['result'].update(lat_max_ns='x'), 'result.lat_max_ns'),
    (lambda d: d['result'].update(iops=None, bw_bytes_s=None), 'result'),
])
def test_a_baseline_of_the_wrong_shape_names_its_key(change, key):
    doc = baseline_doc(result(1000.0))
    change(doc)
    with pytest.raises(InputError) as caught:
        baseline.validate(doc, 'b.json')
    assert caught.value.key == key
