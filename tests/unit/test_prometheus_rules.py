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
