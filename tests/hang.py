"""Run code that could hang with a hard timeout, so a hang fails the test.

A test that calls, in its own thread, code that must refuse a FIFO without
opening it cannot fail when that code regresses: ``open()`` on a FIFO with
no other end blocks forever, and CI stalls until its job timeout. ``call``
runs the code in a daemon thread instead and fails the test when it has not
returned within ``timeout`` seconds. Everything else is as if it were
called directly: its return value is returned, its exception re-raised, and
pytest fixtures (capsys, monkeypatch) see what it does.

A thread cannot be killed. ``release`` names FIFOs to open from the other
side after a timeout, which wakes a thread blocked opening one, so it ends
instead of lingering while the rest of the session runs.

Code that would spin rather than block (reading a character device such
as /dev/zero, which never ends) cannot be released that way, and a thread
left reading it would eat the session's CPU and memory: ``call_in_child``
runs it in a forked child process instead, killed at the timeout.

HANG_BOUND_S is a bound on a hang, not a speed: the code under test takes
well under a second; a 2-core shared CI host may be very slow, not a
minute slow.
"""

import errno
import multiprocessing
import os
import pickle
import threading

import pytest

HANG_BOUND_S = 60


def release_fifo(path):
    """Open both ends of the FIFO at ``path`` without blocking, and close
    them: a thread blocked opening it for reading or for writing wakes."""
    fds = []
    try:
        # a reader end first: it wakes a writer blocked in open(); then a
        # writer end, which a reader blocked in open() is waiting for
        fds.append(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
        fds.append(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ENXIO):
            raise
    finally:
        for fd in fds:
            os.close(fd)


def call(func, *, timeout=HANG_BOUND_S, release=()):
    """``func()`` in a daemon thread: its return value, or its exception
    re-raised here; the test fails if it has not returned in ``timeout``
    seconds. ``release``: FIFO paths to open from the other side then."""
    outcome = {}

    def run():
        try:
            outcome['value'] = func()
        except BaseException as exc:   # re-raised in the caller's thread
            outcome['error'] = exc

    name = getattr(func, '__qualname__', repr(func))
    thread = threading.Thread(target=run, name=f'hang-guarded {name}',
                              daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        for path in release:
            release_fifo(path)
        pytest.fail(f'{name} did not return within {timeout} s: it hangs',
                    pytrace=False)
    if 'error' in outcome:
        raise outcome['error']
    return outcome['value']


def _child(func, conn):
    try:
        outcome = ('value', func())
    except BaseException as exc:    # re-raised in the parent
        outcome = ('error', exc)
    try:
        conn.send(outcome)
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        conn.send(('error', RuntimeError(
            f'{outcome[0]} of the child could not be sent back: {exc}; '
            f'it was: {outcome[1]!r}')))
    conn.close()


def call_in_child(func, *, timeout=HANG_BOUND_S):
    """``func()`` in a forked child process: its return value, or its
    exception re-raised here (both pickled back); the test fails if it has
    not returned in ``timeout`` seconds, and the child is killed. The
    child's writes to files are seen; pytest fixtures that patch this
    process (monkeypatch) apply in it, since it is a fork, but what it
    prints is not captured."""
    context = multiprocessing.get_context('fork')
    receive, send = context.Pipe(duplex=False)
    name = getattr(func, '__qualname__', repr(func))
    child = context.Process(target=_child, args=(func, send),
                            name=f'hang-guarded {name}', daemon=True)
    child.start()
    send.close()
    try:
        if not receive.poll(timeout):
            child.kill()
            child.join()
            pytest.fail(f'{name} did not return within {timeout} s: it '
                        'hangs (its child process was killed)',
                        pytrace=False)
        try:
            kind, value = receive.recv()
        except EOFError:
            child.join()
            pytest.fail(f'{name}: its child process ended without an '
                        f'answer (exit code {child.exitcode})',
                        pytrace=False)
    finally:
        receive.close()
    child.join()
    if kind == 'error':
        raise value
    return value
