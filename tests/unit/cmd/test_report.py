"""``kvmtune report`` under hostile input: every failure one
line and exit 2, no device clobbered, no output half-written, no NaN
taken as a figure."""

import json
import multiprocessing
import os
import stat
import tempfile

import pytest

from kvmtune import cli
from tests import devices
from tests import hang
from tests.unit import fulldisk
from tests.unit.results.test_rally import baseline_file
from tests.unit.results.test_rally import new_format
from tests.unit.results.test_rally import write


def _one_line_exit_2(capsys, argv, *words):
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    err = captured.err
    assert err.startswith('kvmtune: error: ') and err.count('\n') == 1, err
    assert 'Traceback' not in err and 'internal error' not in err
    for word in words:
        assert word in err, err
    return captured


def _with_first_row(doc, **changes):
    rows = (doc['tasks'][0]['subtasks'][0]['workloads'][0]['data'][0]
            ['output']['complete'][0]['data'])
    cols = rows['cols']
    for key, value in changes.items():
        rows['rows'][0][cols.index(key)] = value
    return doc


def test_deeply_nested_report_json(tmp_path, capsys):
    path = tmp_path / 'deep.json'
    path.write_text('[' * 100000 + ']' * 100000)
    _one_line_exit_2(capsys, ['report', str(path)], str(path), 'nested')


@pytest.mark.parametrize('token', ['NaN', 'Infinity', '-Infinity', '1e400'])
def test_nan_in_a_row_is_not_a_figure(tmp_path, capsys, token):
    doc = _with_first_row(new_format(), iops=123456.0)
    path = tmp_path / 'r.json'
    path.write_text(json.dumps(doc).replace('123456.0', token))
    captured = _one_line_exit_2(capsys, ['report', str(path)], str(path))
    assert 'R²' not in captured.out and 'linear' not in captured.out


@pytest.mark.parametrize('changes, words', [
    ({'iops': -1000.0}, 'below 0'),
    ({'iops': 'fast'}, 'not a number'),
    ({'iops': True}, 'not a number'),
    ({'lat_p99_ns': [1]}, 'not a number'),
    ({'status': None}, 'without a status'),
])
def test_malformed_rows(tmp_path, capsys, changes, words):
    path = write(tmp_path, _with_first_row(new_format(), **changes))
    _one_line_exit_2(capsys, ['report', str(path)], str(path), words)


def test_row_that_is_not_a_mapping(tmp_path, capsys):
    doc = new_format()
    table = (doc['tasks'][0]['subtasks'][0]['workloads'][0]['data'][0]
             ['output']['complete'][0]['data'])
    table['rows'] = [7, None]
    path = write(tmp_path, doc)
    _one_line_exit_2(capsys, ['report', str(path)], str(path))


@pytest.mark.parametrize('value', [-2000.0, 0.0, 'NaN', 'Infinity'])
def test_baseline_that_is_not_a_figure(tmp_path, capsys, value):
    base = baseline_file(tmp_path)
    with open(base) as handle:
        text = handle.read().replace('"iops": 2000.0', f'"iops": {value}')
    with open(base, 'w') as handle:
        handle.write(text)
    _one_line_exit_2(capsys, ['report', write(tmp_path, new_format()),
                              '--baseline', base], base)


def test_png_to_a_null_device_leaves_the_device(tmp_path, capsys):
    node = devices.char_device(tmp_path)
    path = write(tmp_path, new_format())
    _one_line_exit_2(capsys, ['report', path, '--png', node],
                     'character device')
    assert stat.S_ISCHR(os.lstat(node).st_mode)


def _report_into_fifo(path, fifo, answers):
    import contextlib
    import io
    err = io.StringIO()
    with contextlib.redirect_stderr(err), \
            contextlib.redirect_stdout(io.StringIO()):
        answers.put((cli.main(['report', path, '--html', fifo]),
                     err.getvalue()))


def test_html_to_a_fifo_does_not_hang(tmp_path):
    path = write(tmp_path, new_format())
    fifo = str(tmp_path / 'page.html')
    os.mkfifo(fifo)
    context = multiprocessing.get_context('fork')
    answers = context.Queue()
    child = context.Process(target=_report_into_fifo,
                            args=(path, fifo, answers))
    child.start()
    child.join(hang.HANG_BOUND_S)       # a hard timeout on a hang
    if child.is_alive():
        child.kill()
        pytest.fail('kvmtune report hung on a FIFO')
    code, err = answers.get(timeout=5)
    assert code == 2 and 'FIFO' in err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def _report_as_nobody(argv, answers):
    import contextlib
    import io
    os.setgid(65534)
    os.setuid(65534)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), \
            contextlib.redirect_stdout(io.StringIO()):
        answers.put((cli.main(argv), err.getvalue()))


@pytest.mark.skipif(os.geteuid() != 0, reason='drops to nobody (root only)')
def test_unwritable_html_writes_no_png_either(request):
    """The PNG used to be written before the HTML was refused."""
    top = tempfile.mkdtemp(prefix='kvmtune-report-')
    request.addfinalizer(lambda: __import__('shutil').rmtree(top))
    os.chmod(top, 0o777)
    results = os.path.join(top, 'r.json')
    with open(results, 'w') as handle:
        json.dump(new_format(), handle)
    os.chmod(results, 0o644)
    locked = os.path.join(top, 'locked')
    os.mkdir(locked, 0o555)
    png = os.path.join(top, 'plot.png')
    # nobody may not reach this clone's virtualenv (root's 0700 home):
    # import what the command needs before dropping to nobody
    import matplotlib.pyplot  # noqa: F401
    import numpy  # noqa: F401
    context = multiprocessing.get_context('fork')
    answers = context.Queue()
    child = context.Process(target=_report_as_nobody, args=(
        ['report', results, '--png', png, '--html',
         os.path.join(locked, 'page.html')], answers))
    child.start()
    child.join(120)
    code, err = answers.get(timeout=5)
    assert code == 2 and 'not writable' in err, err
    assert not os.path.exists(png)


def test_output_that_is_an_input_is_refused(tmp_path, capsys):
    path = write(tmp_path, new_format())
    before = open(path).read()
    _one_line_exit_2(capsys, ['report', path, '--png', path],
                     'input files')
    assert open(path).read() == before


def test_output_hard_linked_to_an_input_is_refused(tmp_path, capsys):
    # Before: kvmtune.fileio writes a file with other hard
    # links in place, so --png under another name of the input overwrote
    # the input.
    path = write(tmp_path, new_format())
    before = open(path).read()
    png = os.path.join(str(tmp_path), 'plot.png')
    os.link(path, png)
    _one_line_exit_2(capsys, ['report', path, '--png', png], 'input files')
    assert open(path).read() == before


@fulldisk.ROOT_ONLY
def test_a_full_disk_keeps_the_old_png_and_html(tmp_path, capsys):
    path = write(tmp_path, new_format())
    old = {'plot.png': b'the old plot', 'page.html': b'<p>the old page</p>'}
    with fulldisk.full_tmpfs(tmp_path / 'full', old) as full:
        _one_line_exit_2(capsys, ['report', path, '--png',
                                  str(full / 'plot.png'), '--html',
                                  str(full / 'page.html')],
                         'No space left on device')
        fulldisk.assert_left_as_it_was(full, old)


@fulldisk.ROOT_ONLY
@pytest.mark.parametrize('old', [
    {'plot.png': b'the old plot', 'page.html': b'<p>the old page</p>'}, {}],
    ids=['over-old', 'new'])
def test_a_read_only_filesystem_keeps_the_old_png_and_html(tmp_path, capsys,
                                                           old):
    path = write(tmp_path, new_format())
    with fulldisk.readonly_tmpfs(tmp_path / 'ro', old) as ro:
        err = _one_line_exit_2(capsys, ['report', path, '--png',
                                        str(ro / 'plot.png'), '--html',
                                        str(ro / 'page.html')],
                               str(ro / 'plot.png')).err
        fulldisk.assert_one_line_readonly(err, ro)
        fulldisk.assert_left_as_it_was(ro, old, filler=False)


def test_report_as_json_is_the_analysis_the_table_prints(capsys):
    # -f json prints the same Analysis the table is rendered from (one
    # analysis, two renderings), as strict JSON (no NaN or Infinity).
    from kvmtune.results import analysis
    from tests import paths

    sweep = os.path.join(paths.FIXTURES, 'outputs',
                         'rally-disk-sweep-1-6-10-signal-tcg.json')
    assert cli.main(['report', sweep, '-f', 'json']) == 0

    def refuse(constant):
        raise AssertionError(f'not JSON: {constant}')

    doc = json.loads(capsys.readouterr().out, parse_constant=refuse)
    analysed = analysis.load([sweep])
    (run,) = analysed.runs
    assert doc['metric'] == 'iops' and doc['unit'] == 'IOPS'
    assert [(p['vms'], p['per_vm'], p['valid']) for p in
            doc['runs'][0]['points']] == [
        (p.vms, p.per_vm, p.valid) for p in analysed.points[run.label]]
    assert [p['vms'] for p in doc['runs'][0]['points']] == [1, 6, 10]
    assert doc['runs'][0]['fit']['points'] == 3
