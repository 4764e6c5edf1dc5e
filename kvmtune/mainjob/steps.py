"""How the main job runs a step and says what it does: every command goes
through run(), every line it prints through say()."""
import os
import shutil
import subprocess
import sys

from kvmtune.errors import CloudError


def say(text):
    print(f'main-job: {text}', flush=True)


def bin_path(name):
    """A console script of this venv (kvmtune, rally)."""
    here = os.path.join(os.path.dirname(sys.executable), name)
    return here if os.path.exists(here) else shutil.which(name) or name


def run(argv, env=None, capture=False):
    """Run a step; its output goes to ours unless captured."""
    say('$ ' + ' '.join(argv))
    proc = subprocess.run(argv, env=env, text=True,
                          stdout=subprocess.PIPE if capture else None)
    if proc.returncode != 0:
        raise CloudError(f'exited {proc.returncode}',
                         source=' '.join(argv[:3]))
    return proc.stdout
