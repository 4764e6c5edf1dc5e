"""Rally's output of a step (charts.py), through KvmTune.disk_scaling
against the in-memory Nova of fakenova.py: the throughput charted by
the workload's own figure, latency across guests never summed."""


import pytest

from kvmtune.rally.scenarios.kvmtune import disk
from kvmtune.results import units
from tests.unit.rally.scenarios import fakenova as fakes
from tests.unit.rally.scenarios.fakenova import fixture
from tests.unit.rally.scenarios.fakenova import frame
from tests.unit.rally.scenarios.fakenova import Nova
from tests.unit.rally.scenarios.fakenova import scenario
from tests.unit.rally.scenarios.fakenova import table


def test_cpu_workload_needs_no_data_disk_and_charts_events(monkeypatch):
    """sysbench-cpu in the disk scenario: no ephemeral disk asked, no
    target in the job, events/s charted, latency never summed."""
    def guest(job, instance, *start_signals):
        assert job['workload'] == 'sysbench-cpu' and job['target'] is None
        return frame(instance, 'sysbench-cpu', 'sysbench',
                     fixture('sysbench-1.0.20-cpu-1t.txt'))
    monkeypatch.setattr(fakes, 'benchmark_guest', guest)
    nova = Nova(ephemeral=0)
    scen = scenario(disk.DiskScaling, nova, iteration=2)
    scen.run(flavor='f', image='i', vm_counts=[1, 2], result_timeout=5,
             workload='sysbench-cpu', emulated=True,
             record={'profile': 'baseline'})
    rows = table(scen)
    assert [r['events_s'] for r in rows] == [1539.48, 1539.48]
    assert [r['lat_max_ns'] for r in rows] == [14320000.0, 14320000.0]
    additive = {o['title']: o for o in scen._output['additive']}
    assert f'events/s by VM count ({units.EMULATED})' in additive
    lat = additive['latency across guests (us) by VM count '
                   f'({units.EMULATED})']
    # the mean of the two guests' means and the worst max, not a sum
    assert lat['data'] == [["mean of the guests' mean latency", 640.0],
                           ["worst guest's max latency", 14320.0]]
    assert not any('aggregate' in name and 'latency' in name
                   for o in scen._output['additive']
                   for name, _ in o['data'])


def test_fio_latency_chart_takes_the_worst_p99():
    nova = Nova()
    scen = scenario(disk.DiskScaling, nova, iteration=2)
    scen.run(flavor='f', image='i', vm_counts=[1, 2], result_timeout=5)
    rows = table(scen)
    lat = [o for o in scen._output['additive']
           if o['title'].startswith('latency across guests')][0]
    assert lat['data'][1] == ["worst guest's p99 latency",
                              max(r['lat_p99_ns'] for r in rows) / 1000.0]
    assert lat['data'][0][1] == pytest.approx(
        sum(r['lat_mean_ns'] for r in rows) / 2 / 1000.0)
