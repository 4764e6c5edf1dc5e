"""kvmtune.fileio, attacked: devices, FIFOs, links, locks, backups,
immutable files, full and read-only filesystems (what a replace keeps:
test_replace.py)."""

import multiprocessing
import os
import pathlib
import shutil
import stat
import subprocess
import tempfile
import time

import pytest

from kvmtune.errors import InputError
from kvmtune import fileio
from tests import devices
from tests import hang
from tests import locks

ROOT = os.geteuid() == 0


def _make_char_device(path):
    directory, name = os.path.split(path)
    devices.char_device(directory, name)


def test_refuses_a_character_device_and_leaves_it_one(tmp_path):
    node = tmp_path / 'null'
    _make_char_device(str(node))
    with pytest.raises(InputError, match='character device'):
        fileio.write_atomic(str(node), 'x\n', backup=str(node) + '.bak')
    assert stat.S_ISCHR(os.lstat(node).st_mode)
    assert sorted(os.listdir(tmp_path)) == ['null']   # no lock, no backup


def test_refuses_a_symlink_to_a_device(tmp_path):
    node = devices.char_device(tmp_path)
    link = tmp_path / 'nova.conf'
    link.symlink_to(node)
    with pytest.raises(InputError, match='character device'):
        fileio.write_atomic(str(link), 'x\n')
    assert os.readlink(link) == node
    assert stat.S_ISCHR(os.lstat(node).st_mode)


def test_refuses_a_fifo_without_opening_it(tmp_path):
    fifo = tmp_path / 'fifo'
    os.mkfifo(fifo)
    with pytest.raises(InputError, match='FIFO'):
        hang.call(lambda: fileio.write_atomic(str(fifo), 'x\n'),
                  release=[fifo])
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_refuses_a_directory_and_a_dangling_link(tmp_path):
    with pytest.raises(InputError, match='directory'):
        fileio.write_atomic(str(tmp_path), 'x')
    dangling = tmp_path / 'dangling'
    dangling.symlink_to(tmp_path / 'nowhere')
    with pytest.raises(InputError, match='dangling'):
        fileio.write_atomic(str(dangling), 'x')
    assert not (tmp_path / 'nowhere').exists()


def test_refuses_an_empty_path_and_a_missing_directory(tmp_path):
    with pytest.raises(InputError, match='empty path'):
        fileio.write_atomic('', 'x')
    with pytest.raises(InputError, match='directory'):
        fileio.write_atomic(str(tmp_path / 'no' / 'file'), 'x')


def test_refuses_a_device_where_the_backup_goes(tmp_path):
    target = tmp_path / 'nova.conf'
    target.write_text('old\n')
    backup = tmp_path / 'nova.conf.bak'
    _make_char_device(str(backup))
    with pytest.raises(InputError, match='character device'):
        fileio.write_atomic(str(target), 'new\n', backup=str(backup))
    assert target.read_text() == 'old\n'
    assert stat.S_ISCHR(os.lstat(backup).st_mode)


def test_a_link_planted_where_the_backup_goes_is_refused(tmp_path):
    # Before: the old content was written to the link's target, a
    # root-owned file anywhere.
    target = tmp_path / 'nova.conf'
    target.write_text('old\n')
    precious = tmp_path / 'shadow'
    precious.write_text('precious\n')
    backup = tmp_path / 'nova.conf.bak'
    backup.symlink_to(precious)
    with pytest.raises(InputError, match=r'nova.conf.bak: is a symbolic '
                       r'link.*\(fix: remove the link'):
        fileio.write_atomic(str(target), 'new\n', backup=str(backup))
    assert target.read_text() == 'old\n'
    assert precious.read_text() == 'precious\n'
    assert os.path.islink(backup)


def test_a_link_planted_after_the_check_is_replaced_not_followed(tmp_path):
    target = tmp_path / 'nova.conf'
    target.write_text('old\n')
    precious = tmp_path / 'shadow'
    precious.write_text('precious\n')
    backup = tmp_path / 'nova.conf.bak'
    temp = fileio._prepare_backup(str(backup), b'old\n', None)
    backup.symlink_to(precious)             # the race: planted now
    fileio._commit_backup(temp, str(backup))
    assert precious.read_text() == 'precious\n'
    assert not os.path.islink(backup)
    assert backup.read_text() == 'old\n'


def test_backup_holds_the_previous_content(tmp_path):
    target = tmp_path / 'nova.conf'
    target.write_text('old\n')
    result = fileio.write_atomic(str(target), 'new\n',
                                 backup=str(target) + '.bak')
    assert result == 'replaced'
    assert target.read_text() == 'new\n'
    assert (tmp_path / 'nova.conf.bak').read_text() == 'old\n'


@pytest.mark.skipif(not shutil.which('chattr'), reason='no chattr')
def test_immutable_target_keeps_the_earlier_backup(tmp_path):
    target = tmp_path / 'nova.conf'
    target.write_text('current\n')
    backup = tmp_path / 'nova.conf.bak'
    backup.write_text('pristine\n')
    if subprocess.run(['chattr', '+i', str(target)]).returncode:
        pytest.skip('this filesystem or user cannot set chattr +i')
    try:
        with pytest.raises(InputError, match='immutable'):
            fileio.write_atomic(str(target), 'new\n', backup=str(backup))
    finally:
        subprocess.run(['chattr', '-i', str(target)], check=True)
    assert target.read_text() == 'current\n'
    assert backup.read_text() == 'pristine\n'


def test_symlink_stays_a_link(tmp_path):
    real = tmp_path / 'real.conf'
    real.write_text('old\n')
    link = tmp_path / 'nova.conf'
    link.symlink_to(real)
    fileio.write_atomic(str(link), 'new\n', backup=str(link) + '.bak')
    assert link.is_symlink() and real.read_text() == 'new\n'


def test_no_backup_of_a_file_that_does_not_exist(tmp_path):
    with pytest.raises(InputError, match='nothing to back up'):
        fileio.write_atomic(str(tmp_path / 'new'), 'x',
                            backup=str(tmp_path / 'new.bak'))
    assert not (tmp_path / 'new').exists()
    assert not (tmp_path / 'new.bak').exists()


def _write_as_nobody(path, answers):
    if ROOT:
        os.setgid(65534)
        os.setuid(65534)
    try:
        fileio.write_atomic(path, '{}')
        answers.put('written')
    except InputError as exc:
        answers.put(str(exc))


def test_unwritable_directory_is_one_line(request):
    """``host capture`` or ``-o`` into a directory the user may not write."""
    top = tempfile.mkdtemp(prefix='kvmtune-fileio-')   # not under 0700
    request.addfinalizer(lambda: shutil.rmtree(top))
    os.chmod(top, 0o755)
    directory = pathlib.Path(top) / 'ro'
    directory.mkdir()
    os.chmod(directory, 0o555)
    context = multiprocessing.get_context('fork')
    answers = context.Queue()
    child = context.Process(target=_write_as_nobody,
                            args=(str(directory / 'facts.json'), answers))
    child.start()
    child.join(30)
    answer = answers.get(timeout=5)
    assert 'not writable' in answer and '\n' not in answer
    assert str(directory / 'facts.json') in answer
    assert os.listdir(directory) == []


def test_read_only_filesystem_is_one_line(tmp_path):
    """/proc is read-only for new files even for root."""
    with pytest.raises(InputError,
                       match=r'cannot write /proc/\.kvmtune-facts\.json\..*: '
                             r'No such file or '
                             r'directory; nothing was written') as caught:
        fileio.write_atomic('/proc/kvmtune-facts.json', '{}')
    assert '\n' not in str(caught.value)
    assert '/proc/kvmtune-facts.json' in str(caught.value)


def _append_under_lock(path, word, delay):
    with fileio.lock(path):
        text = open(path).read()
        time.sleep(delay)                       # the other one tries now
        fileio.write_atomic(path, text + word + '\n')


def test_concurrent_writers_lose_nothing(tmp_path):
    target = str(tmp_path / 'nova.conf')
    with open(target, 'w') as handle:
        handle.write('start\n')
    context = multiprocessing.get_context('fork')
    workers = [context.Process(target=_append_under_lock,
                               args=(target, f'w{i}', 0.05))
               for i in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
        assert worker.exitcode == 0
    lines = open(target).read().split()
    assert lines[0] == 'start'
    assert sorted(lines[1:]) == [f'w{i}' for i in range(6)]


def test_lock_is_reentrant_in_one_thread(tmp_path):
    target = str(tmp_path / 'f')
    with fileio.lock(target):
        with fileio.lock(target):
            fileio.write_atomic(target, 'x')
    assert open(target).read() == 'x'


def test_nothing_but_the_file_and_its_backup_is_left(tmp_path):
    target = tmp_path / 'nova.conf'
    target.write_text('old\n')
    for text in ('one\n', 'two\n', 'two\n'):
        fileio.write_atomic(str(target), text,
                            backup=str(target) + '.kvmtune.bak')
    assert sorted(os.listdir(tmp_path)) == ['nova.conf',
                                            'nova.conf.kvmtune.bak']


def test_lock_refuses_a_path_swapped_for_a_fifo(tmp_path):
    target = tmp_path / 'nova.conf'
    target.write_text('old\n')
    with fileio.lock(str(target)):
        pass
    target.unlink()
    os.mkfifo(target)

    def take_the_lock():
        with fileio.lock(str(target)):
            pass

    with pytest.raises(InputError, match='FIFO'):
        hang.call(take_the_lock, release=[target])


def test_lock_without_waiting_refuses_a_held_file(tmp_path):
    """A second writer of a file someone holds is refused at once, in one
    line, and the file is left as it was (a textfile has one writer)."""
    path = tmp_path / 'kvmtune_verify.prom'
    path.write_text('old\n')
    with locks.held(path):
        with pytest.raises(InputError, match='another program is writing '
                           'it') as caught:
            with fileio.lock(str(path), wait=False):
                fileio.write_atomic(str(path), 'new\n')
        assert '\n' not in caught.value.line()
        assert path.read_text() == 'old\n'
        assert os.listdir(tmp_path) == ['kvmtune_verify.prom']
    with fileio.lock(str(path), wait=False):    # free again: taken
        fileio.write_atomic(str(path), 'new\n')
    assert path.read_text() == 'new\n'


# -- write_if_changed ------------------------------------------------------

def test_write_if_changed_leaves_the_same_content_alone(tmp_path):
    path = tmp_path / 'out.txt'
    assert fileio.write_if_changed(str(path), 'a\n') is True
    before = os.stat(path)
    assert fileio.write_if_changed(str(path), b'a\n') is False
    after = os.stat(path)
    assert (after.st_ino, after.st_mtime_ns) == \
        (before.st_ino, before.st_mtime_ns)


@pytest.mark.parametrize('old, new', [('ab\n', 'ba\n'),     # same size
                                      ('a\n', 'a\n\n'),     # longer
                                      ('a\n\n', 'a\n')])    # shorter
def test_write_if_changed_writes_other_content(tmp_path, old, new):
    path = tmp_path / 'out.txt'
    path.write_text(old)
    assert fileio.write_if_changed(str(path), new) is True
    assert path.read_text() == new


def test_write_if_changed_refuses_a_fifo_without_opening_it(tmp_path):
    fifo = tmp_path / 'fifo'
    os.mkfifo(fifo)
    with pytest.raises(InputError, match='FIFO'):
        hang.call_in_child(lambda: fileio.write_if_changed(str(fifo), 'x'))
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_write_if_changed_keeps_the_mode_of_a_new_file(tmp_path):
    path = tmp_path / 'secret'
    old = os.umask(0)
    try:
        assert fileio.write_if_changed(str(path), 'x', mode=0o600) is True
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
