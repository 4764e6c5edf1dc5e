"""kvmtune.mainjob.testcloud: the test cloud as the main job's target. The
test cloud is asked through its own library about a state directory of
the test's (no cloud there: nothing runs, nothing to stop); the whole job
on it: test_job.py and test_compute.py."""

import pytest

from kvmtune.mainjob import testcloud


@pytest.fixture
def no_cloud(tmp_path, monkeypatch):
    """A test cloud that was never brought up here."""
    monkeypatch.setenv('KVMTUNE_CLOUD_DIR', str(tmp_path / 'cloud'))
    monkeypatch.setenv('KVMTUNE_CLOUD_VENV', str(tmp_path / 'venv'))
    return tmp_path


def test_nothing_up_nothing_to_stop(no_cloud):
    assert testcloud.stop_hint() is None
    assert testcloud.testcloud_emulated() is False
    assert testcloud.nova_python() is None
    assert testcloud.nova_conf() == str(
        no_cloud / 'cloud' / 'etc' / 'nova' / 'nova-compute.conf')


def test_the_venv_python_when_it_exists(no_cloud):
    python = no_cloud / 'venv' / 'bin' / 'python3'
    python.parent.mkdir(parents=True)
    python.write_text('')
    assert testcloud.nova_python() == str(python)
