"""kvmtune.novaconf.apply on real files: diff, backup, atomic write."""

import os
import shutil

import pytest

from kvmtune.errors import InputError
from kvmtune.novaconf import update
from kvmtune.novaconf import validate
from tests import paths

FIXTURES = os.path.join(paths.FIXTURES, 'novaconf')
# What the pinned-hugepages-ept profile plans on the 2-socket Intel
# fixture host (tests/fixtures/hosts/intel-2s-smt-ept-1g).
CHANGES = {
    'DEFAULT': {'reserved_host_memory_mb': '4096',
                'reserved_huge_pages': ['node:0,size:1GB,count:1',
                                        'node:1,size:1GB,count:1']},
    'compute': {'cpu_shared_set': '0,20,40,60',
                'cpu_dedicated_set': '1-19,21-39,41-59,61-79'},
    'filter_scheduler': {'enabled_filters': (
        'ComputeFilter,ComputeCapabilitiesFilter,ImagePropertiesFilter,'
        'ServerGroupAntiAffinityFilter,ServerGroupAffinityFilter,'
        'NUMATopologyFilter')},
    'workarounds': {'disable_fallback_pcpu_query': 'true'},
}
SECRETS = ('r4bb1t-S3cret', 'db-S3cret', 'ks-S3cret', 'pl-S3cret',
           '6f1c0f7aa2b54a5c8d3e9f0a1b2c3d4e')


@pytest.fixture(autouse=True)
def no_configured_nova(monkeypatch):
    # Unit tests check with kvmtune's rules and whatever Nova this Python
    # finds by itself; tests/functional/test_novaconf_nova_opts.py covers
    # a configured Nova.
    monkeypatch.delenv(validate.ENV_PYTHON, raising=False)


def copy_fixture(tmp_path, name):
    path = tmp_path / 'nova.conf'
    shutil.copyfile(os.path.join(FIXTURES, name), path)
    return path


def expected(name):
    with open(os.path.join(FIXTURES, name), 'rb') as handle:
        return handle.read()


def snapshot(path):
    info = os.stat(path)
    return path.read_bytes(), info.st_mtime_ns, info.st_ino


@pytest.mark.parametrize('name', ['devstack', 'duplicates'])
def test_apply_writes_the_expected_file_and_backup(tmp_path, name):
    path = copy_fixture(tmp_path, f'{name}.conf')
    result = update.apply(str(path), CHANGES)
    assert result.changed and result.written
    assert path.read_bytes() == expected(f'{name}.after.conf')
    backup = tmp_path / 'nova.conf.kvmtune.bak'
    assert result.backup == str(backup)
    assert backup.read_bytes() == expected(f'{name}.conf')
    assert sorted(os.listdir(tmp_path)) == ['nova.conf',
                                            'nova.conf.kvmtune.bak']


def test_second_apply_changes_no_byte_and_keeps_mtime(tmp_path):
    path = copy_fixture(tmp_path, 'devstack.conf')
    update.apply(str(path), CHANGES)
    before = snapshot(path)
    backup_before = snapshot(tmp_path / 'nova.conf.kvmtune.bak')
    result = update.apply(str(path), CHANGES)
    assert not result.changed and not result.written
    assert result.diff == ''
    assert snapshot(path) == before
    assert snapshot(tmp_path / 'nova.conf.kvmtune.bak') == backup_before
    assert result.message('pinned-hugepages-ept') == (
        "nova.conf already has profile pinned-hugepages-ept's options; "
        f"nothing changed ({path})")


def test_dry_run_prints_the_diff_and_writes_nothing(tmp_path):
    path = copy_fixture(tmp_path, 'devstack.conf')
    before = snapshot(path)
    result = update.apply(str(path), CHANGES, dry_run=True)
    assert result.changed and not result.written
    assert '+cpu_dedicated_set = 1-19,21-39,41-59,61-79\n' in result.diff
    assert '-cpu_shared_set = 0-3\n' in result.diff
    assert snapshot(path) == before
    assert os.listdir(tmp_path) == ['nova.conf']


def test_diff_masks_secrets(tmp_path):
    path = copy_fixture(tmp_path, 'devstack.conf')
    changes = dict(CHANGES, database={'connection': 'sqlite:///new-pw'},
                   DEFAULT={'transport_url': 'rabbit://u:new-pw@h/'})
    result = update.apply(str(path), changes, dry_run=True)
    for secret in SECRETS + ('new-pw',):
        assert secret not in result.diff
    assert '-transport_url = ***\n+transport_url = ***\n' in result.diff
    assert '-connection = ***\n+connection = ***\n' in result.diff


def test_mode_and_owner_are_kept(tmp_path):
    if os.getuid() != 0:
        pytest.skip('changing a file\'s owner needs root')
    path = copy_fixture(tmp_path, 'devstack.conf')
    os.chown(path, 4242, 4343)
    os.chmod(path, 0o640)
    update.apply(str(path), CHANGES)
    for written in (path, tmp_path / 'nova.conf.kvmtune.bak'):
        info = os.stat(written)
        assert (info.st_uid, info.st_gid) == (4242, 4343)
        assert info.st_mode & 0o7777 == 0o640


def test_mode_is_kept_for_the_current_user(tmp_path):
    path = copy_fixture(tmp_path, 'devstack.conf')
    os.chmod(path, 0o600)
    update.apply(str(path), CHANGES)
    assert os.stat(path).st_mode & 0o7777 == 0o600
    assert os.stat(tmp_path / 'nova.conf.kvmtune.bak').st_mode & 0o777 == \
        0o600


def test_symlink_stays_a_link(tmp_path):
    real = copy_fixture(tmp_path, 'devstack.conf')
    link = tmp_path / 'link.conf'
    link.symlink_to(real)
    update.apply(str(link), CHANGES)
    assert link.is_symlink()
    assert real.read_bytes() == expected('devstack.after.conf')


@pytest.mark.parametrize('failing', ['replace', 'fsync', 'fchmod'])
def test_failure_while_writing_leaves_the_original(tmp_path, monkeypatch,
                                                   failing):
    path = copy_fixture(tmp_path, 'devstack.conf')
    before = snapshot(path)

    def fail(*args, **kwargs):
        raise OSError(28, 'No space left on device', str(path))

    # The last write (nova.conf itself) fails; the backup may be written.
    real = getattr(os, failing)
    calls = []

    def fail_second_write(*args, **kwargs):
        calls.append(args)
        if len(calls) > 1:
            fail()
        return real(*args, **kwargs)

    monkeypatch.setattr(update.os, failing, fail_second_write)
    with pytest.raises(InputError) as info:
        update.apply(str(path), CHANGES)
    assert 'No space left on device' in str(info.value)
    assert snapshot(path) == before
    assert sorted(os.listdir(tmp_path)) == ['nova.conf',
                                            'nova.conf.kvmtune.bak']


def test_file_edited_during_the_check_is_not_overwritten(
        tmp_path, monkeypatch):
    path = copy_fixture(tmp_path, 'devstack.conf')
    real_check = update.check_nova

    def check_while_someone_edits(*args, **kwargs):
        with open(path, 'a') as handle:
            handle.write('debug = False\n')
        return real_check(*args, **kwargs)

    monkeypatch.setattr(update, 'check_nova', check_while_someone_edits)
    with pytest.raises(InputError, match='changed while kvmtune was'):
        update.apply(str(path), CHANGES)
    assert path.read_bytes() == expected('devstack.conf') + \
        b'debug = False\n'
    assert os.listdir(tmp_path) == ['nova.conf']


def test_failure_writing_the_backup_writes_nothing(tmp_path, monkeypatch):
    path = copy_fixture(tmp_path, 'devstack.conf')
    before = snapshot(path)

    def fail(*args, **kwargs):
        raise OSError(30, 'Read-only file system', str(path))

    monkeypatch.setattr(update.os, 'replace', fail)
    with pytest.raises(InputError):
        update.apply(str(path), CHANGES)
    assert snapshot(path) == before
    assert os.listdir(tmp_path) == ['nova.conf']


@pytest.mark.parametrize('changes, key, words', [
    ({'compute': {'cpu_shared_set': '0-'}}, '[compute] cpu_shared_set',
     "'0-' is not N, N-M"),
    ({'compute': {'cpu_shared_set': '0-3', 'cpu_dedicated_set': '3-7'}},
     '[compute] cpu_dedicated_set', 'CPUs [3] are also in cpu_shared_set'),
    ({'DEFAULT': {'reserved_huge_pages': ['node:0,size:1GB']}},
     '[DEFAULT] reserved_huge_pages', 'is not node:N,size:S,count:N'),
    ({'DEFAULT': {'my_ip': '10.0.0.1\n[x]'}}, '[DEFAULT] my_ip',
     'must fit on one line'),
    ({'compute]': {'x': '1'}}, '[compute]]', 'not a section name'),
    ({'DEFAULT': {'#x': '1'}}, '[DEFAULT] #x', 'not an option name'),
])
def test_values_kvmtune_rejects(tmp_path, changes, key, words):
    path = copy_fixture(tmp_path, 'devstack.conf')
    before = snapshot(path)
    with pytest.raises(InputError) as info:
        update.apply(str(path), changes)
    line = info.value.line()
    assert line.startswith(f'{path}: {key}: ')
    assert words in line and '(fix: ' in line
    assert snapshot(path) == before


def test_secret_value_never_appears_in_an_error(tmp_path):
    path = copy_fixture(tmp_path, 'devstack.conf')
    with pytest.raises(InputError) as info:
        update.apply(str(path), {'database': {
            'connection': 'mysql://root:top-secret@db/nova\n'}})
    assert 'top-secret' not in info.value.line()


@pytest.mark.parametrize('content, words', [
    (b'[DEFAULT]\ndebug = True\n\x00\x01\x02', 'NUL bytes'),
    (b'[DEFAULT]\nmy_ip = caf\xe9\n', 'not UTF-8'),
    (b'\xef\xbb\xbf[DEFAULT]\ndebug = True\n', 'byte order mark'),
    (b'debug = True\n', 'line 1: option \'debug\' comes before any'),
    (b'[DEFAULT\ndebug = True\n', 'line 1: malformed section header'),
    (b'[DEFAULT]\ndebug True\n', 'line 2: no "="'),
])
def test_unreadable_content(tmp_path, content, words):
    path = tmp_path / 'nova.conf'
    path.write_bytes(content)
    before = snapshot(path)
    with pytest.raises(InputError) as info:
        update.apply(str(path), CHANGES)
    assert words in info.value.line()
    assert str(path) in info.value.line()
    assert snapshot(path) == before
    assert os.listdir(tmp_path) == ['nova.conf']


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(InputError, match='no such file'):
        update.apply(str(tmp_path / 'nova.conf'), CHANGES)
    with pytest.raises(InputError, match='is a directory'):
        update.apply(str(tmp_path), CHANGES)
    assert os.listdir(tmp_path) == []


def test_operator_filter_list_is_extended_not_replaced(tmp_path):
    # devstack.conf lists SameHostFilter and DifferentHostFilter and not
    # NUMATopologyFilter: kvmtune appends the one it needs, drops nothing.
    path = copy_fixture(tmp_path, 'devstack.conf')
    update.apply(str(path), CHANGES)
    filters = update.parse_config(str(path), path.read_text()).get(
        'filter_scheduler', 'enabled_filters').split(',')
    assert filters[-3:] == ['SameHostFilter', 'DifferentHostFilter',
                            'NUMATopologyFilter']
    assert len(filters) == len(set(filters)) == 8
    again = update.apply(str(path), CHANGES)
    assert not again.changed


@pytest.mark.parametrize('current, planned, result', [
    ('A,B', 'A,C', 'A,B,C'),          # keeps B, adds the needed C
    ('B', 'A,C', 'B,C'),              # default A was removed on purpose
    ('B, C ', 'A,C', 'B,C'),          # already there: nothing added
])
def test_extend_list(current, planned, result):
    assert update.extend_list(current, planned, ('A',)) == result
