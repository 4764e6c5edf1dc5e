"""Writing an export (kvmtune.tuning.export.writer), through ``kvmtune
export``: an existing file that differs is refused naming the key, never
its value; an output that cannot be written, or a link leading out of
it, is one line; a write that fails half-way leaves nothing new."""

import os
import shutil
import stat

import pytest

from tests.unit.cmd.test_export import export
from tests.unit.cmd.test_export import one_line_error
from tests.unit.cmd.test_export import tree
from tests.unit import fulldisk
from tests.unit.tuning.export import consumers


def test_existing_file_with_another_value_is_refused(tmp_path, capsys):
    out = tmp_path / 'out'
    target = (out / 'etc/kolla/config/nova' / consumers.HOST /
              'nova-compute.conf')
    target.parent.mkdir(parents=True)
    target.write_text('[compute]\ncpu_dedicated_set = 2-7\n')
    assert export(out) == 2
    one_line_error(capsys, str(target),
                   '[compute] cpu_dedicated_set is set differently there, '
                   'the plan wants 1-19,21-39,41-59,61-79', 'nothing written')
    assert '2-7' not in capsys.readouterr().err
    assert target.read_text() == '[compute]\ncpu_dedicated_set = 2-7\n'
    assert [p.name for p in out.rglob('*') if p.is_file()] == [
        'nova-compute.conf']


def test_existing_yaml_with_another_value_is_refused(tmp_path, capsys):
    out = tmp_path / 'out'
    assert export(out, target='openstack-ansible') == 0
    host_vars = (out / 'etc/openstack_deploy/host_vars' /
                 f'{consumers.HOST}.yml')
    host_vars.write_text(host_vars.read_text().replace(
        "reserved_host_memory_mb: '4096'", "reserved_host_memory_mb: '512'"))
    before = tree(out)
    capsys.readouterr()
    assert export(out, target='openstack-ansible') == 2
    one_line_error(capsys, 'nova_nova_conf_overrides.DEFAULT.'
                   'reserved_host_memory_mb is set differently there')
    assert tree(out) == before


def test_another_profiles_export_names_a_key_not_the_header(
        tmp_path, capsys):
    # cpu-pinning sets no huge pages: the file pinned-hugepages-ept left
    # differs in a key, which the error names (not its header comment)
    out = tmp_path / 'out'
    assert export(out, target='oslo-dropin') == 0
    before = tree(out)
    capsys.readouterr()
    assert export(out, target='oslo-dropin', profile='cpu-pinning') == 2
    one_line_error(capsys, 'nova-compute.conf.d/50-kvmtune.conf: exists and',
                   'there, and the plan does not set it', 'nothing written')
    assert tree(out) == before


def test_relative_output_directory(tmp_path, capsys, monkeypatch):
    # "--output out" from the current directory (it once looped for ever
    # looking for an existing parent of a relative path)
    import subprocess
    import sys

    monkeypatch.chdir(tmp_path)
    done = subprocess.run(
        [sys.executable, '-m', 'kvmtune.cli', 'export', '--profile',
         consumers.PROFILE, '--target', 'oslo-dropin', '--root',
         consumers.HOST_DIR, '--host', consumers.HOST, '--output', 'out'],
        capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / 'out/etc/nova/nova-compute.conf.d/50-kvmtune.conf'
            ).is_file()


def test_unwritable_output(tmp_path, capsys):
    locked = tmp_path / 'locked'
    locked.mkdir()
    os.chmod(locked, stat.S_IRUSR | stat.S_IXUSR)
    if os.access(locked, os.W_OK):      # root: use a file in the way
        os.chmod(locked, 0o755)
        (locked / 'out').write_text('a file, not a directory\n')
        assert export(locked / 'out') == 2
        one_line_error(capsys, 'not a directory')
    else:
        assert export(locked / 'out') == 2
        one_line_error(capsys, 'permission denied', 'nothing written')
    assert os.listdir(locked) in ([], ['out'])


def test_read_only_tree_in_the_way(tmp_path, capsys):
    out = tmp_path / 'out'
    (out / 'etc').mkdir(parents=True)
    (out / 'etc' / 'kolla').write_text('not a directory\n')
    assert export(out) == 2
    one_line_error(capsys, 'is not a directory', 'nothing written')
    assert sorted(p.name for p in out.rglob('*')) == ['etc', 'kolla']


@pytest.mark.parametrize('found', [
    '[keystone_authtoken]\npassword = Sup3r-s3cret\n',
    '[compute]\ncpu_dedicated_set = Sup3r-s3cret\n',
    'Sup3r-s3cret\n',
])
def test_a_refusal_never_quotes_what_the_file_holds(tmp_path, capsys, found):
    # Before: the error quoted the existing value: a keystone password,
    # an OSA ansible_become_password, a private file a link points to.
    out = tmp_path / 'out'
    target = (out / 'etc/kolla/config/nova' / consumers.HOST /
              'nova-compute.conf')
    target.parent.mkdir(parents=True)
    target.write_text(found)
    assert export(out) == 2
    err = capsys.readouterr().err
    assert err.startswith('kvmtune: error: ') and err.count('\n') == 1
    assert 'Sup3r' not in err and 's3cret' not in err


def test_a_refusal_never_quotes_a_private_file_a_link_points_to(
        tmp_path, capsys):
    private = tmp_path / 'shadow'
    private.write_text('root:Sup3r-s3cret:19000:0:99999:7:::\n')
    out = tmp_path / 'out'
    target = (out / 'etc/kolla/config/nova' / consumers.HOST /
              'nova-compute.conf')
    target.parent.mkdir(parents=True)
    target.symlink_to(private)
    assert export(out) == 2
    err = capsys.readouterr().err
    assert 'Sup3r' not in err and 'root:' not in err
    assert private.read_text().startswith('root:Sup3r')


def test_an_empty_output_is_refused(tmp_path, capsys, monkeypatch):
    # Before: --output "" wrote into the current directory.
    monkeypatch.chdir(tmp_path)
    assert export('') == 2
    one_line_error(capsys, '--output', 'an empty path')
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize('kind', ['dangling', 'loop'])
def test_an_output_link_to_no_directory_is_one_line(
        tmp_path, capsys, kind):
    # Before: an internal error (FileExistsError / ELOOP in makedirs).
    out = tmp_path / 'out'
    if kind == 'dangling':
        out.symlink_to(tmp_path / 'nowhere')
    else:
        out.symlink_to(tmp_path / 'out')
    assert export(out) == 2
    one_line_error(capsys, 'symbolic link to no directory', 'fix:')
    assert sorted(os.listdir(tmp_path)) == ['out']


def test_a_link_inside_output_does_not_carry_files_out(tmp_path, capsys):
    out = tmp_path / 'out'
    (out / 'etc').mkdir(parents=True)
    elsewhere = tmp_path / 'elsewhere'
    elsewhere.mkdir()
    (out / 'etc' / 'kolla').symlink_to(elsewhere)
    assert export(out) == 2
    one_line_error(capsys, 'leads out of it', 'nothing written')
    assert list(elsewhere.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason='mounting a tmpfs needs root')
def test_no_inodes_left_half_way_leaves_nothing(tmp_path, capsys):
    # Before: 3 of 6 files stayed written. A tmpfs mounted by
    # the test with room for a few inodes only.
    import subprocess
    out = tmp_path / 'small'
    out.mkdir()
    subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=1m,nr_inodes=6',
                    'kvmtune-test', str(out)], check=True)
    try:
        assert export(out, target='openstack-ansible') == 2
        one_line_error(capsys, 'No space left on device',
                       'nothing was written', 'fix: free space or inodes')
        # The files this export had made before are gone too.
        assert [p for p in out.rglob('*')] == []
    finally:
        subprocess.run(['umount', str(out)], check=True)


def _previous_export_but_one(tmp_path, capsys):
    """({file: content} of a kolla export but its last file, that file,
    and a ``prepare`` hook copying the export but that file into a
    directory)."""
    before = tmp_path / 'before'
    assert export(before, target='kolla') == 0
    capsys.readouterr()
    old = {os.path.relpath(p, before): v[0]
           for p, v in tree(before).items()}
    gone = sorted(old)[-1]
    del old[gone]

    def prepare(directory):
        shutil.copytree(before, directory, symlinks=True,
                        dirs_exist_ok=True)
        os.remove(directory / gone)

    return old, gone, prepare


@fulldisk.ROOT_ONLY
def test_a_full_disk_keeps_a_previous_export(tmp_path, capsys):
    # A previous export is in place but for one file, which the new run
    # must write and cannot: the others stay as they were, nothing else
    # appears (export never overwrites an override file that differs).
    old, gone, previous = _previous_export_but_one(tmp_path, capsys)

    with fulldisk.full_tmpfs(tmp_path / 'full', prepare=previous) as full:
        assert export(full, target='kolla') == 2
        one_line_error(capsys, 'No space left on device', gone)
        os.remove(full / fulldisk.FILLER)
        now = {os.path.relpath(p, full): v[0]
               for p, v in tree(full).items()}
    assert now == old and old


@fulldisk.ROOT_ONLY
@pytest.mark.parametrize('previous', [True, False],
                         ids=['over-previous', 'new'])
def test_a_read_only_filesystem_keeps_a_previous_export(tmp_path, capsys,
                                                        previous):
    # As on a full disk: a previous export but for one file, or none.
    # The line names the first file the export would make there (the one
    # missing) and the mount, with the fix; never "permission denied"
    # (root is refused too).
    old, gone, prepare = _previous_export_but_one(tmp_path, capsys)
    if not previous:
        old, prepare = {}, None

    with fulldisk.readonly_tmpfs(tmp_path / 'ro', prepare=prepare) as ro:
        assert export(ro, target='kolla') == 2
        err = capsys.readouterr().err
        fulldisk.assert_one_line_readonly(err, ro)
        named = err[len('kvmtune: error: '):].split(': ', 1)[0]
        assert named.startswith(f'{ro}/') and named.endswith('.conf'), err
        if previous:
            assert named == str(ro / gone), err
        now = {os.path.relpath(p, ro): v[0] for p, v in tree(ro).items()}
    assert now == old


@fulldisk.ROOT_ONLY
def test_an_export_already_in_place_on_a_read_only_filesystem_is_unchanged(
        tmp_path, capsys):
    # Nothing to write: a read-only --output is no reason to refuse.
    before = tmp_path / 'before'
    assert export(before, target='kolla') == 0
    capsys.readouterr()
    old = {os.path.relpath(p, before): v[0]
           for p, v in tree(before).items()}

    def prepare(directory):
        shutil.copytree(before, directory, symlinks=True, dirs_exist_ok=True)

    with fulldisk.readonly_tmpfs(tmp_path / 'ro', prepare=prepare) as ro:
        assert export(ro, target='kolla') == 0
        assert capsys.readouterr().err == \
            f'kolla: 0 file(s) written, {len(old)} unchanged\n'
        assert {os.path.relpath(p, ro): v[0]
                for p, v in tree(ro).items()} == old
