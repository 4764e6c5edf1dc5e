"""kvmtune report A.json B.json: runs of bench local, baselines and Rally
sweeps compared (change against the first run, bare-host share, latency
across guests, fits side by side), the refusal of different workloads,
and the table, PNG and HTML."""

import json

import pytest

from kvmtune import cli
from kvmtune.report import compare
from kvmtune.report import vmtable


def result(iops=None, events=None, lat=1000.0, p99=None, mx=None,
           workload='fio-randread-4k', emulated=True):
    return {'tool': 'fio' if iops else 'sysbench', 'workload': workload,
            'iops': iops, 'events_s': events,
            'bw_bytes_s': iops * 4096.0 if iops else None,
            'lat_ns': {'mean': lat, 'p50': None, 'p95': None, 'p99': p99},
            'lat_max_ns': mx, 'gbit_s': None, 'tps': None, 'cpu_pct': None,
            'emulated': emulated}


def bench_doc(results, workload='fio-randread-4k', digest='h1',
              settings=None, failed=0):
    rows = [{'vm': i, 'status': 'ok', 'reason': '', 'result': r,
             'instance_id': f'i-{i}'} for i, r in enumerate(results)]
    rows += [{'vm': len(rows) + i, 'status': 'late', 'reason': 'ready at 9',
              'result': None, 'instance_id': f'x-{i}'}
             for i in range(failed)]
    return {'schema': 1, 'kind': 'kvmtune-bench-local',
            'workload': workload, 'emulated': True, 'rows': rows,
            'record': {'kind': 'bench-local', 'accel': 'tcg',
                       'settings': settings or {},
                       'host': {'digest': digest, 'hostname': digest,
                                'cpu_model': 'cpu'},
                       'workload': {'name': workload, 'params': {},
                                    'runtime': 10}}}


def baseline_doc(res, workload='fio-randread-4k'):
    return {'schema': 1, 'kind': 'kvmtune-baseline', 'time': 'T',
            'workload': workload, 'params': {}, 'runtime': 10,
            'emulated': False, 'result': dict(res, emulated=False),
            'record': {'kind': 'baseline', 'accel': 'bare',
                       'host': {'digest': 'h1', 'hostname': 'h1',
                                'cpu_model': 'cpu'},
                       'workload': {'name': workload, 'params': {},
                                    'runtime': 10}}}


def write(tmp_path, name, doc):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def test_two_bench_runs_and_the_bare_host_as_a_step_table(tmp_path):
    a = write(tmp_path, 'before.json', bench_doc(
        [result(1000.0, p99=4000.0), result(3000.0, lat=3000.0,
                                            p99=9000.0)]))
    b = write(tmp_path, 'after.json', bench_doc(
        [result(2500.0, p99=5000.0), result(2500.0, p99=6000.0)],
        settings={'cache': 'writeback'}))
    bare = write(tmp_path, 'bare.json', baseline_doc(result(10000.0)))
    cmp = compare.load_all([a, b, bare])
    assert cmp.step_table and cmp.metric == 'iops' and cmp.emulated
    before, after = (cmp.points[n][0] for n in ('before', 'after'))
    assert before.per_vm == 2000.0 and before.aggregate == 4000.0
    assert after.per_vm == 2500.0
    # latency: mean of the guests' means, the worst guest's p99
    assert before.lat_mean_us == 2.0 and before.lat_tail_us == 9.0
    header, rows = compare.step_rows(cmp)
    assert header == ['', 'before', 'after', 'bare host']
    by = {r[0]: r[1:] for r in rows}
    assert by['per-VM IOPS'] == ['2,000', '2,500', '10,000']
    assert by['change vs before'] == ['+0.0%', '+25.0%', '+400.0%']
    assert by['share of bare host'] == ['20.0%', '25.0%', '100.0%']
    assert by['lat p99, worst guest (us)'] == ['9.0', '6.0', '-']
    text = compare.text(cmp)
    assert text.startswith('comparison of 2 run(s), fio-randread-4k '
                           '(emulated')
    assert '[cache=writeback]' in text


def test_runs_over_vm_counts_with_fits_side_by_side(tmp_path):
    one = write(tmp_path, 'one.json', bench_doc([result(1000.0)]))
    two = write(tmp_path, 'two.json', bench_doc([result(800.0)] * 2))
    three = write(tmp_path, 'three.json', bench_doc([result(600.0)] * 3))
    after = write(tmp_path, 'after.json', bench_doc(
        [result(900.0)] * 3, settings={'pinning': 'on'}))
    # consecutive runs of one setup at other VM counts: one local sweep
    cmp = compare.load_all([one, two, three, after])
    assert not cmp.step_table
    header, rows = compare.vm_rows(cmp)
    assert [r[:5] for r in rows] == [
        ['1', 'one+', '1,000', '1,000', '+0.0%'],
        ['2', 'one+', '800', '1,600', '+0.0%'],
        ['3', 'one+', '600', '1,800', '+0.0%'],
        ['3', 'after', '900', '2,700', '+50.0%']]
    fit = cmp.fits['one+']
    assert fit.slope == pytest.approx(-200.0) and fit.r2 == 1.0
    assert cmp.fits['after'].slope is None     # one VM count: no line


def rally_iteration(figures, workload='fio-randread-4k'):
    rows = [vmtable.ok_row(f'vm-{i}', 'client', result(v, p99=2e6 / v))
            for i, v in enumerate(figures)]
    return {'duration': 1.0, 'timestamp': 0, 'idle_duration': 0,
            'error': [], 'atomic_actions': [],
            'output': {'additive': [],
                       'complete': [vmtable.table_output(rows, True)]}}


def rally_doc(steps, flavor='m1.bench', workload='fio-randread-4k'):
    sweep = {'scenario': {'KvmTune.disk_scaling': {
                 'flavor': {'name': flavor}, 'workload': workload,
                 'runtime': 10, 'emulated': True}},
             'data': [rally_iteration(s) for s in steps],
             'sla_results': {'sla': []}}
    return {'info': {}, 'tasks': [{'created_at': '2026-11-22T20:00:00',
                                   'subtasks': [{'workloads': [sweep]}]}]}


def test_two_rally_sweeps_before_and_after(tmp_path):
    a = write(tmp_path, 'default.json', rally_doc(
        [[1000.0], [800.0, 800.0], [600.0, 600.0, 600.0]]))
    b = write(tmp_path, 'tuned.json', rally_doc(
        [[1100.0], [1000.0, 1000.0], [900.0, 900.0, 900.0]]))
    cmp = compare.load_all([a, b])
    header, rows = compare.vm_rows(cmp)
    tuned_at_3 = [r for r in rows if r[0] == '3' and 'tuned' in r[1]][0]
    assert tuned_at_3[2] == '900' and tuned_at_3[3] == '2,700'
    assert tuned_at_3[4] == '+50.0%'
    assert cmp.fits['default:m1.bench'].slope == pytest.approx(-200.0)
    assert cmp.fits['tuned:m1.bench'].slope == pytest.approx(-100.0)
    lines = compare.fit_lines(cmp)
    assert any('default:m1.bench' in line and '-200' in line
               and '1.000' in line for line in lines)
    # the sweep's record comes from the task's own arguments
    assert cmp.runs[0].record['settings'] == {'flavor': 'm1.bench'}


def test_different_workloads_are_refused_by_the_command(tmp_path, capsys):
    a = write(tmp_path, 'a.json', bench_doc([result(1000.0)]))
    b = write(tmp_path, 'b.json', bench_doc(
        [result(events=900.0)], workload='sysbench-cpu'))
    assert cli.main(['report', a, b]) == 2
    err = capsys.readouterr().err
    assert 'different workloads do not compare' in err
    assert len(err.strip().splitlines()) == 1


def test_different_hosts_are_compared_with_a_warning(tmp_path, capsys):
    a = write(tmp_path, 'a.json', bench_doc([result(1000.0)]))
    b = write(tmp_path, 'b.json', bench_doc([result(900.0)], digest='h2'))
    png, page = tmp_path / 'cmp.png', tmp_path / 'cmp.html'
    assert cli.main(['report', a, b, '--png', str(png), '--html',
                     str(page)]) == 0
    out = capsys.readouterr().out
    assert 'warning: results from different hosts' in out
    assert png.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    assert 'emulated' in page.read_text()
    # a second run changes no byte
    assert cli.main(['report', a, b, '--png', str(png)]) == 0
    assert f'unchanged: {png}' in capsys.readouterr().out


def test_cpu_runs_take_events_and_the_max_as_tail(tmp_path):
    a = write(tmp_path, 'a.json', bench_doc(
        [result(events=900.0, mx=5e6)], workload='sysbench-cpu'))
    b = write(tmp_path, 'b.json', bench_doc(
        [result(events=990.0, mx=4e6)], workload='sysbench-cpu'))
    cmp = compare.load_all([a, b])
    assert (cmp.metric, cmp.unit, cmp.tail) == ('events_s', 'events/s',
                                                'max')
    by = {r[0]: r[1:] for r in compare.step_rows(cmp)[1]}
    assert by['change vs a'] == ['+0.0%', '+10.0%']
    assert by['lat max, worst guest (us)'] == ['5,000', '4,000']


def test_failed_guests_are_listed_never_averaged(tmp_path):
    a = write(tmp_path, 'a.json', bench_doc([result(1000.0)], failed=1))
    b = write(tmp_path, 'b.json', bench_doc([result(1000.0)] * 2))
    cmp = compare.load_all([a, b])
    assert cmp.points['a'][0].per_vm == 1000.0
    assert cmp.points['a'][0].valid == 1 and cmp.points['a'][0].total == 2
    assert 'a: VM 1: late (ready at 9)' in compare.text(cmp)


def test_not_a_result_file(tmp_path, capsys):
    bad = write(tmp_path, 'x.json', {'kind': 'something-else'})
    assert cli.main(['report', bad, bad]) == 2
    assert "unknown result kind 'something-else'" in capsys.readouterr().err


def test_a_cpu_baseline_gives_the_bare_metal_events_figure(tmp_path):
    """The scaling report and the SLA read a sysbench baseline too."""
    from kvmtune import report

    path = write(tmp_path, 'bare.json', baseline_doc(
        result(events=1500.0), workload='sysbench-cpu'))
    bare = report.load_baseline(path)
    assert report.bare_metal_figure(bare, 'sysbench-cpu', 'events_s',
                                    path) == 1500.0


@pytest.mark.parametrize('change,match', [
    (lambda d: d.update(rows='x'), 'malformed result file'),
    (lambda d: d.update(rows=[1, 2]), 'malformed result file'),
    (lambda d: d['rows'][0]['result'].update(iops=-5.0),
     'iops: not a non-negative number: -5.0'),
    (lambda d: d['rows'][0]['result'].update(iops='fast'),
     "'fast' is not a number"),
    (lambda d: d['rows'][0]['result']['lat_ns'].update(mean=True),
     'True is not a number'),
])
def test_a_broken_result_file_is_one_line(tmp_path, capsys, change, match):
    doc = bench_doc([result(1000.0)])
    change(doc)
    bad = write(tmp_path, 'bad.json', doc)
    good = write(tmp_path, 'good.json', bench_doc([result(900.0)]))
    assert cli.main(['report', good, bad]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f'kvmtune: error: {bad}: ') and match in err
    assert len(err.splitlines()) == 1


def test_figures_that_add_up_beyond_a_float_are_refused(tmp_path, capsys):
    # Before: inf and +nan% in the table, a fit made of NaN (issue 26).
    huge = dict(result(1.0), iops=1e308, bw_bytes_s=None)
    path = write(tmp_path, 'huge.json', bench_doc([huge, dict(huge)]))
    assert cli.main(['report', path]) == 2
    err = capsys.readouterr().err
    assert 'per_vm figure is not finite' in err and err.count('\n') == 1


def test_a_record_of_the_wrong_shape_is_one_line(tmp_path, capsys):
    doc = bench_doc([result(1000.0)])
    doc['record']['host'] = ['x']
    bad = write(tmp_path, 'bad.json', doc)
    good = write(tmp_path, 'good.json', bench_doc([result(1000.0)]))
    assert cli.main(['report', bad, good]) == 2
    err = capsys.readouterr().err
    assert err.startswith('kvmtune: error: ') and 'record.host' in err
    assert 'internal error' not in err


def test_labels_stay_unique_when_a_file_is_named_like_a_renamed_one(
        tmp_path):
    (tmp_path / 'x').mkdir()
    first = write(tmp_path, 'a.json', bench_doc([result(1000.0)]))
    second = write(tmp_path, 'x/a.json', bench_doc([result(2000.0)]))
    third = write(tmp_path, 'a (2).json', bench_doc([result(3000.0)]))
    cmp = compare.load_all([first, second, third])
    labels = [run.label for run in cmp.runs]
    assert len(set(labels)) == 3
    per_vm = {run.source: cmp.points[run.label][0].per_vm
              for run in cmp.runs}
    assert per_vm == {first: 1000.0, second: 2000.0, third: 3000.0}
