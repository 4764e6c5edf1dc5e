"""The six Nova release venvs (tests/novamatrix): the old install (venv
and pip, what the matrix ran before kvmtune.venvs used uv, and what it
runs without uv: tests/unit/test_venvs.py)
and the new one (uv, one wheel cache), side by side in one run on this
machine, each into a directory of its own under --dir.

  old        KVMTUNE_UV=none: python -m venv, pip 26.3, pip download nova,
             pip install --uploaded-prior-to; pip's cache empty
  new cold   uv: uv venv, uv pip install --exclude-newer; uv's cache
             empty (a fresh machine)
  new warm   uv again into new venvs, its cache kept from "new cold"
             (a machine that has built them once, or whose test cloud
             venv filled the cache first)

Each round builds all six three at a time, as tools/nova-matrix does, in a
child process (tools/nova-matrix --build-only) so that each reads its own
environment. Then the package sets of the old and the new venv of each
release are compared (pip's and uv's resolvers on the same dated index
should agree; a difference is printed, not hidden).

Nothing else on this machine is touched: venvs and caches live under
--dir (default: a new temporary directory, removed unless --keep).

  python benchmarks/nova_venvs.py [--dir DIR] [--keep] [--release N ...]
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from kvmtune import venvs  # noqa: E402
from tests import novamatrix  # noqa: E402


def _round(name, cache, extra_env, releases):
    env = dict(os.environ, KVMTUNE_NOVA_MATRIX_CACHE=cache,
               PYTHONPATH=REPO, **extra_env)
    argv = [os.path.join(REPO, 'tools', 'nova-matrix'), '--build-only']
    for major in releases:
        argv += ['--release', str(major)]
    started = time.monotonic()
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - started
    print(f'== {name}: exit {done.returncode}, {seconds:.1f} s wall')
    for line in done.stdout.splitlines():
        print('   ' + line)
    if done.returncode:
        print(done.stderr[-2000:])
    return seconds, done.returncode


def _freeze(venv):
    done = subprocess.run(
        [os.path.join(venv, 'bin', 'python'), '-c',
         'import importlib.metadata as m\n'
         'for d in m.distributions():\n'
         '    print(d.metadata["Name"].lower().replace("_", "-"), '
         'd.version)'], capture_output=True, text=True)
    return {line for line in done.stdout.splitlines()
            if line.split()[0] not in ('pip', 'setuptools', 'wheel')}


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument('--dir')
    parser.add_argument('--keep', action='store_true')
    parser.add_argument('--release', type=int, action='append',
                        choices=sorted(novamatrix.RELEASES))
    args = parser.parse_args(argv)
    releases = sorted(args.release or novamatrix.RELEASES)
    top = args.dir or tempfile.mkdtemp(prefix='kvmtune-nova-venvs-')
    os.makedirs(top, exist_ok=True)
    uv = venvs.uv()
    if not uv:
        print('no uv beside this Python or on PATH: the new install '
              'cannot run (tools/bootstrap puts it in .venv)')
        return 2
    print(f'Nova releases {releases}, three at a time; under {top}; '
          f'{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at start')
    rounds = [
        ('old: venv + pip, empty pip cache', 'pip', {
            'KVMTUNE_UV': 'none',
            'PIP_CACHE_DIR': os.path.join(top, 'pip-cache')}),
        ('new: uv, empty uv cache (cold)', 'uv-cold', {
            'KVMTUNE_UV': uv, 'UV_CACHE_DIR': os.path.join(top, 'uv-cache')}),
        ('new: uv, its cache kept (warm)', 'uv-warm', {
            'KVMTUNE_UV': uv, 'UV_CACHE_DIR': os.path.join(top, 'uv-cache')}),
    ]
    figures = {}
    for name, key, extra in rounds:
        figures[key] = _round(name, os.path.join(top, key), extra, releases)
    print('== side by side (wall seconds, all six venvs)')
    for name, key, _ in rounds:
        seconds, status = figures[key]
        print(f'   {name:40s} {seconds:7.1f} s'
              + ('' if status == 0 else f'  (FAILED, exit {status})'))
    old = figures['pip'][0]
    for key in ('uv-cold', 'uv-warm'):
        print(f'   old / {key}: {old / figures[key][0]:.1f}x')
    print('== package sets, old (pip) vs new (uv cold)')
    for major in releases:
        a = _freeze(os.path.join(top, 'pip', f'nova-{major}'))
        b = _freeze(os.path.join(top, 'uv-cold', f'nova-{major}'))
        same = 'same' if a == b else (
            f'differ: pip only {sorted(a - b)}, uv only {sorted(b - a)}')
        print(f'   nova-{major}: {len(a)} vs {len(b)} distributions, {same}')
    if not args.keep:
        shutil.rmtree(top, ignore_errors=True)
    return 0 if all(s == 0 for _, s in figures.values()) else 1


if __name__ == '__main__':
    sys.exit(main())
