"""kvmtune.venvs: which installer runs, and real venvs made and filled by
uv and, without it, by venv and pip (the registry is not needed: the
package installed is a wheel made here). The dated install against the
registry (uploaded_before, undated) is proven by the Nova release matrix
(tests/matrix, tests/novamatrix), which builds six venvs with it."""

import base64
import hashlib
import os
import subprocess
import sys
import zipfile

import pytest

from kvmtune import venvs


def _wheel(directory, name='kvmtune_probe', version='1.0'):
    """A minimal valid wheel (PEP 427) holding one module."""
    path = os.path.join(directory, f'{name}-{version}-py3-none-any.whl')
    dist = f'{name}-{version}.dist-info'
    files = {
        f'{name}.py': b'ANSWER = 42\n',
        f'{dist}/METADATA': (f'Metadata-Version: 2.1\nName: {name}\n'
                             f'Version: {version}\n').encode(),
        f'{dist}/WHEEL': b'Wheel-Version: 1.0\nGenerator: test\n'
                         b'Root-Is-Purelib: true\nTag: py3-none-any\n',
    }
    record = []
    with zipfile.ZipFile(path, 'w') as z:
        for arc, data in files.items():
            z.writestr(arc, data)
            digest = base64.urlsafe_b64encode(
                hashlib.sha256(data).digest()).rstrip(b'=').decode()
            record.append(f'{arc},sha256={digest},{len(data)}')
        record.append(f'{dist}/RECORD,,')
        z.writestr(f'{dist}/RECORD', '\n'.join(record) + '\n')
    return path


@pytest.fixture
def real_uv(monkeypatch):
    monkeypatch.delenv('KVMTUNE_UV', raising=False)
    found = venvs.uv()
    # test-requirements.txt installs uv beside the tests' Python
    assert found, 'no uv beside this Python, in its wheel or on PATH'
    return found


def test_uv_is_found_beside_python_or_named(real_uv, monkeypatch, tmp_path):
    assert os.access(real_uv, os.X_OK)
    assert venvs.installer() == 'uv'
    monkeypatch.setenv('KVMTUNE_UV', 'none')
    assert venvs.uv() is None
    assert venvs.installer() == 'pip'
    monkeypatch.setenv('KVMTUNE_UV', str(tmp_path / 'absent'))
    assert venvs.uv() is None
    monkeypatch.setenv('KVMTUNE_UV', real_uv)
    assert venvs.uv() == real_uv


def test_registry_only_drops_local_sources_and_config():
    base = {'PATH': '/usr/bin', 'PIP_FIND_LINKS': '/opt/wheels',
            'PIP_EXTRA_INDEX_URL': 'file:///opt/pypi/simple',
            'UV_FIND_LINKS': '/opt/wheels', 'UV_INDEX': 'x=file:///y',
            'PYTHONPATH': '/work'}
    got = venvs.env(registry_only=True, base=base)
    assert got == {'PATH': '/usr/bin', 'PIP_CONFIG_FILE': os.devnull,
                   'UV_NO_CONFIG': '1'}
    assert venvs.env(base=base) == base
    assert 'PIP_FIND_LINKS' in base     # the caller's mapping is kept


def _imports(venv):
    return subprocess.run(
        [venvs.python(venv), '-c',
         'import kvmtune_probe, sys; print(kvmtune_probe.ANSWER, '
         'sys.prefix)'], capture_output=True, text=True, cwd='/').stdout


def test_uv_makes_and_fills_a_venv(real_uv, tmp_path):
    venv = str(tmp_path / 'venv')
    log = open(tmp_path / 'log', 'w+')
    assert venvs.create(venv, output=log) == 'uv'
    assert venvs.install(venv, ['--no-index', _wheel(str(tmp_path))],
                         output=log) == 'uv'
    assert _imports(venv).split() == ['42', venv]
    log.seek(0)
    assert f'{real_uv} venv' in log.read()
    # no pip unless asked: uv's venvs are filled by uv
    assert not os.path.exists(os.path.join(venv, 'bin', 'pip'))
    seeded = str(tmp_path / 'seeded')
    venvs.create(seeded, seed=True, output=log)
    assert subprocess.run([venvs.python(seeded), '-m', 'pip', '--version'],
                          capture_output=True).returncode == 0


def test_a_program_from_a_uv_venv_writes_its_bytecode(real_uv, tmp_path):
    """uv installs no bytecode; under PYTHONDONTWRITEBYTECODE=1 a program
    would compile its imports on every start. program_env lets it write
    them once, as it imports (the test cloud's services, Rally)."""
    venv = str(tmp_path / 'venv')
    venvs.create(venv)
    venvs.install(venv, ['--no-index', _wheel(str(tmp_path))])
    site = subprocess.run(
        [venvs.python(venv), '-c', 'import sysconfig; '
         'print(sysconfig.get_paths()["purelib"])'],
        capture_output=True, text=True, check=True).stdout.strip()
    cache = os.path.join(site, '__pycache__')
    assert not os.path.exists(cache), 'uv compiled at install'
    forbidding = dict(os.environ, PYTHONDONTWRITEBYTECODE='1')
    run = [venvs.python(venv), '-c', 'import kvmtune_probe']
    subprocess.run(run, env=forbidding, check=True, cwd='/')
    assert not os.path.exists(cache)
    env = venvs.program_env(forbidding)
    assert 'PYTHONDONTWRITEBYTECODE' not in env
    assert forbidding['PYTHONDONTWRITEBYTECODE'] == '1'   # caller's kept
    assert env['PATH'] == os.environ['PATH']
    subprocess.run(run, env=env, check=True, cwd='/')
    assert any(f.startswith('kvmtune_probe.') and f.endswith('.pyc')
               for f in os.listdir(cache))


def test_without_uv_venv_and_pip_do_it_and_say_so(monkeypatch, tmp_path):
    monkeypatch.setenv('KVMTUNE_UV', 'none')
    said = []
    venv = str(tmp_path / 'venv')
    log = open(tmp_path / 'log', 'w+')
    assert venvs.create(venv, output=log, say=said.append) == 'pip'
    assert venvs.install(venv, ['--no-index', _wheel(str(tmp_path))],
                         output=log, say=said.append) == 'pip'
    assert _imports(venv).split() == ['42', venv]
    assert len(said) == 2 and all('no uv' in line for line in said), said
    log.seek(0)
    assert f'{sys.executable} -m venv {venv}' in log.read()


def test_a_failed_install_raises(real_uv, tmp_path):
    venv = str(tmp_path / 'venv')
    venvs.create(venv, output=subprocess.DEVNULL)
    with pytest.raises(subprocess.CalledProcessError):
        venvs.install(venv, ['--no-index', 'kvmtune-probe-absent==1'],
                      output=subprocess.DEVNULL)
