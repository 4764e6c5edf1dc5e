"""The hostile-input suite: one case per class of bad input,
each through the command an operator runs, each asserting the contract:
exit 2, one line naming the file or key and the fix, no traceback,
nothing written or changed, no foreign value echoed.

The fixes live in one place per class (kvmtune.inputs.read_bytes: one
bounded reader; kvmtune.inputs.plain_text: one check of every value that
reaches a generated file; kvmtune.errors.mask_secrets; the records'
schema check before arithmetic); their module tests hold the detail. This
suite is the operator's view of all of them together, in the unit tier.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests import paths

HOST = os.path.join(paths.HOSTS, 'intel-2s-smt-ept-1g')
RESULTS = os.path.join(paths.FIXTURES, 'outputs',
                       'rally-disk-sweep-1-at-tcg.json')
SECRET = 'Sup3rSecretPassw0rdValue'


def kvmtune(*argv, cwd=None, timeout=120):
    """The CLI as its own process, with a hard timeout (a hang fails)."""
    done = subprocess.run([sys.executable, '-m', 'kvmtune.cli',
                           *map(str, argv)], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd,
                          env=dict(os.environ, PYTHONPATH=paths.REPO))
    return done.returncode, done.stdout, done.stderr


def refused(rc, err, *words):
    assert rc == 2, err
    assert err.count('\n') == 1 and err.startswith('kvmtune: error: '), err
    assert 'Traceback' not in err and '(fix: ' in err, err
    for word in words:
        assert word in err, err


@pytest.fixture
def host(tmp_path):
    root = tmp_path / 'host'
    shutil.copytree(HOST, root, symlinks=True)
    return root


def test_a_fifo_in_a_capture_is_refused_not_waited_on(host):
    meminfo = host / 'proc' / 'meminfo'
    meminfo.unlink()
    os.mkfifo(meminfo)
    rc, out, err = kvmtune('host', 'inspect', '--root', host, '--format',
                           'json', timeout=60)
    # unknown instead of guessed: the facts say so, nothing hangs
    assert rc == 0, err
    assert json.loads(out)['memory']['total_mb'] is None


def test_a_link_out_of_a_capture_is_not_followed(host, tmp_path):
    outside = tmp_path / 'outside-cmdline'
    outside.write_text('isolcpus=1-3 ' + SECRET + '\n')
    cmdline = host / 'proc' / 'cmdline'
    cmdline.unlink()
    cmdline.symlink_to(outside)
    rc, out, err = kvmtune('host', 'inspect', '--root', host, '--format',
                           'json')
    assert rc == 0, err
    assert SECRET not in out and json.loads(out)['kernel']['cmdline'] \
        is None


def test_a_control_character_never_reaches_a_generated_file(tmp_path):
    profile = tmp_path / 'evil.yaml'
    profile.write_text(
        'name: evil\ndescription: d\nsource: s\ntuners:\n'
        '- name: disk_io\n  params:\n'
        '    images_type: "raw\\n[DEFAULT]\\ntransport_url = x"\n')
    out = tmp_path / 'out'
    rc, _, err = kvmtune('export', '--profile', profile, '--root', HOST,
                         '--target', 'oslo-dropin', '--output', out)
    refused(rc, err, 'images_type')
    assert not out.exists()


def test_a_refusal_never_quotes_a_foreign_secret(tmp_path):
    conf = tmp_path / 'nova.conf'
    text = (f'[DEFAULT]\ntransport_url = rabbit://u:{SECRET}@h\n'
            f'[database\nconnection = mysql://n:{SECRET}@db/nova\n')
    conf.write_text(text)
    # --service: a host tree has no nova-compute process to take it from
    rc, out, err = kvmtune('nova-conf', 'apply', '--profile', 'cpu-pinning',
                           '--root', HOST, '--config', conf,
                           '--service', 'compute')
    refused(rc, err, 'line 3')
    assert SECRET not in err and SECRET not in out
    assert conf.read_text() == text


@pytest.mark.parametrize('figure, words', [
    ('"lots"', 'iops'),          # the schema check, before arithmetic
    ('Infinity', 'finite'),      # Python's json reads it; the report not
])
def test_a_bad_figure_never_reaches_the_report(figure, words, tmp_path):
    bad = tmp_path / 'results.json'
    text = open(RESULTS).read()
    # the guest's row (the report reads the rows, not the charts beside)
    head, _, tail = text.rpartition('3491.551')
    assert head
    bad.write_text(head + figure + tail)
    png = tmp_path / 'plot.png'
    rc, _, err = kvmtune('report', bad, '--png', png)
    refused(rc, err, words)
    assert not png.exists()


def test_an_output_that_is_an_input_is_refused(tmp_path):
    results = tmp_path / 'in.json'
    shutil.copy(RESULTS, results)
    before = results.read_bytes()
    os.link(results, tmp_path / 'plot.png')
    rc, _, err = kvmtune('report', results, '--png', tmp_path / 'plot.png')
    refused(rc, err, 'input files')
    assert results.read_bytes() == before


@pytest.mark.parametrize('argv, words', [
    (['host', 'capture', ''], ['DIR', 'empty path']),
    (['plan', '--profile', 'cpu-pinning', '--root', HOST, '--root', HOST],
     ['given more than once']),
    (['verify', '--profile', 'cpu-pinning', '--root', HOST, '--layer',
      'guests', '--domain-xml-dir', '/nonexistent'], ['--domain-xml-dir']),
    (['baseline', '--workload', 'fio-randread-4k', '--output', 'b.json',
      '--param', 'runtime=abc'], ['runtime']),
])
def test_bad_arguments_are_one_line_with_the_fix(argv, words, tmp_path):
    rc, _, err = kvmtune(*argv, cwd=tmp_path)
    if 'given more than once' in words:
        # argparse's own usage error: exit 2, no traceback
        assert rc == 2 and 'given more than once' in err, err
        return
    refused(rc, err, *words)
    assert os.listdir(tmp_path) == []


# -- figures that overflow, records that do not say ------------------------

SWEEP = os.path.join(paths.FIXTURES, 'outputs',
                     'rally-disk-sweep-1-6-10-signal-tcg.json')
LOCAL = os.path.join(paths.FIXTURES, 'outputs',
                     'bench-local-2vm-fio-randread-4k-tcg-schema1.json')


def edited(tmp_path, source, edit, name=None):
    """A copy of a real result file (the project's recorded Rally sweep or
    bench local run), parsed, changed by ``edit(doc)`` and written."""
    with open(source) as f:
        doc = json.load(f)
    edit(doc)
    path = tmp_path / (name or os.path.basename(source))
    path.write_text(json.dumps(doc))
    return path


def rally_rows(doc):
    """(cols, rows) of every per-VM table of a Rally result, in order."""
    for wl in doc['tasks'][0]['subtasks'][0]['workloads']:
        for it in wl['data']:
            for chart in it['output']['complete']:
                if chart['title'] == 'kvmtune per-VM results':
                    yield chart['data']['cols'], chart['data']['rows']


def strict_json(text):
    """Strict JSON (RFC 8259): NaN, Infinity and -Infinity refused, as jq
    and JSON.parse refuse them."""
    def refuse(name):
        raise ValueError(f'{name} is not JSON')
    return json.loads(text, parse_constant=refuse)


def overflowing_guests(doc):
    # two guests of 1.7e308 bytes/s each: finite in the file, infinite
    # once the aggregate adds them
    for row in doc['rows']:
        row['result']['bw_bytes_s'] = 1.7e308


def overflowing_mib(doc):
    # the per-VM table Rally runs wrote before the one unit set: MiB/s,
    # converted to bytes/s on reading (x 1048576)
    for cols, rows in rally_rows(doc):
        rows[0][cols.index('bw_MiB_s')] = 1e305


@pytest.mark.parametrize('fmt', ['json', 'yaml', 'table'])
@pytest.mark.parametrize('source, edit, words', [
    (LOCAL, overflowing_guests, ['aggregate bw_bytes_s', 'not finite',
                                 'bench-local-2vm']),
    (SWEEP, overflowing_mib, ['row 1.bw_MiB_s', 'beyond any real']),
])
def test_a_figure_that_overflows_is_refused_in_every_format(
        source, edit, words, fmt, tmp_path):
    path = edited(tmp_path, source, edit)
    png = tmp_path / 'plot.png'
    rc, out, err = kvmtune('report', path, '-f', fmt, '--png', png)
    refused(rc, err, str(path), *words)
    assert out == '' and not png.exists()


def test_an_overflow_against_a_real_run_is_refused_as_well(tmp_path):
    # the overflowing run beside an intact one: no change of +inf %
    path = edited(tmp_path, LOCAL, overflowing_guests, 'big.json')
    rc, out, err = kvmtune('report', LOCAL, path, '-f', 'json')
    refused(rc, err, 'big.json', 'aggregate bw_bytes_s')
    assert out == ''


def as_randwrite(doc):
    # the bench local run as if it had measured fio-randwrite-4k: its rows
    # and top-level workload say so
    doc['workload'] = 'fio-randwrite-4k'
    for row in doc['rows']:
        row['result']['workload'] = 'fio-randwrite-4k'
    doc['record']['workload']['name'] = 'fio-randwrite-4k'


def null_at(*path):
    def edit(doc):
        as_randwrite(doc)
        part = doc['record']
        for key in path[:-1]:
            part = part[key]
        part[path[-1]] = None
    return edit


@pytest.mark.parametrize('edit, key', [
    (null_at('workload'), 'record.workload'),
    (null_at('workload', 'name'), 'record.workload.name'),
    (null_at('workload', 'params'), 'record.workload.params'),
    (null_at('accel'), 'record.accel'),
])
@pytest.mark.parametrize('fmt', ['table', 'json'])
def test_a_record_that_does_not_say_what_it_measured_never_compares(
        edit, key, fmt, tmp_path):
    # Before: exit 0, "comparison of 2 run(s),
    # fio-randread-4k", the randwrite run +800 % against randread.
    wrote = edited(tmp_path, LOCAL, edit, 'randwrite.json')
    rc, out, err = kvmtune('report', LOCAL, wrote, '-f', fmt)
    refused(rc, err, 'randwrite.json', f': {key}: ', 'cannot be known')
    assert out == ''


def test_the_intact_pair_is_refused_by_its_workload(tmp_path):
    wrote = edited(tmp_path, LOCAL, as_randwrite, 'randwrite.json')
    rc, out, err = kvmtune('report', LOCAL, wrote)
    refused(rc, err, 'randwrite.json', 'record.workload.name',
            'measures workload fio-randwrite-4k')
    assert out == ''


def test_a_rally_sweep_whose_workload_argument_is_null(tmp_path):
    # the record Rally's result gives is made from the task's arguments
    def edit(doc):
        wl = doc['tasks'][0]['subtasks'][0]['workloads'][0]
        wl['scenario']['KvmTune.disk_scaling']['workload'] = None
    wrote = edited(tmp_path, SWEEP, edit)
    rc, out, err = kvmtune('report', LOCAL, wrote, '-f', 'json')
    refused(rc, err, os.path.basename(SWEEP), 'record.workload.name',
            'cannot be known')
    assert out == ''
    # alone it is no comparison: shown, its rows say what it measured
    rc, out, err = kvmtune('report', wrote, '-f', 'json')
    assert rc == 0, err
    assert strict_json(out)['runs'][0]['points']


def test_rows_that_contradict_their_record_are_refused(tmp_path):
    def edit(doc):
        for row in doc['rows']:
            row['result']['workload'] = 'fio-randwrite-4k'
    wrote = edited(tmp_path, LOCAL, edit, 'rows.json')
    rc, out, err = kvmtune('report', LOCAL, wrote)
    refused(rc, err, 'rows.json', 'record.workload.name',
            'its rows measured fio-randwrite-4k')
