"""``kvmtune nova-conf apply`` end to end: output, exit codes, files."""

import contextlib
import io
import json
import os
import pathlib
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile

import pytest

from kvmtune import cli
from kvmtune.tuning.novaconf import validate
from tests import devices
from tests import paths
from tests.unit.tuning.export.consumers import needs_nova
from tests.unit.tuning.novaconf.test_effective import oslo


from tests.unit import fulldisk

FIXTURES = paths.FIXTURES
HOST = os.path.join(FIXTURES, 'hosts', 'intel-2s-smt-ept-1g')
PROFILE = 'pinned-hugepages-ept'
NOBODY = 65534


def kvmtune(*args):
    env = dict(os.environ)
    env.pop(validate.ENV_PYTHON, None)
    return subprocess.run([sys.executable, '-m', 'kvmtune.cli', *args],
                          capture_output=True, text=True, env=env,
                          timeout=120)


def apply_args(path, *extra, profile=PROFILE, service='all', root=HOST):
    # --service given: the default depends on the Nova services running
    # on the machine that runs the tests.
    return ('nova-conf', 'apply', '--profile', profile, '--config',
            str(path), '--root', root, '--service', service, *extra)


@pytest.fixture
def nova_conf(tmp_path):
    path = tmp_path / 'nova.conf'
    shutil.copyfile(os.path.join(FIXTURES, 'novaconf', 'devstack.conf'),
                    path)
    return path


def snapshot(path):
    info = os.stat(path)
    return path.read_bytes(), info.st_mtime_ns


def assert_one_line_error(done, *words):
    assert done.returncode == 2, done.stderr
    assert done.stdout == ''
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith('kvmtune: error: ')
    assert 'Traceback' not in done.stderr
    for word in words:
        assert word in lines[0]


def test_apply_then_apply_again(nova_conf):
    plan = kvmtune('plan', '--profile', PROFILE, '--root', HOST,
                   '--format', 'json')
    wanted = json.loads(plan.stdout)['nova_conf']

    first = kvmtune(*apply_args(nova_conf))
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith(f'--- {nova_conf}\n+++ {nova_conf}\n')
    assert f'+cpu_dedicated_set = {wanted["compute"]["cpu_dedicated_set"]}' \
        in first.stdout
    assert 'S3cret' not in first.stdout + first.stderr
    assert first.stdout.endswith(
        f'wrote {nova_conf} (previous content: {nova_conf}.kvmtune.bak)\n')
    before = snapshot(nova_conf)

    second = kvmtune(*apply_args(nova_conf))
    assert second.returncode == 0, second.stderr
    assert second.stdout == (
        f"nova.conf already has profile {PROFILE}'s options; nothing "
        f"changed ({nova_conf})\n")
    assert snapshot(nova_conf) == before


def test_a_plan_made_before_is_written_as_it_is(nova_conf, tmp_path):
    """--plan FILE: the plan's options as they are, no plan made again
    (the rollout, run again for a host it left disabled, applies the plan
    it applied before this way); the same file as --profile writes."""
    plan = kvmtune('plan', '--profile', PROFILE, '--root', HOST,
                   '--format', 'json')
    made = tmp_path / 'plan.json'
    made.write_text(plan.stdout)
    by_profile = tmp_path / 'by-profile.conf'
    shutil.copyfile(nova_conf, by_profile)
    assert kvmtune(*apply_args(by_profile)).returncode == 0
    done = kvmtune('nova-conf', 'apply', '--plan', str(made), '--config',
                   str(nova_conf), '--service', 'all')
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith(f'wrote {nova_conf} (previous content: '
                                f'{nova_conf}.kvmtune.bak)\n')
    assert nova_conf.read_bytes() == by_profile.read_bytes()
    # a plan that is not one: one line, nothing written
    made.write_text('{"profile": "p"}')
    before = snapshot(nova_conf)
    assert_one_line_error(kvmtune('nova-conf', 'apply', '--plan', str(made),
                                  '--config', str(nova_conf), '--service',
                                  'all'), 'missing key')
    assert snapshot(nova_conf) == before


def test_service_compute_leaves_scheduler_options_out(tmp_path):
    path = tmp_path / 'nova.conf'
    path.write_text('[DEFAULT]\ndebug = true\n')
    done = kvmtune(*apply_args(path, service='compute'))
    assert done.returncode == 0, done.stderr
    written = path.read_text()
    assert 'cpu_dedicated_set = ' in written
    assert 'reserved_huge_pages = ' in written
    assert 'enabled_filters' not in written
    assert 'disable_fallback_pcpu_query' not in written
    assert ('kvmtune: notice: not written: [filter_scheduler] '
            'enabled_filters is read by nova-scheduler, nova-conductor, '
            'not nova-compute') in done.stderr
    assert ('not written: [workarounds] disable_fallback_pcpu_query is '
            'read by nova-scheduler') in done.stderr


def test_service_scheduler_writes_only_scheduler_options(tmp_path):
    path = tmp_path / 'nova.conf'
    path.write_text('[DEFAULT]\ndebug = true\n')
    done = kvmtune(*apply_args(path, service='scheduler'))
    assert done.returncode == 0, done.stderr
    written = path.read_text()
    assert 'enabled_filters = ' in written
    assert 'disable_fallback_pcpu_query = true' in written
    assert 'cpu_dedicated_set' not in written
    assert 'reserved_host_memory_mb' not in written
    assert ('not written: [compute] cpu_dedicated_set is read by '
            'nova-compute, not nova-scheduler: apply it with --service '
            'compute') in done.stderr


def test_dry_run_writes_nothing(nova_conf):
    before = snapshot(nova_conf)
    done = kvmtune(*apply_args(nova_conf, '--dry-run'))
    assert done.returncode == 0, done.stderr
    assert '+cpu_shared_set = 0,20,40,60\n' in done.stdout
    assert done.stdout.endswith(f'dry run: {nova_conf} not written\n')
    assert snapshot(nova_conf) == before
    assert os.listdir(nova_conf.parent) == ['nova.conf']


def test_notice_when_no_nova_is_found(nova_conf):
    if validate.check_with_nova({})['nova'] is not None:
        pytest.skip('this Python (or /usr/bin/python3) has Nova')
    done = kvmtune(*apply_args(nova_conf, '--dry-run'))
    assert done.stderr == f'kvmtune: notice: {validate.NO_NOVA}\n'


def test_nova_python_that_has_no_nova_is_an_error(nova_conf):
    before = snapshot(nova_conf)
    done = kvmtune(*apply_args(nova_conf, '--nova-python', '/bin/false'))
    assert_one_line_error(done, '/bin/false', 'Nova option check failed')
    done = kvmtune(*apply_args(nova_conf, '--nova-python', sys.executable))
    if validate.check_with_nova({})['nova'] is None:
        assert_one_line_error(done, 'cannot import nova', 'fix: ')
    assert snapshot(nova_conf) == before


def test_kvmtune_conf_names_nova_conf_and_nova_python(nova_conf, tmp_path):
    kvmtune_conf = tmp_path / 'kvmtune.conf'
    kvmtune_conf.write_text(f'[nova]\nconfig_file = {nova_conf}\n')
    done = kvmtune('--config-file', str(kvmtune_conf), 'nova-conf',
                   'apply', '--profile', PROFILE, '--root', HOST,
                   '--service', 'all', '--dry-run')
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith(f'dry run: {nova_conf} not written\n')
    kvmtune_conf.write_text(f'[nova]\nconfig_file = {nova_conf}\n'
                            'python_executable = /bin/false\n')
    done = kvmtune('--config-file', str(kvmtune_conf), 'nova-conf',
                   'apply', '--profile', PROFILE, '--root', HOST,
                   '--service', 'all')
    assert_one_line_error(done, '/bin/false: the Nova option check failed')
    assert nova_conf.read_bytes() == (
        pathlib.Path(FIXTURES) / 'novaconf' / 'devstack.conf').read_bytes()


def test_unknown_profile(nova_conf):
    before = snapshot(nova_conf)
    done = kvmtune(*apply_args(nova_conf, profile='no-such-profile'))
    assert_one_line_error(done, "unknown profile 'no-such-profile'",
                          'fix: available: ')
    assert snapshot(nova_conf) == before


@pytest.mark.parametrize('content, words', [
    (b'\x7fELF\x02\x01\x01\x00\x00\x00binary', ['NUL bytes']),
    (b'[DEFAULT]\nmy_ip = \xff\xfe\n', ['not UTF-8']),
    (b'# a comment is fine\ndebug = True\n', ['line 2: ', 'before any']),
    (b'[DEFAULT]\n[libvirt\n', ['line 2: malformed section header']),
])
def test_unparsable_file(tmp_path, content, words):
    path = tmp_path / 'nova.conf'
    path.write_bytes(content)
    before = snapshot(path)
    done = kvmtune(*apply_args(path))
    assert_one_line_error(done, f'{path}: ', 'fix: ', *words)
    assert snapshot(path) == before
    assert os.listdir(tmp_path) == ['nova.conf']


@pytest.mark.parametrize('service', [None, 'compute'])
def test_bad_file_gets_its_error_alone(tmp_path, service):
    # The notices about which service reads what (the default --service
    # and the options a compute file leaves out) come only with a file
    # that can be applied: a bad one is one line, as every bad input.
    path = tmp_path / 'nova.conf'
    path.write_text('garbage without a section\n')
    root = HOST
    if service is None:
        # the default comes from the tree's own proc/
        root = str(tree_running(tmp_path.parent / f'{tmp_path.name}-host',
                                'nova-compute'))
    argv = list(apply_args(path, service=service or 'all', root=root))
    if service is None:
        del argv[argv.index('--service'):argv.index('--service') + 2]
    done = kvmtune(*argv)
    assert_one_line_error(done, f'{path}: line 1: ')
    assert os.listdir(tmp_path) == ['nova.conf']


def tree_running(tree, *programs):
    """A copy of HOST (a capture: no processes) whose proc/ shows
    ``programs`` running (/proc/<pid>/cmdline as Nova's scripts have
    it)."""
    shutil.copytree(HOST, tree, symlinks=True)
    for pid, program in enumerate(programs, start=4242):
        (tree / 'proc' / str(pid)).mkdir(parents=True)
        (tree / 'proc' / str(pid) / 'cmdline').write_bytes(
            f'/usr/bin/python3\0/usr/bin/{program}\0--config-file\0'
            '/etc/nova/nova.conf\0'.encode())
    return tree


@pytest.fixture
def no_local_processes(monkeypatch):
    """Fail the test if this machine's /proc is scanned for Nova's
    services: under --root the default --service is the tree's."""
    from kvmtune.tuning.novaconf import services
    scan = services.processes

    def processes(proc='/proc'):
        if os.path.realpath(proc) == '/proc':
            raise AssertionError(f'this machine\'s {proc} was scanned')
        return scan(proc)
    monkeypatch.setattr(services, 'processes', processes)


def test_under_root_the_default_service_is_the_trees(
        tmp_path, nova_conf, capsys, no_local_processes):
    before = snapshot(nova_conf)
    argv = ['nova-conf', 'apply', '--profile', PROFILE, '--config',
            str(nova_conf), '--dry-run']
    # a capture has no processes: which service reads the file cannot be
    # told, and this machine's services are not that host's
    assert cli.main([*argv, '--root', HOST]) == 2
    out, err = capsys.readouterr()
    assert out == '' and err.count('\n') == 1, err
    assert err.startswith(f'kvmtune: error: {HOST}: --service: no Nova '
                          f'service process in {HOST}/proc')
    assert err.rstrip().endswith('(fix: give --service compute, scheduler '
                                 'or all)')
    # a tree whose proc/ shows Nova's services: the default is theirs
    tree = tree_running(tmp_path / 'host', 'nova-compute', 'nova-scheduler')
    assert cli.main([*argv, '--root', str(tree)]) == 0
    out, err = capsys.readouterr()
    assert ('kvmtune: notice: --service all: this host runs nova-compute '
            f'and nova-scheduler (in {tree}/proc)') in err
    assert snapshot(nova_conf) == before


def test_missing_file_and_directory(tmp_path):
    missing = kvmtune(*apply_args(tmp_path / 'nova.conf'))
    assert_one_line_error(missing, 'nova.conf: no such file', '--config')
    directory = kvmtune(*apply_args(tmp_path))
    assert_one_line_error(directory, f'{tmp_path}: is a directory')
    assert os.listdir(tmp_path) == []


def _run_cli_as(uid, argv):
    """cli.main(argv) in a child that dropped to ``uid``: (rc, stderr)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        status = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            err = io.StringIO()
            with contextlib.redirect_stderr(err), \
                    contextlib.redirect_stdout(io.StringIO()):
                rc = cli.main(argv)
            os.write(write_end, json.dumps([rc, err.getvalue()]).encode())
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        answer = pipe.read()
    os.waitpid(pid, 0)
    return json.loads(answer)


@pytest.fixture
def public_copies():
    """The profile and the host tree in a directory anyone can read (the
    clone may be in root's 0700 home, and pytest makes tmp_path's base
    0700 too): {'profile': file, 'root': host tree}."""
    from kvmtune.tuning import profiles

    public = tempfile.mkdtemp(prefix='kvmtune-test-')
    try:
        os.chmod(public, 0o755)
        profile = os.path.join(public, PROFILE + '.yaml')
        shutil.copyfile(
            profiles.available(profiles.search_dirs())[PROFILE], profile)
        host = os.path.join(public, 'host')
        shutil.copytree(HOST, host, symlinks=True)
        for root, dirs, files in os.walk(public):
            for name in dirs:
                os.chmod(os.path.join(root, name), 0o755)
            for name in files:
                if not os.path.islink(os.path.join(root, name)):
                    os.chmod(os.path.join(root, name), 0o644)
        yield {'profile': profile, 'root': host}
    finally:
        shutil.rmtree(public)


def _quiet_main(argv):
    with contextlib.redirect_stderr(io.StringIO()), \
            contextlib.redirect_stdout(io.StringIO()):
        return cli.main(argv)


def test_unreadable_file(nova_conf, tmp_path, public_copies):
    readable = tmp_path / 'readable.conf'
    shutil.copyfile(nova_conf, readable)
    os.chmod(nova_conf, 0)
    before = snapshot(nova_conf)
    if os.getuid() == 0:
        # root reads any file: drop to nobody, as an operator without sudo.
        # Python's standard library may live where nobody cannot read
        # (a pyenv under /root): import what the command needs first. The
        # clone may be where nobody cannot read (root's 0700 home): the
        # profile and host tree nobody reads are copies outside it.
        assert _quiet_main(list(apply_args(readable, '--dry-run',
                                           **public_copies))) == 0
        rc, err = _run_cli_as(NOBODY, list(apply_args(nova_conf,
                                                      **public_copies)))
    else:
        out = io.StringIO()
        with contextlib.redirect_stderr(out), \
                contextlib.redirect_stdout(io.StringIO()):
            rc = cli.main(list(apply_args(nova_conf)))
        err = out.getvalue()
    assert rc == 2
    assert err == (f'kvmtune: error: {nova_conf}: cannot read it: '
                   'Permission denied (fix: give the path of a readable '
                   'nova.conf with --config)\n')
    assert snapshot(nova_conf) == before


# -- hostile targets ---------------------------------------------------------

def test_a_null_device_exits_2_and_stays_a_device(tmp_path):
    # A node of its own: the machine's /dev/null is not the test's to risk
    # (the code this test guards against replaced it).
    node = devices.char_device(tmp_path)
    before = os.lstat(node)
    done = kvmtune(*apply_args(node))
    assert_one_line_error(done, node, 'character device')
    after = os.lstat(node)
    assert stat.S_ISCHR(after.st_mode)
    assert (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)
    assert os.listdir(tmp_path) == ['null']


def test_fifo_exits_2_without_hanging(tmp_path):
    fifo = tmp_path / 'nova.conf'
    os.mkfifo(fifo)
    done = kvmtune(*apply_args(fifo))       # timeout=120 in kvmtune()
    assert_one_line_error(done, str(fifo), 'FIFO')
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert os.listdir(tmp_path) == ['nova.conf']


def test_empty_config_is_an_error_not_the_default(tmp_path):
    conf = tmp_path / 'kvmtune.conf'
    target = tmp_path / 'default-nova.conf'
    shutil.copyfile(os.path.join(FIXTURES, 'novaconf', 'devstack.conf'),
                    target)
    conf.write_text(f'[nova]\nconfig_file = {target}\n')
    before = target.read_bytes()
    done = kvmtune('--config-file', str(conf), *apply_args(''))
    assert_one_line_error(done, 'empty path')
    assert target.read_bytes() == before


def test_nothing_for_the_service_is_not_already_there(tmp_path):
    # Before: io-tuned with --service scheduler said the file "already
    # has" options it did not have: all four are nova-compute's.
    path = tmp_path / 'nova.conf'
    path.write_text('[DEFAULT]\n')
    done = kvmtune(*apply_args(path, profile='io-tuned',
                               service='scheduler'))
    assert done.returncode == 0, done.stderr
    assert 'already has' not in done.stdout
    assert done.stdout.strip() == (
        "nothing to write for nova-scheduler: none of profile io-tuned's "
        f'options is read by it (4 left to other services, named above); '
        f'{path} unchanged')
    assert done.stderr.count('not written: ') == 4
    assert path.read_text() == '[DEFAULT]\n'


# -- the edited file in the service's oslo.config order -------------------

def _compute_files(tmp_path, later):
    nova = tmp_path / 'nova.conf'
    nova.write_text('[DEFAULT]\ndebug = true\n')
    extra = tmp_path / 'nova-compute.conf'
    extra.write_text(later)
    return nova, ['/usr/bin/nova-compute', '--config-file', str(nova),
                  '--config-file', str(extra)]


@needs_nova
def test_a_later_config_file_that_wins_is_refused(tmp_path):
    nova, argv = _compute_files(tmp_path,
                                '[compute]\ncpu_dedicated_set = 4-7\n')
    before = snapshot(nova)
    done = kvmtune(*apply_args(nova, '--service-cmdline', shlex.join(argv),
                               service='compute'))
    assert_one_line_error(done, '[compute] cpu_dedicated_set',
                          f'4-7 from {tmp_path}/nova-compute.conf',
                          'nothing written')
    assert snapshot(nova) == before
    # rightly: applied all the same, oslo.config keeps 4-7
    assert kvmtune(*apply_args(nova, service='compute')).returncode == 0
    assert oslo(argv, tmp_path)['dedicated'] == '4-7'


@needs_nova
def test_the_edited_file_read_last_is_accepted(tmp_path):
    nova, argv = _compute_files(tmp_path, '[DEFAULT]\n')
    done = kvmtune(*apply_args(nova, '--service-cmdline', shlex.join(argv),
                               service='compute'))
    assert done.returncode == 0, done.stderr
    assert oslo(argv, tmp_path)['dedicated'] == '1-19,21-39,41-59,61-79'


def test_a_file_the_service_does_not_read(tmp_path):
    nova, _ = _compute_files(tmp_path, '[DEFAULT]\n')
    other = tmp_path / 'nova-cpu.conf'
    other.write_text('[DEFAULT]\n')
    done = kvmtune(*apply_args(
        nova, '--service-cmdline',
        f'/usr/bin/nova-compute --config-file {other}', service='compute'))
    assert_one_line_error(done, f'it does not read {nova} at all')


@pytest.mark.parametrize('line,words', [
    ('tail -f nova-compute.log', ['not the command line of a Nova service']),
    ('/usr/bin/nova-scheduler', ['nova-scheduler does not read']),
    ('/usr/bin/nova-compute "x', ['quote it']),
])
def test_bad_service_command_line(nova_conf, line, words):
    before = snapshot(nova_conf)
    done = kvmtune(*apply_args(nova_conf, '--service-cmdline', line,
                               service='compute'))
    assert_one_line_error(done, *words)
    assert snapshot(nova_conf) == before


@fulldisk.ROOT_ONLY
def test_a_full_disk_keeps_nova_conf_and_writes_no_backup(tmp_path):
    with open(os.path.join(FIXTURES, 'novaconf', 'devstack.conf'),
              'rb') as f:
        old = {'nova.conf': f.read()}
    with fulldisk.full_tmpfs(tmp_path / 'full', old) as full:
        done = kvmtune(*apply_args(full / 'nova.conf'))
        assert_one_line_error(done)
        fulldisk.assert_one_line_full(done.stderr)
        fulldisk.assert_left_as_it_was(full, old)


@fulldisk.ROOT_ONLY
def test_a_read_only_filesystem_keeps_nova_conf_and_writes_no_backup(
        tmp_path):
    with open(os.path.join(FIXTURES, 'novaconf', 'devstack.conf'),
              'rb') as f:
        old = {'nova.conf': f.read()}
    with fulldisk.readonly_tmpfs(tmp_path / 'ro', old) as ro:
        done = kvmtune(*apply_args(ro / 'nova.conf'))
        assert_one_line_error(done)
        fulldisk.assert_one_line_readonly(done.stderr)
        fulldisk.assert_left_as_it_was(ro, old, filler=False)


def test_a_plan_with_a_fail_check_nothing_clears_is_refused(tmp_path):
    """The PVM capture has no EPT and no 1G pool: the refusal names the
    EPT check and its fix, nova.conf is not touched; the pool (reserved
    by boot apply) is one warning. --accept-failed-checks writes."""
    conf = tmp_path / 'nova.conf'
    conf.write_text('[DEFAULT]\n')
    pvm = os.path.join(FIXTURES, 'hosts', 'pvm-guest-2cpu')
    argv = ['nova-conf', 'apply', '--profile', PROFILE, '--root', pvm,
            '--config', str(conf), '--service', 'compute']
    done = kvmtune(*argv)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ''
    error = [line for line in done.stderr.splitlines()
             if line.startswith('kvmtune: error: ')]
    assert len(error) == 1
    assert 'refused' in error[0] and 'FAIL ept ept-enabled' in error[0]
    assert '--accept-failed-checks' in error[0]
    assert 'kvmtune: warning: FAIL hugepages hugepage-pool' in done.stderr
    assert conf.read_text() == '[DEFAULT]\n'
    assert os.listdir(tmp_path) == ['nova.conf']
    done = kvmtune(*argv, '--accept-failed-checks')
    assert done.returncode == 0, done.stderr
    assert 'FAIL ept ept-enabled accepted' in done.stderr
    assert 'reserved_huge_pages = node:0,size:1GB,count:1' in \
        conf.read_text()
