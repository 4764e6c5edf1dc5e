"""The test fleet's ansible-core (tools/bootstrap --tests makes the venv;
$KVMTUNE_CONSUMERS as tests/functional/test_fleet.py reads it). A test
that needs it skips without it, naming it: strict mode (CI=true,
tests/strict.py) turns that skip into a failure.
"""

import os

import pytest

VENV = os.path.join(os.environ.get('KVMTUNE_CONSUMERS',
                                   '/opt/kvmtune-consumers'), 'fleet-venv')
BIN = os.path.join(VENV, 'bin')

needs_ansible = pytest.mark.skipif(
    not os.access(os.path.join(BIN, 'ansible-playbook'), os.X_OK),
    reason=f'no ansible-core in {VENV} (tools/bootstrap --tests makes it)')


@pytest.fixture
def ansible_on_path(monkeypatch, tmp_path):
    """ansible-core's programs on PATH, Ansible's files under tmp_path."""
    monkeypatch.setenv('PATH', f'{BIN}:{os.environ["PATH"]}')
    monkeypatch.setenv('ANSIBLE_HOME', str(tmp_path / 'ansible'))
    monkeypatch.setenv('ANSIBLE_LOCAL_TEMP', str(tmp_path / 'ansible-tmp'))
    return BIN
