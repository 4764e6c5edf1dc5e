"""``kvmtune rally env`` as a user runs it, without a cloud: an unknown
cloud and a test cloud never brought up are one line on stderr,
exit 2, before Rally is touched (the live cases:
tests/functional/test_rally_env.py)."""

import os
import subprocess
import sys


def _kvmtune(*argv, tmp_path, **env):
    return subprocess.run(
        [sys.executable, '-m', 'kvmtune.cli', 'rally', 'env', *argv],
        capture_output=True, text=True, timeout=120,
        env={'PATH': '/usr/bin:/bin', 'HOME': str(tmp_path),
             'PYTHONPATH': os.environ.get('PYTHONPATH', ''),
             'KVMTUNE_CLOUD_DIR': str(tmp_path / 'cloud'), **env})


def test_an_unknown_cloud_is_one_line_exit_2(tmp_path):
    clouds = tmp_path / 'clouds.yaml'
    clouds.write_text('clouds:\n  mine:\n    auth:\n      auth_url: '
                      'http://127.0.0.1:9/v3\n')
    done = _kvmtune('--os-cloud', 'nosuch', tmp_path=tmp_path,
                    OS_CLIENT_CONFIG_FILE=str(clouds))
    assert done.returncode == 2 and done.stdout == ''
    assert done.stderr == (
        "kvmtune: error: clouds.yaml: --os-cloud: no cloud 'nosuch' "
        '(Cloud nosuch was not found.) (fix: one of: mine (clouds.yaml: '
        'OS_CLIENT_CONFIG_FILE, ./clouds.yaml, ~/.config/openstack/))\n')
    assert not (tmp_path / '.rally').exists()


def test_without_the_testcloud_says_how_to_start_it(tmp_path):
    done = _kvmtune(tmp_path=tmp_path)
    assert done.returncode == 2 and done.stdout == ''
    assert done.stderr == (
        f'kvmtune: error: {tmp_path}/cloud/clouds.yaml: no test cloud '
        'has been up here (fix: kvmtune cloud up, or name a cloud of your '
        'clouds.yaml with --os-cloud)\n')
    assert not (tmp_path / '.rally').exists()
