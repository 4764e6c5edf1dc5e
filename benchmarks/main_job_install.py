"""tools/main-job up to the sweep, old vs new, side by side in one run:
the parts that can run beside a shared machine's test cloud.

  old   a clone of the commit before kvmtune/venvs.py (--old): its
        tools/bootstrap (every package and venv the tests need, by pip),
        then the image build, then the test cloud's install (pip), one
        after the other
  new   a clone of this tree: tools/bootstrap (what the main job runs,
        by uv), then the main job's own code: the cloud's install
        started (kvmtune.mainjob.testcloud.start_cloud, without its
        bring-up), the image built meanwhile (job._image_step), the
        install waited for (testcloud.install_step)

Each round starts with empty caches of its own (pip's or uv's, the image
build's) and installs into directories under --dir only: the clone's
.venv, the consumers' venvs (the old bootstrap's /opt path rewritten to
--dir), the image and the cloud's venv (KVMTUNE_IMAGE_DIR,
KVMTUNE_IMAGE_CACHE, KVMTUNE_CLOUD_VENV, KVMTUNE_CLOUD_DIR).

Not measured here: apt (a machine that has run the tests has every
Debian package, so neither round installs one), the bare-host baseline
(the same in both, about 11 s) and `kvmtune cloud up` (one cloud per
machine, under its lock, shared with others).

  python benchmarks/main_job_install.py [--dir DIR] [--old REV] [--keep]
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

NEW_STEPS = '''
import sys, time
from kvmtune.mainjob import job, steps, testcloud
steps.configure(sys.argv[1], verbose=False)
started = time.monotonic()
installing = testcloud.start_cloud(up=False)
job._image_step()
testcloud.install_step(installing)
print(f"image and cloud install: {time.monotonic() - started:.1f} s")
'''


def _old_rev():
    """The parent of the commit that added kvmtune/venvs.py."""
    out = subprocess.run(
        ['git', '-C', REPO, 'log', '--diff-filter=A', '--format=%H', '--',
         'kvmtune/venvs.py'], capture_output=True, text=True,
        check=True).stdout.split()
    return out[-1] + '~1'


def _timed(label, argv, cwd, env, log):
    started = time.monotonic()
    with open(log, 'a') as out:
        out.write(f'$ {" ".join(argv)}\n')
        out.flush()
        done = subprocess.run(argv, cwd=cwd, env=env, stdout=out,
                              stderr=subprocess.STDOUT)
    seconds = time.monotonic() - started
    status = '' if done.returncode == 0 else \
        f'  FAILED (exit {done.returncode}, {log})'
    print(f'   {label:44s} {seconds:7.1f} s{status}', flush=True)
    return seconds, done.returncode


def _clone(rev, dest):
    subprocess.run(['git', 'clone', '-q', '--no-checkout', REPO, dest],
                   check=True)
    subprocess.run(['git', '-C', dest, 'checkout', '-q', rev], check=True)


def _env(top, name, extra):
    env = dict(os.environ)
    for drop in ('PYTHONPATH', 'VIRTUAL_ENV'):
        env.pop(drop, None)
    env.update(KVMTUNE_IMAGE_DIR=os.path.join(top, name, 'image'),
               KVMTUNE_IMAGE_CACHE=os.path.join(top, name, 'image-cache'),
               KVMTUNE_CLOUD_VENV=os.path.join(top, name, 'cloud-venv'),
               KVMTUNE_CLOUD_DIR=os.path.join(top, name, 'cloud'),
               KVMTUNE_STATE_DIR=os.path.join(top, name, 'state'))
    env.update(extra)
    return env


def old_round(top, rev):
    print(f'== old ({rev}): bootstrap, then image, then cloud install',
          flush=True)
    clone = os.path.join(top, 'old', 'kvmtune')
    _clone(rev, clone)
    consumers = os.path.join(top, 'old', 'consumers')
    script = os.path.join(clone, 'tools', 'bootstrap')
    with open(script) as f:
        text = f.read()
    with open(script, 'w') as f:
        f.write(text.replace('/opt/kvmtune-consumers', consumers))
    env = _env(top, 'old', {'PIP_CACHE_DIR': os.path.join(top, 'old',
                                                          'pip-cache')})
    log = os.path.join(top, 'old.log')
    kvmtune = os.path.join(clone, '.venv', 'bin', 'kvmtune')
    parts = [
        _timed('tools/bootstrap (main job and tests)',
               ['tools/bootstrap'], clone, env, log),
        _timed('kvmtune image build', [kvmtune, 'image', 'build',
                                       '--output', env['KVMTUNE_IMAGE_DIR']],
               clone, env, log),
        _timed('kvmtune cloud install (after the image)',
               [kvmtune, 'cloud', 'install'], clone, env, log),
    ]
    return parts


def new_round(top):
    print('== new (this tree): bootstrap, then image beside cloud install',
          flush=True)
    clone = os.path.join(top, 'new', 'kvmtune')
    _clone('HEAD', clone)
    # the working tree's changes too, so that an uncommitted tree is
    # measured as it is
    diff = subprocess.run(['git', '-C', REPO, 'diff', 'HEAD'],
                          capture_output=True, check=True).stdout
    if diff:
        subprocess.run(['git', '-C', clone, 'apply'], input=diff,
                       check=True)
    env = _env(top, 'new', {'UV_CACHE_DIR': os.path.join(top, 'new',
                                                         'uv-cache'),
                            'PIP_CACHE_DIR': os.path.join(top, 'new',
                                                          'pip-cache')})
    log = os.path.join(top, 'new.log')
    python = os.path.join(clone, '.venv', 'bin', 'python')
    parts = [
        _timed('tools/bootstrap (main job only)', ['tools/bootstrap'],
               clone, env, log),
        _timed('image build beside cloud install (job code)',
               [python, '-c', NEW_STEPS, os.path.join(top, 'new-job.log')],
               clone, env, log),
    ]
    return parts


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument('--dir')
    parser.add_argument('--old', help='the old commit (default: the one '
                        'before kvmtune/venvs.py was added)')
    parser.add_argument('--keep', action='store_true')
    args = parser.parse_args(argv)
    top = args.dir or tempfile.mkdtemp(prefix='kvmtune-main-job-')
    os.makedirs(top, exist_ok=True)
    print(f'under {top}; {os.cpu_count()} CPUs, load '
          f'{os.getloadavg()[0]:.1f} at start', flush=True)
    old = old_round(top, args.old or _old_rev())
    new = new_round(top)
    print('== side by side (wall seconds; apt, baseline and cloud up not '
          'included)')
    total_old = sum(s for s, _ in old)
    total_new = sum(s for s, _ in new)
    print(f'   old {total_old:7.1f} s   new {total_new:7.1f} s   '
          f'old / new {total_old / total_new:.1f}x')
    print(f'   load {os.getloadavg()[0]:.1f} at the end')
    if not args.keep:
        shutil.rmtree(top, ignore_errors=True)
    return 0 if all(rc == 0 for _, rc in old + new) else 1


if __name__ == '__main__':
    sys.exit(main())
