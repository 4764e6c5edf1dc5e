"""``kvmtune host capture`` into places it cannot write."""

import multiprocessing
import os
import shutil
import tempfile

import pytest

from kvmtune import cli


def _capture_as_nobody(target, answers):
    import contextlib
    import io
    if os.geteuid() == 0:
        os.setgid(65534)
        os.setuid(65534)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), \
            contextlib.redirect_stdout(io.StringIO()):
        answers.put((cli.main(['host', 'capture', target]), err.getvalue()))


def _run(target):
    context = multiprocessing.get_context('fork')
    answers = context.Queue()
    child = context.Process(target=_capture_as_nobody,
                            args=(target, answers))
    child.start()
    child.join(300)
    return answers.get(timeout=5)


@pytest.fixture
def public_dir(request):
    top = tempfile.mkdtemp(prefix='kvmtune-capture-')
    request.addfinalizer(lambda: shutil.rmtree(top))
    os.chmod(top, 0o755)
    return top


def test_capture_into_a_read_only_directory_is_one_line(public_dir):
    locked = os.path.join(public_dir, 'locked')
    os.mkdir(locked, 0o555)
    code, err = _run(os.path.join(locked, 'compute-1'))
    assert code == 2, err
    assert err.count('\n') == 1 and 'Traceback' not in err
    assert 'compute-1' in err and 'nothing was written' in err
    assert os.listdir(locked) == []


def test_capture_into_an_unreadable_directory_is_one_line(public_dir):
    hidden = os.path.join(public_dir, 'hidden')
    os.mkdir(hidden, 0o000)
    code, err = _run(os.path.join(hidden, 'compute-1'))
    assert code == 2, err
    assert err.count('\n') == 1 and 'Traceback' not in err


def test_capture_into_proc_is_one_line(capsys):
    assert cli.main(['host', 'capture', '/proc/kvmtune-capture']) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and '/proc/kvmtune-capture' in err


@pytest.mark.parametrize('target', ['', '  '])
def test_an_empty_directory_argument_is_named(target, capsys, tmp_path,
                                              monkeypatch):
    # Before: the error named a temporary directory kvmtune had
    # tried to make in the parent of the current directory.
    monkeypatch.chdir(tmp_path)
    assert cli.main(['host', 'capture', target]) == 2
    err = capsys.readouterr().err
    assert err == ("kvmtune: error: '': DIR: an empty path (fix: give a new "
                   "directory)\n")
    assert os.listdir(tmp_path) == []
