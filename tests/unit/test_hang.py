"""tests/hang.py: a hang fails the test instead of stalling the run."""

import os
import threading

import pytest

from tests import hang
from tests import paths

pytest_plugins = ['pytester']


def test_the_value_comes_back():
    assert hang.call(lambda: 41 + 1) == 42


def test_the_exception_comes_back():
    def refuse():
        raise ValueError('is a FIFO')

    with pytest.raises(ValueError, match='is a FIFO'):
        hang.call(refuse)


def test_code_that_blocks_forever_fails_the_test():
    forever = threading.Event()     # nobody sets it

    def block():
        forever.wait()

    with pytest.raises(pytest.fail.Exception,
                       match='did not return within 0.2 s: it hangs'):
        hang.call(block, timeout=0.2)


def test_a_blocked_fifo_reader_is_released_after_the_timeout(tmp_path):
    fifo = tmp_path / 'nova.conf'
    os.mkfifo(fifo)
    woke = threading.Event()

    def read_it():
        with open(fifo) as stream:          # no writer: blocks here
            text = stream.read()
        woke.set()
        return text

    with pytest.raises(pytest.fail.Exception, match='it hangs'):
        hang.call(read_it, timeout=0.2, release=[fifo])
    # the release opened the writer end: the reader saw EOF and ended
    assert woke.wait(hang.HANG_BOUND_S)


def test_a_blocked_fifo_writer_is_released_after_the_timeout(tmp_path):
    fifo = tmp_path / 'page.html'
    os.mkfifo(fifo)
    woke = threading.Event()

    def write_it():
        try:
            with open(fifo, 'w') as stream:     # no reader: blocks here
                stream.write('x')
        except BrokenPipeError:
            pass                                # the reader went away
        woke.set()

    with pytest.raises(pytest.fail.Exception, match='it hangs'):
        hang.call(write_it, timeout=0.2, release=[fifo])
    assert woke.wait(hang.HANG_BOUND_S)


def test_releasing_a_missing_fifo_is_harmless(tmp_path):
    hang.release_fifo(tmp_path / 'gone')
    assert os.listdir(tmp_path) == []


HANGING_TEST = '''
import os

from tests import hang


def test_fifo_read_that_hangs(tmp_path):
    fifo = tmp_path / 'profile.yaml'
    os.mkfifo(fifo)
    hang.call(lambda: open(fifo).read(), timeout=1, release=[fifo])
'''


def test_a_deliberately_hanging_fifo_test_fails_within_its_timeout(
        pytester, monkeypatch):
    # A whole pytest run in a child, which pytester kills if the guard
    # itself hangs: then this test fails too, it does not stall.
    monkeypatch.setenv('PYTHONPATH', os.pathsep.join(
        filter(None, [paths.REPO, os.environ.get('PYTHONPATH')])))
    monkeypatch.delenv('CI', raising=False)
    pytester.makepyfile(test_hanging=HANGING_TEST)
    result = pytester.runpytest_subprocess(
        '-p', 'no:cacheprovider', timeout=hang.HANG_BOUND_S)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        '*did not return within 1 s: it hangs*'])


# -- call_in_child: code that spins, not blocks ------------------------------

def test_in_child_the_value_and_the_exception_come_back():
    from kvmtune.errors import InputError

    assert hang.call_in_child(lambda: 41 + 1) == 42

    def refuse():
        raise InputError('a character device', source='/x', key='k')

    with pytest.raises(InputError,
                       match='^/x: k: a character device$') as caught:
        hang.call_in_child(refuse)
    assert (caught.value.source, caught.value.key) == ('/x', 'k')


def test_in_child_reading_a_zero_device_forever_fails_and_is_killed(
        tmp_path):
    """What a regression of inputs.read_text on /dev/zero would do: read
    without end. The test fails at the timeout; no child is left."""
    from tests import devices

    zero = devices.char_device(tmp_path, 'zero', devices.ZERO)

    def read_forever():
        with open(zero, 'rb') as stream:
            while True:
                stream.read(1 << 16)

    with pytest.raises(pytest.fail.Exception,
                       match='read_forever did not return within 0.5 s: '
                             'it hangs'):
        hang.call_in_child(read_forever, timeout=0.5)
    import multiprocessing
    assert multiprocessing.active_children() == []


def test_in_child_an_unpicklable_result_is_named():
    with pytest.raises(RuntimeError, match='could not be sent back'):
        hang.call_in_child(lambda: threading.Lock())
