"""``python -m kvmtune.mainjob``: the same command as ``kvmtune main-job``
(the CLI parses and checks before the job runs anything)."""

import subprocess
import sys

from tests import paths


def run(*argv):
    return subprocess.run([sys.executable, '-m', 'kvmtune.mainjob', *argv],
                          capture_output=True, text=True, cwd=paths.REPO,
                          timeout=120)


def test_the_options_are_main_jobs():
    proc = run('--help')
    assert proc.returncode == 0
    assert proc.stdout.startswith('usage: kvmtune main-job ')
    for option in ('--os-cloud', '--max-vms', '--setup-only', '--strict'):
        assert option in proc.stdout


def test_a_bad_argument_is_main_jobs_one_line_exit_2():
    proc = run('--max-vms', '0')
    assert proc.returncode == 2
    assert proc.stdout == ''
    assert proc.stderr.splitlines() == [
        'kvmtune: error: --max-vms: 0 is no VM count (fix: give 1 or more)']
