"""``kvmtune verify``: exit 0 in sync, 1 on drift, 2 on bad input; the
table, -f json and the Prometheus file."""

import json
import os
import shutil
import sys

import pytest

from kvmtune import cli
from tests import locks
from tests import paths
from tests.unit import fulldisk

TUNED = os.path.join(paths.HOSTS, 'intel-2s-smt-ept-1g')


def verify(*argv):
    return cli.main(['verify', *argv])


def test_in_sync_is_exit_0_with_the_table(capsys):
    assert verify('--profile', 'pinned-hugepages-ept', '--root', TUNED,
                  '--layer', 'host') == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0].split() == ['layer', 'check', 'expected',
                                           'live', 'status', 'fix']
    assert 'DRIFT' not in out and 'PASS' in out
    assert err.strip().endswith('0 drift, 0 unknown')


def test_drift_is_exit_1_and_json_parses(tmp_path, capsys):
    root = tmp_path / 'host'
    shutil.copytree(TUNED, root, symlinks=True)
    (root / 'proc/cmdline').write_text('root=/dev/sda1\n')
    assert verify('--profile', 'pinned-hugepages-ept', '--root', str(root),
                  '--layer', 'host', '-f', 'json') == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc['profiles'] == ['pinned-hugepages-ept']
    assert doc['summary']['DRIFT'] >= 4
    drift = [c for c in doc['checks'] if c['status'] == 'DRIFT']
    assert all(c['fix'] for c in drift)


def test_a_plan_file_is_verified_as_the_profile(tmp_path, capsys):
    assert cli.main(['plan', '--profile', 'pinned-hugepages-ept', '--root',
                     TUNED, '--format', 'json']) == 0
    plan = tmp_path / 'plan.json'
    plan.write_text(capsys.readouterr().out)
    assert verify('--plan', str(plan), '--root', TUNED, '--layer',
                  'host', '-f', 'value', '-c', 'status') == 0
    assert set(capsys.readouterr().out.split()) == {'PASS'}


def test_a_plan_comes_on_standard_input(capsys, monkeypatch):
    """--plan -: the plan piped in (the rollout's gate passes the plan its
    apply step applied this way); nothing on it is one line, exit 2."""
    import io

    assert cli.main(['plan', '--profile', 'pinned-hugepages-ept', '--root',
                     TUNED, '--format', 'json']) == 0
    piped = capsys.readouterr().out
    monkeypatch.setattr('sys.stdin', io.TextIOWrapper(io.BytesIO(
        piped.encode())))
    assert verify('--plan', '-', '--root', TUNED, '--layer', 'host', '-f',
                  'value', '-c', 'status') == 0
    assert set(capsys.readouterr().out.split()) == {'PASS'}
    monkeypatch.setattr('sys.stdin', io.TextIOWrapper(io.BytesIO(b'{')))
    assert verify('--plan', '-', '--root', TUNED) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and '--plan -: not JSON' in err
    # the fleet view: one line, exit 2, with or without a cloud, and
    # standard input left unread
    monkeypatch.setattr('sys.stdin', io.TextIOWrapper(io.BytesIO(
        piped.encode())))
    for cloud in (['--os-cloud', 'c'], []):
        assert verify('--plan', '-', '--all-hosts', *cloud) == 2
        assert capsys.readouterr() == ('', (
            'kvmtune: error: --plan -: the fleet view reads its plan from a '
            "file (fix: give the plan's file (--plan FILE), or verify one "
            'host with --plan -)\n'))
    assert sys.stdin.read() == piped


def test_the_prometheus_file_is_written(tmp_path, capsys):
    prom = tmp_path / 'kvmtune_verify.prom'
    assert verify('--profile', 'pinned-hugepages-ept', '--root', TUNED,
                  '--layer', 'host', '--prometheus', str(prom)) == 0
    assert 'kvmtune_verify_check{' in prom.read_text()
    assert f'wrote {prom}' in capsys.readouterr().err


@pytest.mark.parametrize('argv, words', [
    (['--plan', 'missing.json'], ['missing.json', 'no such file']),
    (['--profile', 'no-such-profile'], ['no-such-profile']),
    (['--profile', 'cpu-pinning', '--layer', 'cloud'],
     ['the cloud layer needs a cloud', 'fix: add --os-cloud']),
])
def test_bad_input_is_one_line_exit_2(argv, words, capsys, tmp_path,
                                      monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert verify(*argv, '--root', TUNED) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and err.startswith('kvmtune: error: ')
    for word in words:
        assert word in err, err


def test_a_plan_file_of_the_wrong_shape(tmp_path, capsys):
    plan = tmp_path / 'plan.json'
    plan.write_text('{"profile": "x"}')
    assert verify('--plan', str(plan), '--root', TUNED) == 2
    assert 'facts_source: missing key' in capsys.readouterr().err


def test_profile_and_plan_exclude_each_other(capsys):
    with pytest.raises(SystemExit) as exc:
        verify('--profile', 'cpu-pinning', '--plan', 'p.json')
    assert exc.value.code == 2


def test_domain_xml_dir_bad_is_one_line(tmp_path, capsys):
    assert verify('--profile', 'cpu-pinning', '--root', TUNED, '--layer',
                  'guests', '--domain-xml-dir', str(tmp_path / 'no')) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and '--domain-xml-dir' in err
    fifo = tmp_path / 'd'
    fifo.mkdir()
    os.mkfifo(fifo / 'x.xml')
    assert verify('--profile', 'cpu-pinning', '--root', TUNED, '--layer',
                  'guests', '--domain-xml-dir', str(fifo)) == 2
    assert 'not a regular file' in capsys.readouterr().err


def test_a_domain_file_that_is_not_xml_is_unknown(tmp_path, capsys):
    (tmp_path / 'bad.xml').write_text('<domain><name>x</name')
    assert verify('--profile', 'cpu-pinning', '--root', TUNED, '--layer',
                  'guests', '--domain-xml-dir', str(tmp_path), '-f',
                  'json') == 0
    doc = json.loads(capsys.readouterr().out)
    bad = [c for c in doc['checks'] if c['status'] == 'UNKNOWN']
    assert [c['name'] for c in bad] == ['bad.xml']
    assert 'not XML' in bad[0]['reason']


@pytest.mark.parametrize('argv, words', [
    (['--all-hosts'], ['the fleet view reads the cloud', '--os-cloud']),
    (['--facts-dir', '.'], ['--facts-dir is for the fleet view']),
    (['--all-hosts', '--os-cloud', 'c'], ['add --facts-dir']),
    (['--all-hosts', '--os-cloud', 'c', '--layer', 'host'],
     ['cloud layer only']),
])
def test_fleet_view_bad_input_is_one_line(argv, words, capsys):
    assert verify('--profile', 'cpu-pinning', *argv) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1
    for word in words:
        assert word in err, err


@fulldisk.ROOT_ONLY
def test_a_full_disk_keeps_the_old_prometheus_file(tmp_path, capsys):
    old = {'kvmtune_verify.prom': b'# the scrape before\n'}
    with fulldisk.full_tmpfs(tmp_path / 'full', old) as full:
        assert verify('--profile', 'pinned-hugepages-ept', '--root', TUNED,
                      '--layer', 'host', '--prometheus',
                      str(full / 'kvmtune_verify.prom')) == 2
        fulldisk.assert_one_line_full(capsys.readouterr().err)
        fulldisk.assert_left_as_it_was(full, old)


@fulldisk.ROOT_ONLY
@pytest.mark.parametrize('old', [{'kvmtune_verify.prom': b'# before\n'}, {}],
                         ids=['over-old', 'new'])
def test_a_read_only_filesystem_keeps_the_old_prometheus_file(
        tmp_path, capsys, old):
    with fulldisk.readonly_tmpfs(tmp_path / 'ro', old) as ro:
        assert verify('--profile', 'pinned-hugepages-ept', '--root', TUNED,
                      '--layer', 'host', '--prometheus',
                      str(ro / 'kvmtune_verify.prom')) == 2
        fulldisk.assert_one_line_readonly(capsys.readouterr().err)
        fulldisk.assert_left_as_it_was(ro, old, filler=False)


def _prom_samples(text):
    from prometheus_client.parser import text_string_to_metric_families
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


def test_the_textfile_names_the_nova_host(tmp_path, capsys):
    prom = tmp_path / 'kvmtune_verify.prom'
    assert verify('--profile', 'pinned-hugepages-ept', '--root', TUNED,
                  '--layer', 'host', '--prometheus', str(prom)) == 0
    found = _prom_samples(prom.read_text())
    # the capture's host name (proc/sys/kernel/hostname), as Nova's host
    hosts = {dict(labels).get('hostname') for (name, labels) in found
             if not name.startswith(('kvmtune_verify_check{',))}
    assert hosts == {'compute-intel-1', None}
    assert found['kvmtune_verify_checks_by_status', (
        ('hostname', 'compute-intel-1'), ('status', 'DRIFT'))] == 0
    assert found['kvmtune_reboot_required', (
        ('hostname', 'compute-intel-1'), ('reason', 'cmdline'))] == 0
    assert verify('--profile', 'pinned-hugepages-ept', '--root', TUNED,
                  '--layer', 'host', '--host', 'nova-c1', '--prometheus',
                  str(prom)) == 0
    assert ('kvmtune_last_success_timestamp_seconds', (
        ('command', 'verify'), ('hostname', 'nova-c1'))) in \
        _prom_samples(prom.read_text())


def _verify_prom(path):
    return verify('--profile', 'pinned-hugepages-ept', '--root', TUNED,
                  '--layer', 'host', '--prometheus', str(path))


@pytest.mark.parametrize('case', ['missing', 'second writer', 'capacity',
                                  'not writable'])
def test_a_textfile_that_cannot_be_written_is_one_line_and_kept(
        tmp_path, capsys, case):
    import subprocess
    import sys
    textfiles = tmp_path / 'textfile'
    textfiles.mkdir()
    prom = textfiles / 'kvmtune_verify.prom'
    assert _verify_prom(prom) == 0
    before = prom.read_text()
    capsys.readouterr()
    if case == 'missing':
        assert _verify_prom(tmp_path / 'none' / 'kvmtune_verify.prom') == 2
        words = 'does not exist'
    elif case == 'capacity':
        before = ('kvmtune_last_run_timestamp_seconds{command="capacity"} '
                  '1\n')
        prom.write_text(before)
        assert _verify_prom(prom) == 2
        words = 'kvmtune capacity\'s file'
    elif case == 'second writer':
        with locks.held(prom):
            assert _verify_prom(prom) == 2
        words = 'another program is writing it'
    else:
        # a textfile this user may not write: root may write anywhere, so
        # the command runs as root without its capabilities (CAP_DAC_OVERRIDE
        # among them) on a directory that belongs to nobody. It stays uid 0,
        # so it still reads this clone, which may be in root's 0700 home
        # (capabilities(7): root's capabilities at execve come from the
        # bounding and inheritable sets, both emptied here)
        # (the file too: kvmtune.fileio rewrites a writable file in place
        # when only its directory is closed)
        for path in (textfiles, prom):
            os.chown(path, 65534, 65534)
        textfiles.chmod(0o755)
        run = subprocess.run(
            ['setpriv', '--inh-caps=-all', '--bounding-set=-all',
             sys.executable, '-m', 'kvmtune.cli', 'verify', '--profile',
             'pinned-hugepages-ept', '--root', TUNED, '--layer', 'host',
             '--prometheus', str(prom)],
            capture_output=True, text=True, timeout=120,
            env={**os.environ, 'HOME': str(tmp_path)})
        assert run.returncode == 2, run.stderr
        capsys.readouterr()
        print(run.stderr, end='', file=sys.stderr)
        words = 'not writable'
    err = capsys.readouterr().err
    assert err.startswith('kvmtune: error: ') and err.count('\n') == 1, err
    assert words in err and 'Traceback' not in err, err
    assert prom.read_text() == before
    assert os.listdir(textfiles) == ['kvmtune_verify.prom']


def test_a_reader_never_sees_half_a_file(tmp_path):
    """The textfile collector reads whenever it is scraped: a reader
    looping while verify rewrites the file (two trees in turn, so that
    the content changes each time) always sees one whole file."""
    import threading
    drifted = tmp_path / 'host'
    shutil.copytree(TUNED, drifted, symlinks=True)
    (drifted / 'proc/cmdline').write_text('root=/dev/sda1\n')
    prom = tmp_path / 'kvmtune_verify.prom'
    assert _verify_prom(prom) == 0
    whole = set()
    done = threading.Event()

    def writer():
        try:
            for n in range(12):
                cli.main(['verify', '--profile', 'pinned-hugepages-ept',
                          '--root', str(drifted) if n % 2 else TUNED,
                          '--layer', 'host', '-f', 'value',
                          '--prometheus', str(prom)])
        finally:
            done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    reads = 0
    try:
        while not done.is_set() or reads < 2:
            text = prom.read_text()
            reads += 1
            found = _prom_samples(text)     # a torn file fails to parse
            assert text.endswith('\n')
            drift = found['kvmtune_verify_checks_by_status', (
                ('hostname', 'compute-intel-1'), ('status', 'DRIFT'))]
            checks = sum(1 for name, _ in found
                         if name == 'kvmtune_verify_check_status')
            whole.add((drift, checks))
    finally:
        thread.join(timeout=300)
    assert not thread.is_alive()
    assert reads > 12
    # both versions seen, each complete: no drift, or the cmdline ones
    assert len(whole) == 2 and (0.0, min(c for _, c in whole)) in whole


# -- another host's verdict from its files alone ---------------------------

# This machine's places a layer would read for itself: its processes and
# kernel (/proc, /sys, /dev), its nova.conf and tuned files (/etc), its
# libvirt socket and state (/run, /var).
HERE = ('/proc', '/sys', '/dev', '/etc', '/run', '/var')
_ARMED = []


def _audit(event, args):
    """Python's audit hook (sys.addaudithook, PEP 578): every open(),
    os.open, os.listdir, os.scandir, glob and socket.gethostname while a
    test is armed (a hook stays for the process: it records nothing
    otherwise)."""
    if not _ARMED:
        return
    if event == 'socket.gethostname':
        _ARMED[-1].append((event, ''))
    elif event in ('open', 'os.listdir', 'os.scandir', 'glob.glob') and args:
        path = args[0]
        if isinstance(path, bytes):
            path = path.decode('utf-8', 'replace')
        if isinstance(path, str):
            real = os.path.realpath(path)
            if any(real == p or real.startswith(p + '/') for p in HERE):
                _ARMED[-1].append((event, path))


sys.addaudithook(_audit)


@pytest.fixture
def this_machine(monkeypatch):
    """What a layer read of this machine: the paths under HERE it opened
    or listed, its host name asked; libvirt asked raises."""
    from kvmtune.verify import domain

    def no_libvirt(uri=None):
        raise AssertionError(f'this machine\'s libvirt was asked ({uri})')
    monkeypatch.setattr(domain, 'read_domains', no_libvirt)
    seen = []
    _ARMED.append(seen)
    yield seen
    _ARMED.remove(seen)


@pytest.fixture(scope='module')
def facts_file(tmp_path_factory):
    """The facts JSON of the tuned capture, as "kvmtune host inspect -f
    json" prints it on that host."""
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(['host', 'inspect', '--root', TUNED, '-f',
                         'json']) == 0
    path = tmp_path_factory.mktemp('facts') / 'compute-intel-1.json'
    path.write_text(out.getvalue())
    return path


def _checks(capsys):
    doc = json.loads(capsys.readouterr().out)
    return {(c['layer'], c['name']): c for c in doc['checks']}


def test_the_sentinel_sees_this_machine_read(this_machine, capsys):
    """The proof can fail: verify of this machine (no --root, no --facts)
    scans this machine's /proc for nova-compute, and the sentinel sees
    it."""
    verify('--profile', 'pinned-hugepages-ept', '--layer', 'novacompute',
           '-f', 'json')
    capsys.readouterr()
    assert ('os.listdir', '/proc') in this_machine, this_machine


def test_with_facts_no_layer_reads_this_machine(facts_file, this_machine,
                                                capsys):
    code = verify('--profile', 'pinned-hugepages-ept', '--facts',
                  str(facts_file), '-f', 'json',
                  '--prometheus', str(facts_file.parent / 'v.prom'))
    found = _checks(capsys)
    assert this_machine == []
    # the host layer from the facts file: the command line, the pools and
    # the kvm module parameters it recorded
    host = {name: c['status'] for (layer, name), c in found.items()
            if layer == 'host'}
    assert host['cmdline isolcpus'] == 'PASS'
    assert host['module kvm_intel ept'] == 'PASS', host
    # what a facts file cannot tell: UNKNOWN naming the flag that gives it
    nova = found['novacompute', 'nova-compute options']
    assert nova['status'] == 'UNKNOWN'
    assert ('give --nova-config-file/--nova-config-dir (that host\'s '
            'files), or --root') in nova['reason']
    guests = found['guests', 'guests']
    assert guests['status'] == 'UNKNOWN'
    assert '--domain-xml-dir' in guests['reason']
    assert '--libvirt-uri' in guests['reason']
    tuned = found['host', 'tuned profile']
    assert tuned['status'] == 'UNKNOWN' and '--root' in tuned['reason']
    # PASS beside UNKNOWN: in sync as far as could be told
    assert code == 0


def test_with_facts_the_module_parameters_are_the_files(facts_file,
                                                        tmp_path, capsys):
    """The kvm module check reads the facts' virt.modules: a parameter
    recorded otherwise drifts, a module not recorded is UNKNOWN."""
    facts = json.loads(facts_file.read_text())
    facts['virt']['modules']['kvm_intel']['ept'] = 'N'
    off = tmp_path / 'off.json'
    off.write_text(json.dumps(facts))
    assert verify('--profile', 'pinned-hugepages-ept', '--facts', str(off),
                  '--layer', 'host', '-f', 'json') == 1
    check = _checks(capsys)['host', 'module kvm_intel ept']
    assert (check['status'], check['live']) == ('DRIFT', 'ept=N')
    # a facts file without the module's record (an older one): UNKNOWN
    from kvmtune.tuning import plan as plans
    from kvmtune.verify import host
    [built] = plans.for_host(['pinned-hugepages-ept'], root=TUNED)
    del facts['virt']['modules']['kvm_intel']
    [check] = host.module_checks(built, None, facts)
    assert check.status == 'UNKNOWN'
    assert 'does not record module kvm_intel: give --root' in check.reason


def test_with_a_tree_no_layer_reads_this_machine(this_machine, capsys):
    code = verify('--profile', 'pinned-hugepages-ept', '--root', TUNED,
                  '-f', 'json')
    found = _checks(capsys)
    assert this_machine == []
    nova = found['novacompute', 'nova-compute options']
    # the tree's own proc/ was searched (a capture has no processes)
    assert nova['reason'] == (
        f'no nova-compute process in {TUNED}/proc (give its files with '
        '--nova-config-file/--nova-config-dir)')
    assert 'this machine\'s libvirt holds none of its guests' in \
        found['guests', 'guests']['reason']
    assert code == 0


def test_with_facts_only_the_nova_files_given_are_read(
        facts_file, this_machine, tmp_path, capsys, monkeypatch):
    """--facts with --nova-config-file: that file alone. The directories
    oslo.config would search by default (/etc/nova/nova.conf.d ...) are
    this machine's: one that overrides the option (made here, standing
    for this machine's /etc/nova) is not read."""
    from kvmtune.tuning.novaconf import effective
    from kvmtune.tuning import plan as plans
    from tests.unit.verify.test_novacompute import conf_for

    [built] = plans.for_host(['pinned-hugepages-ept'], root=TUNED)
    plan = tmp_path / 'plan.json'
    plan.write_text(json.dumps(built.to_dict()))
    dedicated = built.nova_conf['compute']['cpu_dedicated_set']
    # the given file lacks cpu_dedicated_set; "this machine's" drop-in
    # directory has it, as planned
    given = tmp_path / 'nova.conf'
    given.write_text(conf_for(built).replace(
        f'cpu_dedicated_set = {dedicated}\n', ''))
    mine = tmp_path / 'etc-nova'
    (mine / 'nova.conf.d').mkdir(parents=True)
    (mine / 'nova.conf.d' / '90.conf').write_text(
        f'[compute]\ncpu_dedicated_set = {dedicated}\n')
    monkeypatch.setattr(effective, 'SEARCH_DIRS', (str(mine),))
    argv = ['--plan', str(plan), '--layer', 'novacompute',
            '--nova-config-file', str(given), '-f', 'json']
    assert verify(*argv, '--facts', str(facts_file)) == 1
    check = _checks(capsys)[
        'novacompute', 'option [compute] cpu_dedicated_set']
    assert (check['status'], check['live']) == ('DRIFT', 'unset')
    assert this_machine == []
    # the same on this machine (no --facts): the drop-in is read
    assert verify(*argv) == 0
    check = _checks(capsys)[
        'novacompute', 'option [compute] cpu_dedicated_set']
    assert check['status'] == 'PASS'


def test_with_facts_the_cloud_layer_asks_for_that_host(
        facts_file, this_machine, monkeypatch):
    from kvmtune.errors import CloudError
    from kvmtune import facts as host_facts
    from kvmtune.tuning import plan as plans
    from kvmtune import verify as verify_
    from kvmtune.verify import cloud

    class Cloud:
        name = 'c'

        def compute(self, *args, **kwargs):
            raise CloudError('HTTP 503', source='cloud c')
        placement = compute

    monkeypatch.setattr(cloud, '_compute_nodes', lambda c: [
        ('compute-intel-1', 'u1'), (os.uname().nodename, 'u2')])
    asked = []
    monkeypatch.setattr(cloud, 'provider_checks',
                        lambda plans, c, host, uuid: asked.append(host)
                        or [])
    facts = host_facts.load(str(facts_file))
    built = plans.for_host(['pinned-hugepages-ept'], facts=facts)
    ctx = verify_.Context(cloud=Cloud(), facts=facts, origin='--facts')
    verify_.run(built, ctx, ('cloud',))
    assert asked == ['compute-intel-1'] and this_machine == []
    # no host name in the facts: --host, never this machine's name
    ctx = verify_.Context(cloud=Cloud(), facts={}, origin='--facts')
    [check] = verify_.run(built, ctx, ('cloud',))
    assert check.status == 'UNKNOWN' and 'give --host' in check.reason
    assert asked == ['compute-intel-1'] and this_machine == []


# -- nothing checked is not success -----------------------------------------

def _last_success(prom):
    return {dict(labels).get('hostname', ''): value
            for (name, labels), value
            in _prom_samples(prom.read_text()).items()
            if name == 'kvmtune_last_success_timestamp_seconds'}


def test_nothing_checked_exits_3_and_never_stamps_success(tmp_path, capsys):
    """--layer novacompute on a capture (no nova-compute in it, no files
    given): every check UNKNOWN. Exit 3, and the textfile keeps the last
    success (0: never), so KvmtuneVerifyNotSucceeded fires."""
    prom = tmp_path / 'kvmtune_verify.prom'
    argv = ['--profile', 'pinned-hugepages-ept', '--root', TUNED,
            '--prometheus', str(prom)]
    assert verify(*argv, '--layer', 'novacompute') == 3
    out, err = capsys.readouterr()
    assert 'UNKNOWN' in out and 'PASS' not in out
    assert err.strip().endswith('0 pass, 0 drift, 1 unknown')
    assert _last_success(prom) == {'compute-intel-1': 0}
    # a run in sync stamps it; one that checks nothing after it keeps it
    assert verify(*argv, '--layer', 'host') == 0
    stamped = _last_success(prom)['compute-intel-1']
    assert stamped > 0
    assert verify(*argv, '--layer', 'novacompute') == 3
    assert _last_success(prom) == {'compute-intel-1': stamped}
    # PASS beside UNKNOWN: 0, and a success
    assert verify(*argv, '--layer', 'host', '--layer', 'novacompute') == 0
    assert _last_success(prom)['compute-intel-1'] >= stamped


@pytest.mark.parametrize('nodes', ['404', 'none'])
def test_the_fleet_view_that_checked_nothing_exits_3(tmp_path, capsys,
                                                     monkeypatch, nodes):
    """--all-hosts on a cloud that answers 404, or has no compute node:
    exit 3, no success stamped."""
    from kvmtune.errors import CloudError
    from kvmtune.openstack import connection
    from kvmtune.verify import cloud

    class Cloud:
        name = 'c'

    def compute_nodes(c):
        if nodes == '404':
            raise CloudError('HTTP 404: Not Found', source='cloud c')
        return []
    monkeypatch.setattr(connection.Cloud, 'connect',
                        classmethod(lambda cls, name: Cloud()))
    monkeypatch.setattr(cloud, '_compute_nodes', compute_nodes)
    assert cli.main(['plan', '--profile', 'pinned-hugepages-ept', '--root',
                     TUNED, '--format', 'json']) == 0
    plan = tmp_path / 'plan.json'
    plan.write_text(capsys.readouterr().out)
    prom = tmp_path / 'kvmtune_verify.prom'
    assert verify('--all-hosts', '--os-cloud', 'c', '--plan', str(plan),
                  '--prometheus', str(prom), '-f', 'json') == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc['summary']['PASS'] == doc['summary']['DRIFT'] == 0
    assert set(_last_success(prom).values()) == {0}
