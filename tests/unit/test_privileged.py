"""kvmtune.privileged: direct writes where allowed, sudo -n otherwise, and
one line when neither may (run as an unprivileged user through sudo)."""

import os
import shutil
import subprocess
import tempfile

import pytest

from kvmtune import privileged
from tests import paths

NOBODY = 'nobody'


def test_direct_write_replace_and_remove(tmp_path):
    target = tmp_path / 'etc' / 'modprobe.d' / 'kvm.conf'
    privileged.write_file(str(target), 'options kvm x=1\n')
    assert target.read_text() == 'options kvm x=1\n'
    assert oct(target.stat().st_mode & 0o777) == '0o644'
    privileged.write_file(str(target), 'options kvm x=2\n', mode=0o600)
    assert target.read_text() == 'options kvm x=2\n'
    assert sorted(os.listdir(target.parent)) == ['kvm.conf']
    privileged.remove_file(str(target))
    assert not target.exists()
    privileged.remove_file(str(target))  # gone already: nothing to do


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which('sudo'),
                    reason='needs root and sudo to run as another user')
def test_a_user_without_sudo_rights_gets_one_line(tmp_path):
    # nobody has no sudo rights: "sudo -n" refuses instead of prompting.
    os.chmod(tmp_path, 0o755)
    target = tmp_path / 'root-only.conf'
    script = ('from kvmtune import privileged\n'
              'try:\n'
              f'    privileged.write_file({str(target)!r}, "x")\n'
              'except privileged.NotAllowed as exc:\n'
              '    print(exc.line())\n')
    # nobody imports a copy of the package from a directory anyone can
    # read: the clone may be where nobody cannot (root's 0700 home), and
    # so is pytest's tmp_path base
    public = tempfile.mkdtemp(prefix='kvmtune-test-')
    try:
        shutil.copytree(os.path.join(paths.REPO, 'kvmtune'),
                        os.path.join(public, 'kvmtune'),
                        ignore=shutil.ignore_patterns('__pycache__'))
        for root, dirs, files in os.walk(public):
            os.chmod(root, 0o755)
            for name in files:
                os.chmod(os.path.join(root, name), 0o644)
        done = subprocess.run(
            ['sudo', '-u', NOBODY, 'env', f'PYTHONPATH={public}',
             '/usr/bin/python3', '-c', script],
            capture_output=True, text=True, timeout=60, cwd='/')
    finally:
        shutil.rmtree(public)
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip()
    assert line.startswith(f'{tmp_path}/root-only.conf: not root, and '
                           '"sudo -n mkdir" failed: ')
    assert line.endswith("(fix: run as root, or as a user with "
                         "passwordless sudo (DevStack's stack user has it))")
    assert '\n' not in line
    assert not target.exists()
