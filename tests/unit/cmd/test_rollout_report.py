"""``kvmtune rollout-report``: the table, -f json, the page and the
textfile written, the exit status from the hosts' verdicts, and a bad
state file as one line with nothing written."""

import json

from prometheus_client.parser import text_string_to_metric_families

from kvmtune import cli
from tests import canarystate

PASSING = {'c1': ('c9', 1.1, 1.1, 0.02), 'c2': ('c9', 1.12, 1.1, 0.02)}


def test_the_table_and_exit_one_on_a_failed_host(tmp_path, capsys):
    state = canarystate.write(tmp_path / 'rollout.json')
    assert cli.main(['rollout-report', state]) == 1
    out = capsys.readouterr().out
    assert 'compute-2  compute-9  fio-randread/iops' in out
    lines = [line for line in out.splitlines()
             if line.startswith('compute-2  compute-9  fail')]
    assert lines


def test_all_passed_or_accepted_is_exit_zero(tmp_path, capsys):
    state = canarystate.write(tmp_path / 'rollout.json', hosts=PASSING)
    assert cli.main(['rollout-report', state]) == 0
    hosts = dict(PASSING, c3=('c9', 0.97, 1.03, 0.12))
    state = canarystate.write(tmp_path / 'r2.json', hosts=hosts)
    assert cli.main(['rollout-report', state]) == 1
    state = canarystate.write(tmp_path / 'r3.json', hosts=hosts,
                              accept={'c3': 'noise'})
    assert cli.main(['rollout-report', state]) == 0


def test_json_page_and_textfile(tmp_path, capsys):
    state = canarystate.write(tmp_path / 'rollout.json', hosts=PASSING)
    page, prom = tmp_path / 'c.html', tmp_path / 'canary.prom'
    assert cli.main(['rollout-report', state, '-f', 'json', '--html',
                     str(page), '--prometheus', str(prom)]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert [h['verdict'] for h in doc['hosts']] == ['pass', 'pass']
    assert f'wrote {page}' in captured.err
    assert page.read_text().count('<figure class="plot"') == 2
    samples = {(s.name, s.labels.get('hostname'), s.labels.get('metric')):
               s.value for f in text_string_to_metric_families(
                   prom.read_text()) for s in f.samples}
    record = doc['measurements']['hosts']['c1']['metrics'][
        'fio-randread/iops']
    assert samples[('kvmtune_canary_ratio', 'c1', 'fio-randread/iops')] \
        == record['estimate']
    assert samples[('kvmtune_canary_ratio_low', 'c1',
                    'fio-randread/iops')] == record['interval'][0]


def test_a_bad_state_file_is_one_line(tmp_path, capsys):
    state = tmp_path / 'rollout.json'
    state.write_text('{"measurements": {"version": 1, "hosts": {"c1": 3}}}')
    page = tmp_path / 'c.html'
    assert cli.main(['rollout-report', str(state), '--html',
                     str(page)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert 'measurements.c1' in err
    assert not page.exists()


def test_the_page_may_not_overwrite_the_state(tmp_path, capsys):
    state = canarystate.write(tmp_path / 'rollout.json', hosts=PASSING)
    assert cli.main(['rollout-report', state, '--html', state]) == 2
    assert 'is the state file' in capsys.readouterr().err
    assert json.loads(open(state).read())['run_id']


def test_bench_needs_the_facts(tmp_path, capsys):
    state = canarystate.write(tmp_path / 'rollout.json', hosts=PASSING)
    assert cli.main(['rollout-report', state, '--bench', state]) == 2
    assert '--bench needs --facts-dir' in capsys.readouterr().err
