"""kvmtune.tuning.novaconf.update.apply on real files: diff, backup,
atomic write."""

import glob
import json
import os
import re
import shutil
import stat
import subprocess

import pytest

from kvmtune.errors import InputError
from kvmtune.tuning.novaconf import inifile
from kvmtune.tuning.novaconf import update
from kvmtune.tuning.novaconf import validate
from tests import devices
from tests import hang
from tests import paths
from tests.unit.tuning.export import consumers

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


# Runs in Nova's Python: for each file, oslo.config's own parser gives the
# raw lines, and nova.conf.CONF (Nova's options registered) loads the file
# alone as a Nova service does; prints what it reads for every option the
# file sets (Nova's options: the typed value, spelled as nova.conf spells
# it; any other: the raw values), and each registered option's default.
_NOVA_READS_FILES = r'''
import json, sys, warnings
warnings.simplefilter('ignore')
import nova.conf
from oslo_config import cfg
CONF = nova.conf.CONF

def spell(value):
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return ','.join(f'{k}:{v}' for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ','.join(spell(v) for v in value)
    return str(value)

out = {}
for path in json.loads(sys.argv[1]):
    sections = {}
    cfg.ConfigParser(path, sections).parse()
    CONF(args=[], project='nova', default_config_files=[path],
         default_config_dirs=[])
    read, raw, defaults = {}, {}, {}
    for section, options in sections.items():
        group = None if section == 'DEFAULT' else section
        for option, values in options.items():
            key = f'{section}.{option}'
            try:
                opt = CONF._get_opt_info(option, group)['opt']
            except (cfg.NoSuchOptError, cfg.NoSuchGroupError):
                raw[key] = values
                continue
            value = getattr(CONF if group is None else CONF[group], option)
            read[key] = (None if value is None else
                         [spell(v) for v in value] if opt.multi else
                         spell(value))
            defaults[key] = None if opt.default is None else \
                spell(opt.default)
    out[path] = {'read': read, 'raw': raw, 'defaults': defaults}
print(json.dumps(out))
'''


@pytest.fixture(scope='module')
def nova_reads_golden():
    """{file name: what Nova's oslo.config reads from it} for every
    nova.conf under tests/fixtures/novaconf, in one run of Nova's
    Python."""
    files = sorted(glob.glob(os.path.join(FIXTURES, '*.conf')))
    done = subprocess.run(
        [consumers.NOVA_PYTHON, '-c', _NOVA_READS_FILES, json.dumps(files)],
        capture_output=True, text=True, timeout=300, cwd='/')
    assert done.returncode == 0, done.stderr[-3000:]
    return {os.path.basename(p): got
            for p, got in json.loads(done.stdout).items()}


@consumers.needs_nova
def test_every_golden_file_is_read_by_oslo_config(nova_reads_golden):
    names = sorted(os.path.basename(p) for p in
                   glob.glob(os.path.join(FIXTURES, '*.conf')))
    assert names == ['devstack.after.conf', 'devstack.conf',
                     'duplicates.after.conf', 'duplicates.conf',
                     'multiline.conf']
    assert sorted(nova_reads_golden) == names
    for name in names:
        assert nova_reads_golden[name]['read'], name


def _spelled(value):
    return list(value) if isinstance(value, list) else str(value)


@consumers.needs_nova
@pytest.mark.parametrize('name', ['devstack', 'duplicates'])
def test_nova_reads_the_plan_from_each_after_file(nova_reads_golden, name):
    """What kvmtune wrote (X.after.conf, the golden file of
    test_apply_writes_the_expected_file_and_backup) is, as Nova's
    oslo.config reads it, X.conf with CHANGES applied: each planned
    value, nothing else moved. duplicates.conf is the hard case: a
    repeated single-valued option, and [Compute] after [compute], which
    oslo.config folds into one group whose last value wins."""
    before = nova_reads_golden[f'{name}.conf']
    after = nova_reads_golden[f'{name}.after.conf']
    planned = {f'{section}.{option}': _spelled(value)
               for section, options in CHANGES.items()
               for option, value in options.items()}
    filters = 'filter_scheduler.enabled_filters'
    # kvmtune extends an operator's filter list rather than replace it:
    # the filters Nova read before, then each planned one beyond Nova's
    # own default that is not there yet
    current = (before['read'].get(filters) or
               after['defaults'][filters]).split(',')
    default = after['defaults'][filters].split(',')
    planned[filters] = ','.join(current + [
        f for f in planned[filters].split(',')
        if f not in default and f not in current])
    for key, value in planned.items():
        assert after['read'][key] == value, key
    for key, value in before['read'].items():
        if key not in planned:
            assert after['read'][key] == value, key
    assert set(before['read']) - set(after['read']) == set()
    # the rest, as oslo.config's parser gives them: options Nova does not
    # register (oslo.log's, keystonemiddleware's) keep their raw values;
    # a section spelled in another case ([Compute]) is no group of its
    # own to Nova, so its lines show here: kvmtune set the planned value
    # there too, else it would win over [compute]
    assert set(after['raw']) == set(before['raw'])
    for key, values in before['raw'].items():
        section, option = key.split('.', 1)
        folded = f'{section.lower()}.{option}'
        if section != 'DEFAULT' and folded in planned:
            assert after['raw'][key] == [planned[folded]], key
        else:
            assert after['raw'][key] == values, key


@consumers.needs_nova
def test_nova_reads_the_multiline_file_as_its_readme_says(
        nova_reads_golden):
    """tests/fixtures/novaconf/README.md: quoted values, ``key: value``,
    an empty value, a value continued on an indented line."""
    got = nova_reads_golden['multiline.conf']
    assert got['read'] == {
        'DEFAULT.my_ip': '10.0.0.11',
        'DEFAULT.reserved_host_memory_mb': '1024',
        'filter_scheduler.enabled_filters':
            'ComputeFilter,NUMATopologyFilter',
        'filter_scheduler.weight_classes':
            'nova.scheduler.weights.all_weighers',
        'libvirt.virt_type': 'qemu',
    }
    assert got['raw'] == {'DEFAULT.dhcp_domain': ['']}


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


def _fail_nth(monkeypatch, name, nth):
    real = getattr(os, name)
    calls = []

    def failing(*args, **kwargs):
        calls.append(args)
        if len(calls) == nth:
            raise OSError(28, 'No space left on device')
        return real(*args, **kwargs)

    monkeypatch.setattr(os, name, failing)
    return calls


@pytest.mark.parametrize('failing, nth', [
    ('write', 1), ('write', 2), ('fsync', 1), ('fsync', 2), ('replace', 1),
])
def test_failure_while_writing_leaves_the_original_and_no_backup(
        tmp_path, monkeypatch, failing, nth):
    """The backup is written to a temporary file first, the file second, the
    backup renamed last: a full disk at any step before leaves nova.conf,
    and any earlier backup, as they were (and no temporary file)."""
    path = copy_fixture(tmp_path, 'devstack.conf')
    backup = tmp_path / 'nova.conf.kvmtune.bak'
    backup.write_bytes(b'an earlier backup\n')
    before = snapshot(path)
    calls = _fail_nth(monkeypatch, failing, nth)
    with pytest.raises(InputError,
                       match='No space left on device') as info:
        update.apply(str(path), CHANGES)
    assert len(calls) >= nth
    assert 'No space left on device' in str(info.value)
    assert snapshot(path) == before
    assert backup.read_bytes() == b'an earlier backup\n'
    assert sorted(os.listdir(tmp_path)) == ['nova.conf',
                                            'nova.conf.kvmtune.bak']


def test_metadata_that_cannot_be_copied_means_in_place(tmp_path,
                                                       monkeypatch):
    """An extended attribute the new file may not get (an SELinux label
    without relabel rights) would be lost by a replace: nova.conf is
    rewritten in place instead (same inode, label and mode kept)."""
    path = copy_fixture(tmp_path, 'devstack.conf')
    os.chmod(path, 0o640)
    os.setxattr(path, 'user.label', b'nova_etc_t')
    inode = os.stat(path).st_ino

    def refuse(*args, **kwargs):
        raise PermissionError(1, 'Operation not permitted')

    monkeypatch.setattr(os, 'setxattr', refuse)
    update.apply(str(path), CHANGES)
    assert path.read_bytes() == expected('devstack.after.conf')
    assert os.stat(path).st_ino == inode
    assert os.getxattr(path, 'user.label') == b'nova_etc_t'
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert (tmp_path / 'nova.conf.kvmtune.bak').read_bytes() == \
        expected('devstack.conf')


def test_failure_renaming_the_backup_says_where_the_old_content_is(
        tmp_path, monkeypatch):
    path = copy_fixture(tmp_path, 'devstack.conf')
    old = path.read_bytes()
    _fail_nth(monkeypatch, 'replace', 2)
    with pytest.raises(InputError,
                       match='the new content was written, but the backup '
                             'could not be renamed') as info:
        update.apply(str(path), CHANGES)
    line = str(info.value)
    assert 'the new content was written' in line
    kept = line.split('the previous content is in ')[1].split(';')[0]
    assert open(kept, 'rb').read() == old
    assert path.read_bytes() == expected('devstack.after.conf')


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
    with pytest.raises(InputError,
                       match='Read-only file system; nothing was written'):
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
    with pytest.raises(InputError, match=re.escape(words)) as info:
        update.apply(str(path), changes)
    line = info.value.line()
    assert line.startswith(f'{path}: {key}: ')
    assert words in line and '(fix: ' in line
    assert snapshot(path) == before


def test_secret_value_never_appears_in_an_error(tmp_path):
    path = copy_fixture(tmp_path, 'devstack.conf')
    with pytest.raises(InputError,
                       match=r'\[database\] connection: a value must fit on '
                             r'one line') as info:
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
    with pytest.raises(InputError, match=re.escape(words)) as info:
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


@pytest.mark.parametrize('section, option, current, planned, result', [
    # Nova keeps the last mode of each source type: kvmtune's file=none
    # takes the operator's file=writeback's place, network= stays
    ('libvirt', 'disk_cachemodes', 'file=writeback,network=writeback',
     'file=none,block=none', 'file=none,network=writeback,block=none'),
    # one flag, spelt three ways (ignore_case, +/- turn it on or off)
    ('libvirt', 'cpu_model_extra_flags', 'pcid,-VMX', 'vmx',
     'pcid,vmx'),
    ('libvirt', 'cpu_model_extra_flags', 'pcid', 'svm,npt',
     'pcid,svm,npt'),
    # no key: a filter is kept whatever kvmtune's are
    ('filter_scheduler', 'enabled_filters', 'PciPassthroughFilter',
     'ComputeFilter,NUMATopologyFilter',
     'PciPassthroughFilter,NUMATopologyFilter'),
])
def test_every_extended_list_keeps_the_operators_items(
        section, option, current, planned, result):
    ini = inifile.IniFile(f'[{section}]\n{option} = {current}\n')
    default = update.list_default(section, option)
    planned_value = ','.join(default + [planned]) if default else planned
    got = update.resolve_changes(ini, {section: {option: planned_value}})
    assert got[section][option] == result


def test_an_option_kvmtune_owns_is_replaced():
    ini = inifile.IniFile('[compute]\ncpu_dedicated_set = 1-3\n')
    got = update.resolve_changes(ini, {'compute': {'cpu_dedicated_set':
                                                   '4-7'}})
    assert got == {'compute': {'cpu_dedicated_set': '4-7'}}


# -- hostile input ------------------------------------------------------------

def _char_device(path):
    directory, name = os.path.split(path)
    devices.char_device(directory, name)


@pytest.mark.parametrize('dry_run', [False, True])
def test_a_character_device_stays_a_device(tmp_path, dry_run):
    node = tmp_path / 'nova.conf'
    _char_device(str(node))
    with pytest.raises(InputError,
                       match='is a character device, not a regular '
                             'file') as info:
        update.apply(str(node), CHANGES, dry_run=dry_run)
    assert 'character device' in str(info.value)
    assert stat.S_ISCHR(os.lstat(node).st_mode)
    assert os.listdir(tmp_path) == ['nova.conf']


def test_a_symlink_to_a_null_device_is_refused(tmp_path):
    node = devices.char_device(tmp_path)
    link = tmp_path / 'nova.conf'
    link.symlink_to(node)
    with pytest.raises(InputError, match='character device'):
        update.apply(str(link), CHANGES)
    assert stat.S_ISCHR(os.lstat(node).st_mode)
    assert sorted(os.listdir(tmp_path)) == ['nova.conf', 'null']


def test_a_fifo_is_refused_without_hanging(tmp_path):
    fifo = tmp_path / 'nova.conf'
    os.mkfifo(fifo)
    with pytest.raises(InputError, match='FIFO'):
        hang.call(lambda: update.apply(str(fifo), CHANGES), release=[fifo])
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_an_empty_path_is_not_the_default_nova_conf():
    with pytest.raises(InputError, match='empty path'):
        update.apply('', CHANGES)


@pytest.mark.skipif(not shutil.which('chattr'), reason='needs chattr')
def test_immutable_nova_conf_leaves_the_earlier_backup(tmp_path):
    path = copy_fixture(tmp_path, 'devstack.conf')
    backup = tmp_path / 'nova.conf.kvmtune.bak'
    backup.write_bytes(b'the pristine file\n')
    if os.system(f'chattr +i {path} 2>/dev/null'):
        pytest.skip('cannot chattr +i here')
    try:
        with pytest.raises(InputError, match='immutable'):
            update.apply(str(path), CHANGES)
    finally:
        os.system(f'chattr -i {path}')
    assert path.read_bytes() == expected('devstack.conf')
    assert backup.read_bytes() == b'the pristine file\n'


def test_shadow_style_file_never_echoes_a_hash(tmp_path):
    """--config /etc/shadow by mistake: the error names the line, not its
    content; and a hash that parses as an option is masked in the diff."""
    path = tmp_path / 'shadow'
    shadow = ('root:$6$Zx9salt$QmYhashHASHhashHASHhash0123456789:'
              '19000:0:99999:7:::\n'
              'nova:$y$j9T$pw1abc$OtherHash/abc.def:19000::::::\n')
    secrets = ('Zx9salt', 'QmYhash', 'pw1abc', 'OtherHash')
    path.write_text(shadow)
    with pytest.raises(InputError,
                       match=r"line 1: option 'root' comes before any "
                             r"\[section\] header") as info:
        update.apply(str(path), CHANGES)
    line = str(info.value)
    assert '\n' not in line and 'line 1' in line
    assert not [s for s in secrets if s in line], line
    path.write_text('[DEFAULT]\n' + shadow)
    result = update.apply(str(path), CHANGES, dry_run=True)
    assert 'root:' in result.diff
    assert not [s for s in secrets if s in result.diff], result.diff


def test_redis_password_never_in_the_diff(tmp_path):
    path = copy_fixture(tmp_path, 'devstack.conf')
    with open(path, 'a') as handle:
        handle.write('[cache]\nenabled = true\n'
                     'backend = dogpile.cache.redis\n'
                     'backend_argument = url:redis://:R3dis-Pw@10.0.0.9:6379\n'
                     'backend_argument = password:R3dis-Pw2\n')
    result = update.apply(str(path), CHANGES, dry_run=True)
    assert result.diff
    assert 'R3dis-Pw' not in result.diff


def _apply_in_child(path, changes):
    update.apply(path, changes)


def test_two_concurrent_applies_lose_no_option(tmp_path, monkeypatch):
    """Each apply reads, checks with Nova (seconds) and writes; without a
    lock the second one's write dropped the first one's options."""
    import multiprocessing

    path = copy_fixture(tmp_path, 'devstack.conf')
    slow = update.check_nova

    def slow_check(*args, **kwargs):
        import time
        time.sleep(0.3)
        return slow(*args, **kwargs)

    monkeypatch.setattr(update, 'check_nova', slow_check)
    first = {'compute': {'cpu_shared_set': '0-1'}}
    second = {'DEFAULT': {'reserved_host_memory_mb': '2048'}}
    context = multiprocessing.get_context('fork')
    workers = [context.Process(target=_apply_in_child,
                               args=(str(path), changes))
               for changes in (first, second)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    from kvmtune.tuning.novaconf import inifile
    ini = inifile.IniFile(path.read_text())
    assert ini.get('compute', 'cpu_shared_set') == '0-1'
    assert ini.get('DEFAULT', 'reserved_host_memory_mb') == '2048'


@pytest.mark.skipif(not shutil.which('setfacl'),
                    reason='needs the acl package (tools/bootstrap)')
def test_acl_and_user_xattr_survive_an_apply(tmp_path):
    import subprocess

    path = copy_fixture(tmp_path, 'devstack.conf')
    os.chmod(path, 0o640)
    subprocess.run(['setfacl', '-m', 'u:nobody:r', str(path)], check=True)
    os.setxattr(path, 'user.origin', b'puppet')
    acl = os.getxattr(path, 'system.posix_acl_access')
    update.apply(str(path), CHANGES)
    assert path.read_bytes() == expected('devstack.after.conf')
    assert os.getxattr(path, 'system.posix_acl_access') == acl
    assert os.getxattr(path, 'user.origin') == b'puppet'


def test_hard_linked_nova_conf_stays_linked(tmp_path):
    path = copy_fixture(tmp_path, 'devstack.conf')
    twin = tmp_path / 'nova-compute.conf'
    os.link(path, twin)
    update.apply(str(path), CHANGES)
    assert twin.read_bytes() == expected('devstack.after.conf')
    assert os.stat(twin).st_ino == os.stat(path).st_ino


def test_stale_temp_of_a_killed_apply_is_removed(tmp_path):
    path = copy_fixture(tmp_path, 'devstack.conf')
    stale = tmp_path / '.nova.conf.kvmtune-k9x2.tmp'
    stale.write_text('[DEFAULT]\nhalf')
    update.apply(str(path), CHANGES)
    assert sorted(os.listdir(tmp_path)) == ['nova.conf',
                                            'nova.conf.kvmtune.bak']


NOVA_PYTHON = paths.NOVA_PYTHON


@pytest.mark.slow
@pytest.mark.skipif(not os.access(NOVA_PYTHON, os.X_OK),
                    reason='the test cloud venv (tools/bootstrap) has Nova')
def test_nova_secret_flags_mask_the_diff_without_any_name_list(
        tmp_path, monkeypatch):
    """With kvmtune's list of secret-looking names emptied, Nova's own
    secret=True still masks [cache] backend_argument's plain value."""
    from kvmtune.tuning.novaconf import diff as ini_diff
    import re

    monkeypatch.setattr(ini_diff, '_SECRET_NAME', re.compile(r'(?!x)x'))
    path = copy_fixture(tmp_path, 'devstack.conf')
    with open(path, 'a') as handle:
        handle.write('[cache]\nbackend_argument = plainRedisWord\n')
    result = update.apply(str(path), {'cache': {'enabled': 'true'}},
                          dry_run=True, nova_python=NOVA_PYTHON)
    assert result.nova
    assert 'backend_argument = ***' in result.diff
    assert 'plainRedisWord' not in result.diff
