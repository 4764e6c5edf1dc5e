"""Run devstack/plugin.sh phases the way stack.sh does, on top of the shim.

Used by the functional tests: each call sources the shim, the plugin's
settings, then ``plugin.sh MODE [PHASE]`` in a fresh bash, with the
environment standing in for local.conf.
"""

import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
SHIM = REPO / 'tests' / 'devstack_shim' / 'functions'


def venv_over(path, python=sys.executable):
    """A venv at path that also sees python's site-packages (no pip).

    "stack install" (setup_develop) installs kvmtune into it, so the
    shared development venv is not reinstalled under other users.
    """
    subprocess.run([python, '-m', 'venv', '--without-pip', str(path)],
                   check=True)
    venv_python = pathlib.Path(path) / 'bin' / 'python'
    site = subprocess.run(
        [str(venv_python), '-c',
         'import site; print(site.getsitepackages()[0])'],
        capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(site, 'borrowed.pth'), 'w') as handle:
        handle.write('\n'.join(p for p in sys.path
                               if p.endswith('site-packages')) + '\n')
    return venv_python


class Stack:
    """``stack('stack', 'extra')`` runs that phase; returns its stdout.

    With stack.sh's shell options (errexit, no nounset); PYTHON only for
    the stack phases, as only stack.sh exports it.
    """

    def __init__(self, env):
        self.env = env

    def __call__(self, *mode, timeout=900):
        script = (f'set -o errexit\nsource {SHIM}\n'
                  f'source {REPO}/devstack/settings\n'
                  f'source {REPO}/devstack/plugin.sh {" ".join(mode)}\n')
        env = dict(self.env)
        if mode[0] != 'stack':
            env.pop('PYTHON', None)
        done = subprocess.run(['bash', '-c', script], capture_output=True,
                              text=True, env=env, timeout=timeout)
        print(f'--- plugin.sh {" ".join(mode)}\n{done.stdout}{done.stderr}')
        if done.returncode != 0:
            raise AssertionError(f'plugin.sh {" ".join(mode)} failed: '
                                 f'{done.stderr.strip()[-2000:]}')
        return done.stdout
