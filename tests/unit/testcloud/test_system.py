"""kvmtune.testcloud.system: the checks the test cloud makes of this host
before it changes anything (installed packages, the services' venv, a
port, a running process, hugetlbfs mounts) and the qemu.conf block it
adds once. What changes the host (apt, MariaDB, RabbitMQ, libvirtd) runs
in tests/functional/ through `kvmtune cloud up`."""

import importlib.metadata
import os
import socket
import sys

import pytest

from kvmtune.testcloud import config
from kvmtune.testcloud import system


def test_dpkg_installed():
    assert system.dpkg_installed('dpkg') is True
    assert system.dpkg_installed('kvmtune-no-such-package') is False


@pytest.fixture
def venv_layout(tmp_path):
    """The virtualenv running these tests, as the cloud's."""
    assert os.path.exists(os.path.join(sys.prefix, 'bin', 'python3'))
    return config.Layout(str(tmp_path / 'state'), sys.prefix)


@pytest.mark.parametrize('pins, satisfied', [
    (lambda v: f'pytest=={v}\n# comment\n\npyyaml  # any version\n', True),
    (lambda v: 'pytest==0.0.1\n', False),
    (lambda v: 'kvmtune-no-such-distribution\n', False),
])
def test_venv_satisfied(venv_layout, tmp_path, pins, satisfied):
    requirements = tmp_path / 'requirements.txt'
    requirements.write_text(pins(importlib.metadata.version('pytest')))
    assert system.venv_satisfied(venv_layout, str(requirements)) is satisfied


def test_no_venv_is_not_satisfied(tmp_path):
    requirements = tmp_path / 'requirements.txt'
    requirements.write_text('pytest\n')
    layout = config.Layout(str(tmp_path), str(tmp_path / 'absent'))
    assert system.venv_satisfied(layout, str(requirements)) is False


def test_port_open():
    with socket.socket() as server:
        server.bind((config.HOST, 0))
        server.listen()
        port = server.getsockname()[1]
        assert system.port_open(port) is True
    assert system.port_open(port) is False


def test_process_exists_sees_this_process():
    with open(f'/proc/{os.getpid()}/cmdline', 'rb') as f:
        me = f.read().split(b'\0')
    assert system._process_exists(lambda argv: argv == me)
    assert not system._process_exists(
        lambda argv: argv[0] == b'/kvmtune/no/such/program')


def test_service_predicates():
    assert system._mariadbd([b'/usr/sbin/mariadbd', b'--user=mysql'])
    assert not system._mariadbd([b'/usr/bin/mariadb', b'-uroot'])
    # RabbitMQ's Erlang VM: ... -s rabbit boot ...
    assert system._rabbit([b'/usr/lib/erlang/erts/bin/beam.smp', b'-s',
                           b'rabbit', b'boot', b''])
    assert not system._rabbit([b'/usr/sbin/rabbitmqctl', b'status'])


def test_hugetlbfs_mounts_are_by_page_size():
    mounts = system._hugetlbfs_mounts()
    with open('/proc/mounts') as f:
        listed = {line.split()[1] for line in f
                  if line.split()[2] == 'hugetlbfs'}
    assert set(mounts.values()) <= listed
    assert all(isinstance(kb, int) and kb > 0 for kb in mounts)
    assert system._default_hugepage_kb() in (2048, 1048576)


def test_qemu_conf_block_is_added_once(tmp_path, monkeypatch):
    path = tmp_path / 'libvirt' / 'qemu.conf'
    monkeypatch.setattr(system, 'QEMU_CONF', str(path))
    said = []
    system.qemu_conf(said.append)     # no file yet: created
    assert path.read_text() == system.QEMU_CONF_BLOCK
    assert oct(path.stat().st_mode & 0o777) == '0o600'
    path.write_text('# the site\'s\nvnc_listen = "0.0.0.0"\n')
    system.qemu_conf(said.append)
    system.qemu_conf(said.append)
    text = path.read_text()
    assert text.startswith('# the site\'s\nvnc_listen = "0.0.0.0"\n')
    assert text.count('security_driver = "none"') == 1
    assert len(said) == 2 and str(path) in said[0]
