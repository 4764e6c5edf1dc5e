"""kvmtune report: Rally result files in, table/fit/PNG/HTML out."""

import json

import pytest

from kvmtune import cli
from kvmtune.report import rally_results
from kvmtune.report import render
from kvmtune.report import scaling
from kvmtune.report import vmtable


def fio(iops, emulated=True):
    return {'tool': 'fio', 'workload': 'fio-randread-4k', 'iops': iops,
            'bw_bytes_s': iops * 4096.0,
            'lat_ns': {'mean': 1e9 / iops, 'p50': 1.0, 'p95': 1.0,
                       'p99': 2e9 / iops},
            'gbit_s': None, 'tps': None, 'cpu_pct': 10.0,
            'emulated': emulated}


def iteration(figures, bad=()):
    rows = [vmtable.ok_row(f'vm-{i}', 'client', fio(v))
            for i, v in enumerate(figures)]
    rows += [vmtable.failed_row(f'bad-{i}', 'client', status, why,
                                'fio-randread-4k')
             for i, (status, why) in enumerate(bad)]
    error = ['GuestResultsMissing', 'x'] if bad else []
    return {'duration': 1.0, 'timestamp': 0, 'idle_duration': 0,
            'error': error, 'atomic_actions': [],
            'output': {'additive': [],
                       'complete': [vmtable.table_output(rows, True)]}}


SWEEPS = {
    'm1.bench.baseline': [[1000.0], [800.0, 820.0], [600.0, 610.0, 590.0]],
    'm1.bench.pinned-hugepages-ept': [[1100.0], [1000.0, 1000.0],
                                      [900.0, 910.0, 890.0]],
}


def new_format(sweeps=SWEEPS, extra=()):
    workloads = [{'scenario': {'KvmTune.disk_scaling': {
                     'flavor': {'name': flavor}, 'image': {'name': 'img'},
                     'workload': 'fio-randread-4k',
                     'vm_counts': [1, 2, 3]}},
                  'data': [iteration(f) for f in steps] + list(extra),
                  'sla_results': {'sla': []}}
                 for flavor, steps in sweeps.items()]
    workloads.append({'scenario': {'Dummy.dummy': {}}, 'data': [],
                      'sla_results': {}})
    return {'info': {}, 'tasks': [{'subtasks': [{'workloads': workloads}]}]}


def old_format(sweeps=SWEEPS):
    return [{'key': {'name': 'KvmTune.disk_scaling', 'pos': i,
                     'kw': {'args': {'flavor': {'name': flavor},
                                     'workload': 'fio-randread-4k'}}},
             'result': [iteration(f) for f in steps], 'sla': []}
            for i, (flavor, steps) in enumerate(sweeps.items())]


def write(tmp_path, doc, name='results.json'):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


@pytest.mark.parametrize('doc', [new_format(), old_format()])
def test_both_rally_formats_give_the_same_sweeps(doc):
    sweeps = rally_results.sweeps_from(doc)
    assert [s.flavor for s in sweeps] == list(SWEEPS)
    assert sorted(sweeps[0].points) == [1, 2, 3]
    assert sweeps[0].emulated


def test_per_vm_aggregate_and_change_vs_one_vm():
    sweep = rally_results.sweeps_from(new_format())[0]
    result = scaling.analyse(sweep, bare_metal=2000.0)
    assert (result.metric, result.unit) == ('iops', 'IOPS')
    one, two, three = result.points
    assert two.per_vm == pytest.approx(810.0)
    assert two.aggregate == pytest.approx(1620.0)
    assert three.aggregate == pytest.approx(1800.0)
    assert two.change == pytest.approx(-0.19)
    assert three.share == pytest.approx(0.3)
    assert one.change == 0.0
    # 1000, 810, 600: a line of slope -200 explains it well
    assert result.fit.slope == pytest.approx(-200.0)
    assert result.fit.r2 > 0.99 and result.fit.linear


def test_a_curve_that_is_not_a_line():
    fit = scaling.fit_line([1, 2, 3, 4], [100.0, 20.0, 100.0, 20.0])
    assert fit.r2 < 0.9 and not fit.linear


def test_two_points_have_a_slope_but_no_r2():
    fit = scaling.fit_line([1, 2], [10.0, 8.0])
    assert fit.slope == pytest.approx(-2.0) and fit.r2 is None


def test_bad_guests_are_listed_not_averaged():
    doc = new_format(
        {'f': [[1000.0], [800.0, 820.0]]},
        extra=[iteration([500.0], bad=[('late', 'ready after start_at')])])
    sweep, = rally_results.sweeps_from(doc)
    result = scaling.analyse(sweep)
    two = result.points[1]
    # the 2-VM step ran twice: [800, 820] and [500 + a late guest]
    assert (two.valid, two.total) == (3, 4)
    assert two.per_vm == pytest.approx((810.0 + 500.0) / 2)
    out = render.text([(sweep, result)])
    assert 'bad-0: late (ready after start_at)' in out


def test_text_labels_emulated_figures_and_states_the_fit():
    analysed = [(s, scaling.analyse(s))
                for s in rally_results.sweeps_from(new_format())]
    out = render.text(analysed)
    assert out.count('emulated: QEMU TCG') == 2
    assert 'per-VM IOPS' in out and 'R² 0.99' in out and ': linear' in out
    assert '-19.0%' in out


def test_cli_prints_table_and_writes_png_and_html(tmp_path, capsys):
    path = write(tmp_path, new_format())
    png, page = tmp_path / 'sweep.png', tmp_path / 'sweep.html'
    assert cli.main(['report', path, '--png', str(png),
                     '--html', str(page)]) == 0
    out = capsys.readouterr().out
    assert 'flavor m1.bench.pinned-hugepages-ept' in out
    assert f'wrote: {png}' in out
    assert png.read_bytes().startswith(b'\x89PNG')
    html = page.read_text()
    assert 'emulated: QEMU TCG' in html and 'data:image/png;base64,' in html
    # a second run changes nothing and says so
    assert cli.main(['report', path, '--png', str(png)]) == 0
    assert f'unchanged: {png}' in capsys.readouterr().out


def baseline_file(tmp_path, workload='fio-randread-4k'):
    """A file as `kvmtune baseline` writes it (kvmtune.bench.baseline)."""
    result = fio(2000.0, emulated=False)
    result['workload'] = workload
    path = tmp_path / 'bm.json'
    path.write_text(json.dumps({
        'schema': 1, 'kind': 'kvmtune-baseline',
        'time': '2026-11-21T20:00:00Z', 'workload': workload,
        'emulated': False, 'result': result}))
    return str(path)


def test_baseline_gives_share_of_bare_metal(tmp_path, capsys):
    assert cli.main(['report', write(tmp_path, new_format()),
                     '--baseline', baseline_file(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert 'bare metal: 2,000 IOPS' in out and '50.0%' in out


def test_baseline_of_another_workload_is_one_line(tmp_path, capsys):
    assert cli.main(['report', write(tmp_path, new_format()),
                     '--baseline', baseline_file(tmp_path, 'w')]) == 2
    err = capsys.readouterr().err
    assert 'no iops figure for workload fio-randread-4k' in err


def test_baseline_without_the_workload_is_an_input_error():
    from kvmtune import report
    from kvmtune.errors import InputError

    with pytest.raises(InputError, match='no iops figure for workload w'):
        report.bare_metal_figure({'results': [fio(1.0)]}, 'w', 'iops', 'b')


@pytest.mark.parametrize('content', [
    'not json', '{"some": "dict"}', '[1, 2]',
    json.dumps({'tasks': [{'subtasks': [{'workloads': [
        {'scenario': {'Dummy.dummy': {}}, 'data': []}]}]}]}),
    json.dumps({'tasks': [{'subtasks': [{'workloads': [
        {'scenario': {'KvmTune.disk_scaling': {}}, 'data': [{}]}]}]}]}),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, content):
    path = tmp_path / 'bad.json'
    path.write_text(content)
    png = tmp_path / 'out.png'
    assert cli.main(['report', str(path), '--png', str(png)]) == 2
    err = capsys.readouterr().err
    assert err.startswith('kvmtune: error: ') and err.count('\n') == 1
    assert str(path) in err
    assert not png.exists()


def test_missing_file_is_one_line(capsys):
    assert cli.main(['report', '/nonexistent/r.json']) == 2
    assert 'no such file' in capsys.readouterr().err.lower()
