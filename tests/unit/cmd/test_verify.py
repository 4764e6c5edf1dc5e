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
