"""``kvmtune monitoring rules-path``: where the installed alert rules
are (the file tests/unit/test_prometheus_rules.py proves with promtool),
and one line, exit 2, when an install lacks it."""

import os

import yaml

from kvmtune import cli
from kvmtune.cmd import monitoring_rules_path
from tests import paths


def test_prints_the_installed_rules_file(capsys):
    assert cli.main(['monitoring', 'rules-path']) == 0
    path = capsys.readouterr().out.strip()
    assert os.path.isabs(path)
    assert os.path.samefile(path, os.path.join(
        paths.REPO, 'kvmtune', 'data', 'prometheus', 'kvmtune.rules.yml'))
    with open(path) as f:
        groups = yaml.safe_load(f)['groups']
    alerts = [rule['alert'] for group in groups for rule in group['rules']
              if 'alert' in rule]
    assert 'KvmtuneDrift' in alerts


def test_a_missing_file_is_one_line(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(monitoring_rules_path, 'rules_path',
                        lambda: str(tmp_path / 'kvmtune.rules.yml'))
    assert cli.main(['monitoring', 'rules-path']) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1
    assert 'the alert rules are not installed' in err
    assert 'reinstall kvmtune' in err
