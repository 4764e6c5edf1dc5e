"""What the main job shows and what goes to its log."""

import sys

import pytest

from kvmtune.errors import CloudError
from kvmtune.mainjob import steps


@pytest.fixture
def log(tmp_path):
    path = tmp_path / 'main-job.log'
    yield path
    steps.OUT.close()


def test_quiet_by_default_everything_in_the_log(log, capsys):
    steps.configure(str(log), verbose=False)
    with steps.step('benchmark image') as s:
        print('apt: Setting up fio')        # library output
        steps.detail('$ uv pip install ...')
        print('to stderr', file=sys.stderr)
        s.done('built')
    out = capsys.readouterr()
    lines = out.out.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith('main-job: benchmark image: built (')
    assert lines[0].endswith(' s)')
    assert out.err == ''
    text = log.read_text()
    for seen in ('apt: Setting up fio', 'to stderr',
                 'main-job: $ uv pip install ...', lines[0]):
        assert seen in text


def test_verbose_shows_the_details_too(log, capsys):
    steps.configure(str(log), verbose=True)
    with steps.step('x') as s:
        print('detail line')
        s.done('ok')
    out = capsys.readouterr().out
    assert 'detail line' in out and 'main-job: x: ok (' in out


def test_failed_step_says_so_and_names_the_log(log, capsys):
    steps.configure(str(log), verbose=False)
    with pytest.raises(CloudError, match='exited 3') as err:
        with steps.step('test cloud'):
            raise CloudError('exited 3', source='rally env create',
                             fix=f'see {steps.OUT.log_path}')
    assert f'exited 3 (fix: see {log})' in err.value.line()
    assert capsys.readouterr().out.startswith('main-job: test cloud: '
                                              'FAILED (')


def test_elapsed_label():
    assert steps.elapsed_label(4.2) == '4 s'
    assert steps.elapsed_label(795) == '13 min 15 s'


def test_beside_runs_in_a_thread_of_its_own_and_reraises():
    import threading

    names = []

    def work():
        names.append(threading.current_thread().name)
        return 42

    assert steps.beside('kvmtune-probe', work).result(timeout=10) == 42
    assert names[0].startswith('kvmtune-probe')
    assert names[0] != threading.current_thread().name

    def fails():
        raise CloudError('no answer', source='rally env check')

    with pytest.raises(CloudError, match='no answer'):
        steps.beside('kvmtune-probe', fails).result(timeout=10)
