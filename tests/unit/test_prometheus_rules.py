"""kvmtune/data/prometheus/kvmtune.rules.yml, proven by Prometheus's own
promtool (Debian's prometheus package, installed by tools/bootstrap):
``promtool check rules`` and ``promtool test rules`` on
tests/fixtures/prometheus/kvmtune.rules.test.yml, where every alert fires
on series that reproduce its case and stays silent on healthy ones."""

import os
import shutil
import subprocess

import yaml

from tests import paths

RULES = os.path.join(paths.REPO, 'kvmtune', 'data', 'prometheus',
                     'kvmtune.rules.yml')
TESTS = os.path.join(paths.REPO, 'tests', 'fixtures', 'prometheus',
                     'kvmtune.rules.test.yml')
ADMIN_PAGE = os.path.join(paths.REPO, 'doc', 'source', 'admin',
                          'monitoring.md')


def promtool(*argv, cwd=None):
    tool = shutil.which('promtool')
    assert tool, ('promtool is missing: tools/bootstrap installs Debian\'s '
                  'prometheus package')
    return subprocess.run([tool, *argv], capture_output=True, text=True,
                          timeout=600, cwd=cwd)


def _alerts(path=RULES):
    with open(path, encoding='utf-8') as f:
        return [rule for group in yaml.safe_load(f)['groups']
                for rule in group['rules'] if 'alert' in rule]


def test_promtool_checks_the_rules():
    run = promtool('check', 'rules', RULES)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f'SUCCESS: {len(_alerts())} rules found' in run.stdout


def test_promtool_proves_every_alert_fires_and_stays_silent():
    run = promtool('test', 'rules', TESTS)
    assert run.returncode == 0, run.stdout + run.stderr
    assert 'SUCCESS' in run.stdout


def test_every_alert_is_tested_firing_and_silent():
    with open(TESTS, encoding='utf-8') as f:
        cases = [case for test in yaml.safe_load(f)['tests']
                 for case in test['alert_rule_test']]
    for alert in _alerts():
        name = alert['alert']
        mine = [case for case in cases if case['alertname'] == name]
        assert any(case['exp_alerts'] for case in mine), name
        assert any(not case['exp_alerts'] for case in mine), name


def test_every_alert_names_the_host_and_the_fix_and_its_threshold():
    with open(ADMIN_PAGE, encoding='utf-8') as f:
        page = f.read()
    for alert in _alerts():
        notes = alert['annotations']
        what = ('$labels.flavor_name' if 'capacity' in alert['expr']
                else '$labels.hostname')
        assert what in notes['summary'] and what in notes['description']
        assert 'Fix: ' in notes['description'], alert['alert']
        assert f'`{alert["alert"]}`' in page, (
            f'{alert["alert"]}: its threshold belongs in the table of '
            'doc/source/admin/monitoring.md')


def test_a_broken_rule_fails_promtool(tmp_path):
    """The proof can fail: the drift alert made to wait for 5 drifted
    checks no longer fires on the series that reproduce drift."""
    rules = tmp_path / 'kvmtune.rules.yml'
    with open(RULES, encoding='utf-8') as f:
        text = f.read()
    broken = text.replace('{status="DRIFT"}) > 0', '{status="DRIFT"}) > 5')
    assert broken != text
    rules.write_text(broken)
    with open(TESTS, encoding='utf-8') as f:
        tests = f.read().replace('../../../kvmtune/data/prometheus/', '')
    (tmp_path / 'test.yml').write_text(tests)
    run = promtool('test', 'rules', 'test.yml', cwd=tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert 'alertname: KvmtuneDrift' in run.stdout + run.stderr


def test_runs_that_check_nothing_make_verify_not_succeeded_fire(tmp_path):
    """The series of kvmtune's own textfile, not written by hand: verify
    writes it hourly (kvmtune.verify.prometheus.write, as the timer
    does) on two hosts in sync at 0 h. From 1 h on, every check of c1 is
    UNKNOWN (nova-compute gone, no --nova-config-file): its last success
    stays at 0 h, and promtool shows KvmtuneVerifyNotSucceeded firing
    for c1 a day after; c2, whose UNKNOWN rows sit beside a PASS, stays
    silent."""
    from prometheus_client.parser import text_string_to_metric_families

    from kvmtune import verify
    from kvmtune.verify import prometheus

    hours = 27
    passed = {host: verify.compare('host', 'cmdline isolcpus', 'a', 'a',
                                   'fix', host=host) for host in ('c1', 'c2')}
    series = {}
    for host in ('c1', 'c2'):
        path = tmp_path / f'{host}.prom'
        values = []
        for hour in range(hours):
            lost = verify.unknown('novacompute', 'nova-compute options',
                                  'running', 'no nova-compute process',
                                  host=host)
            checks = ([passed[host]] if hour == 0 else
                      [lost] if host == 'c1' else [passed[host], lost])
            prometheus.write(str(path), checks, now=hour * 3600)
            [value] = [sample.value for family in
                       text_string_to_metric_families(path.read_text())
                       for sample in family.samples
                       if sample.name ==
                       'kvmtune_last_success_timestamp_seconds']
            values += [f'{value:g}'] * 60     # scraped each minute
        series[host] = ' '.join(values)
    assert series['c1'].split()[-1] == '0'      # never stamped again
    labels = 'instance="{0}:9100",job="node",command="verify",hostname="{0}"'
    tests = {
        'rule_files': [RULES],
        'evaluation_interval': '1m',
        'tests': [{
            'interval': '1m',
            'input_series': [
                {'series': 'kvmtune_last_success_timestamp_seconds{'
                           + labels.format(host) + '}',
                 'values': series[host]} for host in ('c1', 'c2')],
            'alert_rule_test': [
                {'eval_time': '24h', 'alertname':
                 'KvmtuneVerifyNotSucceeded', 'exp_alerts': []},
                {'eval_time': '24h11m', 'alertname':
                 'KvmtuneVerifyNotSucceeded', 'exp_alerts': [{
                     'exp_labels': {
                         'severity': 'warning', 'instance': 'c1:9100',
                         'job': 'node', 'command': 'verify',
                         'hostname': 'c1'},
                     'exp_annotations': {
                         'summary': 'kvmtune: verify has not passed on c1 '
                                    'for 24h',
                         'description': (
                             'kvmtune verify has not found c1 in sync for '
                             '1d 0h 11m 0s (a never-passed host shows '
                             'decades; a run that could check nothing, '
                             'every check UNKNOWN, is no success). Fix: '
                             'run "kvmtune verify --profile PROFILE" on '
                             'c1, apply the fix column of each DRIFT '
                             'check, give what each UNKNOWN check\'s live '
                             'column asks for, and run it again.')}}]},
            ]}]}
    (tmp_path / 'test.yml').write_text(yaml.safe_dump(tests))
    run = promtool('test', 'rules', 'test.yml', cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    # the proof can fail: had the all-UNKNOWN runs stamped a success (the
    # old rule), nothing fires
    tests['tests'][0]['input_series'][0]['values'] = ' '.join(
        f'{minute // 60 * 3600}' for minute in range(hours * 60))
    (tmp_path / 'test.yml').write_text(yaml.safe_dump(tests))
    run = promtool('test', 'rules', 'test.yml', cwd=tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert 'alertname: KvmtuneVerifyNotSucceeded' in run.stdout + run.stderr
