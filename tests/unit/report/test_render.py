"""The one renderer (text, PNG, HTML), through `kvmtune report FILE...`:
always a comparison, one file included."""

import pytest

from kvmtune import cli
from kvmtune.report import render
from tests.unit.report.runs import analysed
from tests.unit.report.runs import before_after_bare
from tests.unit.results.test_bench import bench_doc
from tests.unit.results.test_bench import nested_doc
from tests.unit.results.test_bench import result
from tests.unit.results.test_bench import write
from tests.unit.results.test_rally import baseline_file
from tests.unit.results.test_rally import iteration
from tests.unit.results.test_rally import new_format
from tests.unit.results.test_rally import write as write_rally


def test_runs_at_one_vm_count_print_as_a_step_table(tmp_path):
    an = analysed(tmp_path, *before_after_bare())
    header, rows = render.step_rows(an)
    assert header == ['', 'before', 'after', 'bare host']
    by = {r[0]: r[1:] for r in rows}
    assert by['per-VM IOPS'] == ['2,000', '2,500', '10,000']
    assert by['change vs before'] == ['+0.0%', '+25.0%', '+400.0%']
    assert by['share of bare host'] == ['20.0%', '25.0%', '100.0%']
    assert by['lat p99, worst guest (us)'] == ['9.0', '6.0', '-']
    text = render.text(an)
    assert text.startswith('comparison of 2 run(s), fio-randread-4k '
                           '(emulated')
    assert '[cache=writeback]' in text


def test_runs_over_vm_counts_with_fits_side_by_side(tmp_path):
    an = analysed(
        tmp_path, ('one.json', bench_doc([result(1000.0)])),
        ('two.json', bench_doc([result(800.0)] * 2)),
        ('three.json', bench_doc([result(600.0)] * 3)),
        ('after.json', bench_doc([result(900.0)] * 3,
                                 settings={'pinning': 'on'})))
    assert not an.step_table
    _, rows = render.vm_rows(an)
    assert [r[:6] for r in rows] == [
        ['1', 'one+', '1,000', '1,000', '+0.0%', '+0.0%'],
        ['2', 'one+', '800', '1,600', '+0.0%', '-20.0%'],
        ['3', 'one+', '600', '1,800', '+0.0%', '-40.0%'],
        ['3', 'after', '900', '2,700', '+50.0%', '-']]
    _, fits = render.fit_rows(an)
    assert fits[0][:6] == ['one+', '1,200', '-200', '-20.0%', '1.000', 'yes']
    assert fits[1][1:3] == ['-', '-']     # one VM count: no line


def test_one_rally_file_is_a_comparison_of_its_sweeps(tmp_path, capsys):
    path = write_rally(tmp_path, new_format())
    png, page = tmp_path / 'sweep.png', tmp_path / 'sweep.html'
    assert cli.main(['report', path, '--png', str(png),
                     '--html', str(page)]) == 0
    out = capsys.readouterr().out
    assert out.startswith('comparison of 2 run(s), fio-randread-4k')
    assert 'results:m1.bench.pinned-hugepages-ept' in out
    assert '-19.0%' in out and '0.999' in out
    assert 'step time budget' in out
    assert f'wrote {png}' in out
    assert png.read_bytes().startswith(b'\x89PNG')
    html = page.read_text()
    assert 'emulated: QEMU TCG' in html and 'data:image/png;base64,' in html
    assert 'Linear fits' in html
    # a second run changes nothing and says so
    assert cli.main(['report', path, '--png', str(png)]) == 0
    assert f'unchanged {png}' in capsys.readouterr().out


def test_baseline_gives_the_share_of_bare_metal(tmp_path, capsys):
    assert cli.main(['report', write_rally(tmp_path, new_format()),
                     '--baseline', baseline_file(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert 'bare host' in out and '2,000' in out and '50.0%' in out


def test_baseline_of_another_workload_is_one_line(tmp_path, capsys):
    assert cli.main(['report', write_rally(tmp_path, new_format()),
                     '--baseline', baseline_file(tmp_path, 'w')]) == 2
    err = capsys.readouterr().err
    assert 'measures workload w' in err and 'kvmtune baseline --workload '\
        'fio-randread-4k' in err
    assert err.count('\n') == 1


def test_failed_guests_are_listed_never_averaged(tmp_path):
    doc = new_format({'f': [[1000.0]]}, extra=[
        iteration([500.0], bad=[('late', 'ready after start_at')])])
    an = analysed(tmp_path, ('r.json', doc),
                  ('a.json', bench_doc([result(1000.0)], failed=1)))
    text = render.text(an)
    assert 'r:f: 2 VMs: bad-0: late (ready after start_at)' in text
    assert 'a: 2 VMs: x-0: late (ready at 9)' in text


def test_a_nested_file_prints_its_levels_beside_the_host(tmp_path, capsys):
    path = write(tmp_path, 'n.json', nested_doc())
    assert cli.main(['report', path]) == 0
    out = capsys.readouterr().out
    assert 'per-VM events/s' in out and 'change vs L1' in out
    by = {line.split()[0]: line for line in out.splitlines() if line}
    assert by['per-VM'].split()[-3:] == ['400', '100', '1,000']


def test_different_workloads_are_refused_by_the_command(tmp_path, capsys):
    a = write(tmp_path, 'a.json', bench_doc([result(1000.0)]))
    b = write(tmp_path, 'b.json', bench_doc(
        [result(events=900.0, workload='sysbench-cpu')],
        workload='sysbench-cpu'))
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
    assert 'warning: results from different hosts' in page.read_text()


def test_no_valid_result_says_so(tmp_path, capsys):
    path = write(tmp_path, 'a.json', bench_doc([], failed=2))
    page = tmp_path / 'a.html'
    assert cli.main(['report', path, '--html', str(page)]) == 0
    assert 'no valid result in any run' in capsys.readouterr().out
    assert 'No valid result' in page.read_text()


@pytest.mark.parametrize('content', [
    'not json', '{"some": "dict"}', '[1, 2]',
    '{"tasks": [{"subtasks": [{"workloads": [{"scenario": '
    '{"Dummy.dummy": {}}, "data": []}]}]}]}',
    '{"tasks": [{"subtasks": [{"workloads": [{"scenario": '
    '{"KvmTune.disk_scaling": {}}, "data": [{}]}]}]}]}',
    '{"kind": "something-else"}',
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


def test_one_runs_guests_and_their_aggregate(tmp_path):
    """bench local's table: a row per guest (a server too), the
    aggregate from the analysis, each failed guest's reason below it."""
    from kvmtune.results import row as rows

    fast = dict(result(3000.0, lat=2e6, p99=9e6), cpu_pct=60.0)
    slow = dict(result(1000.0, lat=4e6, p99=5e6), cpu_pct=40.0)
    guests = [rows.failed('s', 'server', 'server', ''),
              rows.from_result('a', 'client', fast, 'emulated (TCG)'),
              rows.from_result('b', 'client', slow, 'emulated (TCG)'),
              rows.failed('c', 'client', 'late', 'ready at 9')]
    doc = bench_doc([fast, slow], failed=1)
    an = analysed(tmp_path, ('r.json', doc))
    header, table = render.guest_rows(an, guests)
    assert header[:5] == ['VM', 'status', 'IOPS', 'events/s', 'MiB/s']
    assert header[7:10] == ['lat mean us', 'lat p99 us', 'CPU%']
    assert table[0][:3] == ['0', 'server', '-']
    assert table[1][2:5] == ['3,000', '-', '11.7']
    every = dict(zip(header, table[-1]))
    assert (every['VM'], every['status'], every['IOPS']) == (
        'all', '2 ok', '4,000')
    assert every['MiB/s'] == '15.6'            # 4000 x 4096 bytes/s
    assert (every['lat mean us'], every['lat p99 us']) == (
        '3,000', '9,000')
    assert every['CPU%'] == '50.0'
    lines = render.guest_lines(an, guests)
    assert lines[lines.index(render.grid(header, table)[4]) + 1] == \
        '    c: ready at 9'
    assert lines[-1] == '1 guest(s) failed: not in the aggregate'
    assert render.failures(guests) == 1
