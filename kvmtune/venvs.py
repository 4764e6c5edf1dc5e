"""The virtualenvs kvmtune makes: one way to make one and fill it.

uv (https://docs.astral.sh/uv/pip/, a PyPI wheel with its own binary, in
the cloud extra and in the checkout's .venv) makes the venv and installs
into it: it resolves and fetches in parallel, and every venv it fills
shares one cache of wheels (``$UV_CACHE_DIR``, by default
``~/.cache/uv``, https://docs.astral.sh/uv/concepts/cache/), so a wheel
built from source once (libvirt-python) or fetched once (the OpenStack
libraries) is reused by the next venv that asks for the same file.

Without uv (the cloud extra brings it; ``KVMTUNE_UV=none`` asks for
that), the standard library's venv and pip do the same, slower, and
``say`` is told so.

Callers: the test cloud's venv (kvmtune.testcloud.api.install) and
the tests' Nova release venvs (tests/novamatrix); tools/bootstrap runs the
same uv from the shell for .venv and the consumers' venvs.
"""

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
import datetime
import os
import shutil
import subprocess
import sys
from typing import Any
from typing import IO

# Variables through which a machine's own pip or uv configuration adds
# package sources; ``registry_only`` drops them (sources without upload
# times cannot be dated, and the venv must come from the registry).
SOURCE_VARIABLES = ('PIP_FIND_LINKS', 'PIP_EXTRA_INDEX_URL', 'PIP_INDEX_URL',
                    'PIP_CONSTRAINT', 'PIP_REQUIRE_VIRTUALENV',
                    'UV_FIND_LINKS', 'UV_INDEX', 'UV_INDEX_URL',
                    'UV_DEFAULT_INDEX', 'UV_EXTRA_INDEX_URL',
                    'UV_CONSTRAINT', 'UV_OVERRIDE', 'PYTHONPATH')


def _quiet(line: str) -> None:
    pass


def uv() -> str | None:
    """The uv to use: the one beside this Python (its venv's bin), else
    the uv wheel's, else the first on PATH; None when there is none or
    ``KVMTUNE_UV`` is ``none``. ``KVMTUNE_UV`` may also name the
    binary."""
    wanted = os.environ.get('KVMTUNE_UV', '')
    if wanted == 'none':
        return None
    if wanted:
        return wanted if os.access(wanted, os.X_OK) else None
    beside = os.path.join(os.path.dirname(sys.executable), 'uv')
    if os.access(beside, os.X_OK):
        return beside
    try:    # the uv wheel's own finder (a --user or other scheme install)
        import uv as uv_wheel
        found: str = uv_wheel.find_uv_bin()
        return found
    except (ImportError, FileNotFoundError):
        return shutil.which('uv')


def python(venv: str) -> str:
    return os.path.join(venv, 'bin', 'python')


def installer() -> str:
    """'uv' or 'pip': what create() and install() will run."""
    return 'uv' if uv() else 'pip'


def env(registry_only: bool = False,
        base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for the installer. ``registry_only``: no local
    package sources and no configuration files, the registry alone."""
    out = dict(os.environ if base is None else base)
    if registry_only:
        for name in SOURCE_VARIABLES:
            out.pop(name, None)
        out['PIP_CONFIG_FILE'] = os.devnull
        out['UV_NO_CONFIG'] = '1'
    return out


def program_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a Python program run from a venv kvmtune made
    or installed itself into (the test cloud's services and their manage
    commands, Rally): ``base`` (os.environ) without PYTHONDONTWRITEBYTECODE.

    pip compiles a venv's bytecode as it installs; uv does not (its
    default, https://docs.astral.sh/uv/reference/settings/#compile-bytecode),
    so where the caller's environment forbids writing bytecode each of
    those processes compiled every module it imports from source, every
    time it started: measured on a 2-CPU machine, a test cloud's `up`
    98 s without bytecode against 52 s writing it as the services import
    (5,154 files, 81 MB), and `rally --version` 3.9 s against 1.7 s.
    Bytecode written as a program imports costs only the modules it uses
    (compiling the whole cloud venv at install: 39 s of CPU)."""
    out = dict(os.environ if base is None else base)
    out.pop('PYTHONDONTWRITEBYTECODE', None)
    return out


def _run(argv: Sequence[str], output: IO[Any] | None,
         environ: Mapping[str, str] | None, timeout: float | None) -> None:
    if output is not None and hasattr(output, 'write'):
        output.write('$ ' + ' '.join(argv) + '\n')
        output.flush()
    subprocess.run(list(argv), stdout=output, stderr=output,
                   env=None if environ is None else dict(environ),
                   check=True, timeout=timeout)


def create(venv: str, seed: bool = False, output: IO[Any] | None = None,
           environ: Mapping[str, str] | None = None,
           timeout: float | None = None, say: Callable[[str], object] = _quiet
           ) -> str:
    """Make the venv ``venv`` on the Python running kvmtune (its base
    interpreter); ``seed`` puts pip into it too (pip's venvs always have
    it). Returns 'uv' or 'pip'. Raises CalledProcessError on failure."""
    tool = uv()
    if tool:
        # --allow-existing: as python -m venv, a directory already there
        # (a venv whose python went missing) is filled, not refused
        argv = [tool, 'venv', '-q', '--allow-existing', '--python',
                sys.executable]
        _run(argv + (['--seed'] if seed else []) + [venv], output, environ,
             timeout)
        return 'uv'
    say(f'venv {venv}: no uv (pip install uv, or KVMTUNE_UV names it): '
        'made by python -m venv and pip, slower')
    _run([sys.executable, '-m', 'venv', venv], output, environ, timeout)
    return 'pip'


def install(venv: str, args: Sequence[str], output: IO[Any] | None = None,
            environ: Mapping[str, str] | None = None,
            timeout: float | None = None, uploaded_before: str | None = None,
            undated: Sequence[str] = (),
            say: Callable[[str], object] = _quiet) -> str:
    """Install into the venv ``venv``: ``args`` as pip install takes them
    (requirements, ``-r FILE``, ``-c FILE``, ``-e PATH``), quietly.
    ``uploaded_before`` (an RFC 3339 time) keeps to the files the
    registry had before it (uv's --exclude-newer, pip's
    --uploaded-prior-to), except for the pinned requirements ``undated``
    (``name==version``; a later point release), whose own dependencies
    are dated. Returns 'uv' or 'pip'."""
    tool = uv()
    if tool:
        argv = [tool, 'pip', 'install', '-q', '--python', python(venv)]
        if uploaded_before:
            argv += ['--exclude-newer', uploaded_before]
            # any upload time: tomorrow is after every upload
            later = (datetime.datetime.now(datetime.timezone.utc)
                     + datetime.timedelta(days=1)).strftime(
                         '%Y-%m-%dT%H:%M:%SZ')
            for pin in undated:
                argv += ['--exclude-newer-package',
                         pin.split('==')[0] + '=' + later]
        _run(argv + list(args) + list(undated), output, environ, timeout)
        return 'uv'
    say(f'venv {venv}: no uv: pip installs (slower)')
    pip = [python(venv), '-m', 'pip']
    files: list[str] = []
    if undated:
        # pip dates every file: fetch the undated ones first, then
        # install them as files (their dependencies are dated)
        wheels = venv + '.wheels'
        shutil.rmtree(wheels, ignore_errors=True)
        _run(pip + ['download', '-q', '--no-deps', '-d', wheels]
             + list(undated), output, environ, timeout)
        files = [os.path.join(wheels, f) for f in sorted(os.listdir(wheels))]
    argv = pip + ['install', '-q']
    if uploaded_before:
        argv += ['--uploaded-prior-to', uploaded_before]
    try:
        _run(argv + list(args) + files, output, environ, timeout)
    finally:
        if undated:
            shutil.rmtree(venv + '.wheels', ignore_errors=True)
    return 'pip'
