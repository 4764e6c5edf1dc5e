"""analyse(runs): per-VM and aggregate figures, latency across guests,
change against the first run and against one VM, share of the bare host,
the linear fit; and what it refuses."""

import pytest

from kvmtune.errors import InputError
from kvmtune.results import analysis
from kvmtune.results import rally as rally_results
from tests.unit.report.runs import analysed
from tests.unit.report.runs import before_after_bare
from tests.unit.results.test_bench import baseline_doc
from tests.unit.results.test_bench import bench_doc
from tests.unit.results.test_bench import nested_doc
from tests.unit.results.test_bench import result
from tests.unit.results.test_rally import iteration
from tests.unit.results.test_rally import new_format


def test_two_bench_runs_and_the_bare_host(tmp_path):
    an = analysed(tmp_path, *before_after_bare())
    assert an.step_table and an.metric == 'iops' and an.emulated
    before, after = (an.points[n][0] for n in ('before', 'after'))
    assert (before.per_vm, before.aggregate) == (2000.0, 4000.0)
    # latency: mean of the guests' means, the worst guest's p99 (ns)
    assert (before.lat_mean_ns, before.lat_tail_ns) == (2000.0, 9000.0)
    assert (after.change, after.share) == (0.25, 0.25)
    assert an.bare.per_vm == 10000.0 and an.bare.change == 4.0
    assert an.workload == 'fio-randread-4k' and an.tail == 'p99'


def test_a_sweep_per_vm_aggregate_change_vs_one_vm_and_fit(tmp_path):
    an = analysed(tmp_path, ('r.json', new_format()),
                  ('bm.json', baseline_doc(result(2000.0))))
    base, tuned = an.guests
    one, two, three = an.points[base.label]
    assert two.per_vm == pytest.approx(810.0)
    assert two.aggregate == pytest.approx(1620.0)
    assert two.vs_one == pytest.approx(0.81)
    assert three.share == pytest.approx(0.3)
    assert one.change == 0.0 and one.vs_one == 1.0
    # the tuned flavor against the first one at the same VM count
    assert an.points[tuned.label][2].change == pytest.approx(0.5)
    fit = an.fits[base.label]
    assert fit.slope == pytest.approx(-200.0)
    assert fit.r2 > 0.99 and fit.linear


def test_bad_guests_are_counted_never_averaged(tmp_path):
    doc = new_format(
        {'f': [[1000.0], [800.0, 820.0]]},
        extra=[iteration([500.0], bad=[('late', 'ready after start_at')])])
    an = analysed(tmp_path, ('r.json', doc))
    two = an.points['r'][1]
    # the 2-VM step ran twice: [800, 820] and [500 + a late guest]
    assert (two.valid, two.total) == (3, 4)
    assert two.per_vm == pytest.approx((810.0 + 500.0) / 2)


def test_cpu_runs_take_events_and_the_max_as_tail(tmp_path):
    an = analysed(
        tmp_path,
        ('a.json', bench_doc([result(events=900.0, mx=5e6,
                                     workload='sysbench-cpu')],
                             workload='sysbench-cpu')),
        ('b.json', bench_doc([result(events=990.0, mx=4e6,
                                     workload='sysbench-cpu')],
                             workload='sysbench-cpu')))
    assert (an.metric, an.unit, an.tail) == ('events_s', 'events/s', 'max')
    assert an.points['b'][0].change == pytest.approx(0.1)
    assert an.points['a'][0].lat_tail_ns == 5e6


def test_nested_levels_compare_with_the_host_as_bare(tmp_path):
    an = analysed(tmp_path, ('n.json', nested_doc()))
    assert [r.label for r in an.guests] == ['L1', 'L2']
    assert an.points['L2'][0].change == pytest.approx(-0.75)
    assert an.points['L1'][0].share == pytest.approx(0.4)


def test_a_curve_that_is_not_a_line():
    fit = analysis.fit_line([1, 2, 3, 4], [100.0, 20.0, 100.0, 20.0])
    assert fit.r2 < 0.9 and not fit.linear


def test_two_points_have_a_slope_but_no_r2():
    fit = analysis.fit_line([1, 2], [10.0, 8.0])
    assert fit.slope == pytest.approx(-2.0) and fit.r2 is None


def test_different_workloads_are_refused(tmp_path):
    with pytest.raises(InputError, match='different workloads'):
        cpu = result(events=9.0, workload='sysbench-cpu')
        analysed(tmp_path, ('a.json', bench_doc([result(1000.0)])),
                 ('b.json', bench_doc([cpu], workload='sysbench-cpu')))


@pytest.mark.parametrize('bare, words', [
    (dict(baseline_doc(result(2000.0, workload='w'), workload='w'),
          record=None),
     'workload w, .* measures fio-randread-4k: figures of different '
     'workloads do not compare .*kvmtune baseline --workload '
     'fio-randread-4k'),
    (baseline_doc(result(events=5.0)), 'no iops figure'),
    (baseline_doc(dict(result(1.0), iops=0.0)), 'bare-metal iops is 0'),
])
def test_a_bare_host_without_a_figure_to_share_is_refused(tmp_path, bare,
                                                          words):
    with pytest.raises(InputError, match=words):
        analysed(tmp_path, ('a.json', bench_doc([result(1000.0)])),
                 ('bm.json', bare))


def test_figures_that_add_up_beyond_a_float_are_refused(tmp_path):
    # Before: inf and +nan% in the table, a fit made of NaN.
    huge = dict(result(1.0), iops=1e308, bw_bytes_s=None)
    with pytest.raises(InputError, match='per_vm figure is not finite'):
        analysed(tmp_path, ('huge.json', bench_doc([huge, dict(huge)])))


@pytest.mark.parametrize('guests, words', [
    # the metric (iops) is finite; the bytes/s summed beside it is not
    ([dict(result(1.0), bw_bytes_s=1.7e308)] * 2,
     'aggregate bw_bytes_s figure is not finite'),
    # a mean adds up first: two CPU shares of 1.7e308 overflow
    ([dict(result(1.0), cpu_pct=1.7e308)] * 2,
     'cpu_pct figure is not finite'),
])
def test_every_figure_of_a_point_is_finite(tmp_path, guests, words):
    with pytest.raises(InputError, match=words) as exc:
        analysed(tmp_path, ('a.json', bench_doc(guests)))
    assert exc.value.key == 'a' and 'a.json' in exc.value.line()


def test_a_change_that_overflows_is_refused(tmp_path):
    # both per-VM figures finite; their ratio is not
    with pytest.raises(InputError, match='change figure is not finite'):
        analysed(tmp_path, ('tiny.json', bench_doc([result(1e-300)])),
                 ('big.json', bench_doc([result(1e300)])))


def test_a_line_through_figures_near_the_limit_is_refused(tmp_path):
    # per-VM figures finite at 1, 2 and 3 VMs: the squares of R² are not
    docs = [(f'{n}vm.json', bench_doc([dict(result(1.0), iops=v)] * n))
            for n, v in ((1, 1e308), (2, 0.0), (3, 5e307))]
    with pytest.raises(InputError, match='line is not finite'):
        analysed(tmp_path, *docs)


def test_one_iteration_is_the_scenarios_chart_figure():
    """The Rally scenarios chart a step with analysis.point too."""
    guests = rally_results.rows_of(iteration([1000.0, 500.0])['output'])
    step = analysis.point(2, [guests], 'iops', 'lat_p99_ns')
    assert (step.per_vm, step.aggregate) == (750.0, 1500.0)
    assert step.lat_tail_ns == pytest.approx(2e9 / 500.0)


def test_no_run_is_no_analysis():
    with pytest.raises(InputError, match='no run'):
        analysis.analyse([])


def test_every_throughput_figure_summed_and_cpu_averaged(tmp_path):
    """bench local's aggregate row: every figure a guest gives, summed
    over the valid guests (IOPS and bytes/s of fio), CPU their mean."""
    a, b = result(1000.0), result(3000.0)
    a['cpu_pct'], b['cpu_pct'] = 40.0, 60.0
    an = analysed(tmp_path, ('r.json', bench_doc([a, b], failed=1)))
    p, = an.points['r']
    assert p.sums['iops'] == p.aggregate == 4000.0
    assert p.sums['bw_bytes_s'] == 4000.0 * 4096
    assert p.sums['gbit_s'] is None and p.cpu_pct == 50.0
    assert (p.valid, p.total) == (2, 3)


def test_one_change_for_every_table():
    assert analysis.change(75.0, 100.0) == -0.25
    assert analysis.change(None, 100.0) is None
    assert analysis.change(5.0, 0.0) is None
