"""The test fleet's ansible-core (tools/bootstrap --tests makes the venv;
$KVMTUNE_CONSUMERS as tests/functional/test_fleet.py reads it). A test
that needs it skips without it, naming it: strict mode (CI=true,
tests/strict.py) turns that skip into a failure. And this checkout's
kvmtune as the ``kvmtune`` a host runs (what the rollout asks a host
runs there).
"""

import os
import sys

import pytest

from tests import paths

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


@pytest.fixture
def kvmtune_on_path(monkeypatch, tmp_path):
    """``kvmtune`` on PATH: this checkout's, on this Python."""
    bindir = tmp_path / 'kvmtune-bin'
    bindir.mkdir()
    (bindir / 'kvmtune').write_text(
        f'#!/bin/sh\nexec {sys.executable} -m kvmtune.cli "$@"\n')
    (bindir / 'kvmtune').chmod(0o755)
    monkeypatch.setenv('PATH', f'{bindir}:{os.environ["PATH"]}')
    monkeypatch.setenv('PYTHONPATH', paths.REPO)
    return bindir


def kvmtune_bin(tmp_path):
    """A bin directory whose kvmtune is this checkout's kvmtune (the
    kvmtune under test), for a play's kvmtune_command."""
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    (bindir / 'kvmtune').write_text(
        f'#!/bin/sh\nPYTHONPATH={paths.REPO} exec {sys.executable} -m '
        'kvmtune.cli "$@"\n')
    (bindir / 'kvmtune').chmod(0o755)
    return bindir
