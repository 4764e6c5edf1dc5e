"""``kvmtune profile show``: one profile with every tuner parameter filled
in (the defaults the profile leaves out), as YAML or JSON."""

import json
import textwrap

import yaml

from kvmtune import cli


def test_profile_show_yaml_and_json(capsys):
    assert cli.main(['profile', 'show', 'net-tuned']) == 0
    shown = yaml.safe_load(capsys.readouterr().out)
    assert shown['tuners'] == [{'name': 'vhost_net', 'params': {
        'rx_queue_size': 1024, 'multiqueue': True}}]
    assert cli.main(['profile', 'show', 'hugepages', '--format',
                     'json']) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown['tuners'][0]['params']['host_page_size'] == 'auto'


def test_unknown_profile_exits_2(capsys):
    assert cli.main(['profile', 'show', 'nope']) == 2
    assert 'available: baseline' in capsys.readouterr().err


def test_profile_show_a_file_fills_in_the_defaults(tmp_path, capsys):
    path = tmp_path / 'mine.yaml'
    path.write_text(textwrap.dedent("""\
        description: mine
        source: doc/sources.md [S4]
        tuners:
          - vhost_net
        """))
    assert cli.main(['profile', 'show', str(path), '-f', 'json']) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown['path'] == str(path)
    assert shown['description'] == 'mine'
    # the profile gave no params: what plan uses is shown
    assert shown['tuners'] == [{'name': 'vhost_net', 'params': {
        'rx_queue_size': 1024, 'multiqueue': True}}]
