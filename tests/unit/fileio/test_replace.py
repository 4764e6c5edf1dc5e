"""kvmtune.fileio.replace, through the one writer (kvmtune.fileio): what a
replace keeps (owner, mode, xattrs, ACLs), when it writes in place (hard
links, bind mounts), a new file's mode, stale temporary files."""

import os
import shutil
import stat
import subprocess

import pytest

from kvmtune import fileio

ROOT = os.geteuid() == 0


def test_single_file_bind_mount_is_written_in_place(tmp_path):
    """kolla bind-mounts nova.conf alone: rename(2) onto it is EBUSY."""
    source = tmp_path / 'host-nova.conf'
    source.write_text('old\n')
    target = tmp_path / 'nova.conf'
    target.write_text('placeholder\n')
    mounted = subprocess.run(['mount', '--bind', str(source), str(target)],
                             capture_output=True)
    if mounted.returncode:
        pytest.skip('cannot bind-mount here (needs root in its own mount '
                    'namespace)')
    try:
        result = fileio.write_atomic(str(target), 'new\n',
                                     backup=str(tmp_path / 'nova.conf.bak'))
        assert result == 'in place'
        assert target.read_text() == 'new\n'
    finally:
        subprocess.run(['umount', str(target)], check=True)
    assert source.read_text() == 'new\n'        # the host's file changed
    assert (tmp_path / 'nova.conf.bak').read_text() == 'old\n'


def test_hard_links_stay_one_file(tmp_path):
    target = tmp_path / 'nova.conf'
    target.write_text('old\n')
    other = tmp_path / 'other-name'
    os.link(target, other)
    assert fileio.write_atomic(str(target), 'new\n') == 'in place'
    assert other.read_text() == 'new\n'
    assert os.stat(target).st_ino == os.stat(other).st_ino


def _has(tool):
    return shutil.which(tool) is not None


@pytest.mark.skipif(not (_has('setfacl') and _has('getfacl')),
                    reason='needs the acl package (tools/bootstrap)')
def test_acl_and_user_xattr_survive(tmp_path):
    target = tmp_path / 'nova.conf'
    target.write_text('old\n')
    os.chmod(target, 0o640)
    subprocess.run(['setfacl', '-m', 'u:nobody:r', str(target)], check=True)
    os.setxattr(target, 'user.kvmtune-test', b'keep me')
    acl_before = subprocess.run(['getfacl', '-c', str(target)], check=True,
                                capture_output=True, text=True).stdout
    inode = os.stat(target).st_ino
    assert fileio.write_atomic(str(target), 'new\n') == 'replaced'
    assert os.stat(target).st_ino != inode      # it was a real replace
    assert os.getxattr(target, 'user.kvmtune-test') == b'keep me'
    acl_after = subprocess.run(['getfacl', '-c', str(target)], check=True,
                               capture_output=True, text=True).stdout
    assert 'user:nobody:r--' in acl_after
    assert acl_after == acl_before
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640


@pytest.mark.skipif(not ROOT, reason='chown to another user needs root')
def test_owner_group_and_setgid_mode_survive(tmp_path):
    target = tmp_path / 'nova.conf'
    target.write_text('old\n')
    os.chown(target, 65534, 65534)
    os.chmod(target, 0o2640)
    fileio.write_atomic(str(target), 'new\n')
    after = os.stat(target)
    assert (after.st_uid, after.st_gid) == (65534, 65534)
    assert stat.S_IMODE(after.st_mode) == 0o2640


def test_a_default_acl_of_the_directory_is_not_added(tmp_path):
    if not _has('setfacl'):
        pytest.skip('needs the acl package')
    subprocess.run(['setfacl', '-d', '-m', 'u:nobody:rw', str(tmp_path)],
                   check=True)
    target = tmp_path / 'nova.conf'
    target.write_text('old\n')
    os.removexattr(target, 'system.posix_acl_access')
    fileio.write_atomic(str(target), 'new\n')
    assert 'system.posix_acl_access' not in os.listxattr(target)


def test_new_file_honours_mode(tmp_path):
    target = tmp_path / 'secret.json'
    assert fileio.write_atomic(str(target), '{}', mode=0o600) == 'created'
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600


def test_stale_temporary_files_are_removed(tmp_path):
    target = tmp_path / 'nova.conf'
    target.write_text('old\n')
    stale = tmp_path / '.nova.conf.kvmtune-abc123.tmp'
    stale.write_text('half a file')
    foreign = tmp_path / '.nova.conf.other.tmp'
    foreign.write_text('not ours')
    fileio.write_atomic(str(target), 'new\n')
    assert not stale.exists()
    assert foreign.exists()
