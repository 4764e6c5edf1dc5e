"""README's Install lines, run as written: read from README.md's
``## Install`` block, run one after the other with the pip of a new
virtualenv, in this checkout, as a new user would. Each line must give
what its comment promises: the core alone leaves out what the extras
bring (a compute host never gets Rally or the plots), ``[bench]`` brings
Rally and the plots, ``[cloud]`` the cloud's parts and uv.

pip fetches from the package registry (kvmtune's dependencies; the build
backend pbr for the checkout), as the user's would.
"""

import os
import re
import shlex
import subprocess
import sys

import pytest

from kvmtune import extras
from tests import paths


def _install_lines():
    with open(os.path.join(paths.REPO, 'README.md')) as f:
        text = f.read()
    section = text.split('\n## Install\n', 1)[1].split('\n## ', 1)[0]
    [block] = re.findall(r'^```sh\n(.*?)^```', section, re.S | re.M)
    return [re.sub(r'(^|\s)#.*', '', line).strip()
            for line in block.splitlines() if line.strip()]


def test_readme_installs_from_the_checkout():
    lines = _install_lines()
    assert [shlex.split(line)[:2] for line in lines] == \
        [['pip', 'install']] * 3, lines
    # the checkout, with no extra, then each extra: nothing that needs a
    # package registry to know kvmtune
    assert [shlex.split(line)[2] for line in lines] == \
        ['.', '.[bench]', '.[cloud]'], lines


def _missing(python, extra):
    done = subprocess.run(
        [python, '-c', 'import sys; from kvmtune import extras; '
         f'print(",".join(extras.missing({extra!r})))'],
        capture_output=True, text=True, cwd='/', check=True)
    return [m for m in done.stdout.strip().split(',') if m]


@pytest.mark.slow
def test_readme_install_lines_run_as_written(tmp_path):
    venv = tmp_path / 'venv'
    subprocess.run([sys.executable, '-m', 'venv', str(venv)], check=True)
    env = dict(os.environ, PATH=f'{venv}/bin:{os.environ["PATH"]}',
               VIRTUAL_ENV=str(venv))
    for name in ('PYTHONPATH', 'PIP_REQUIRE_VIRTUALENV', 'PIP_TARGET',
                 'PIP_PREFIX', 'PIP_USER'):
        env.pop(name, None)
    python = str(venv / 'bin' / 'python')
    lines = _install_lines()
    for n, line in enumerate(lines):
        done = subprocess.run(['sh', '-ec', line], cwd=paths.REPO, env=env,
                              capture_output=True, text=True, timeout=1500)
        assert done.returncode == 0, (line, done.stderr[-3000:])
        if n == 0:
            # the core: a compute host's commands, none of the extras
            run = subprocess.run([str(venv / 'bin' / 'kvmtune'), 'plan',
                                  '--help'], env=env, cwd='/',
                                 capture_output=True, text=True)
            assert run.returncode == 0, run.stderr
            assert '--profile' in run.stdout
            assert _missing(python, 'bench') == \
                list(extras.MODULES['bench'])
        elif n == 1:
            assert _missing(python, 'bench') == []
        else:
            assert _missing(python, 'cloud') == []
            assert os.access(venv / 'bin' / 'uv', os.X_OK)
    # installed from this checkout, not from anywhere else
    where = subprocess.run(
        [python, '-c', 'import importlib.metadata as m; '
         'print(m.distribution("kvmtune").read_text("direct_url.json"))'],
        capture_output=True, text=True, cwd='/', check=True).stdout
    assert 'file://' in where and (
        os.path.realpath(paths.REPO) in where or paths.REPO in where), where
