"""kvmtune.fileio.mounts through the one writer: a filesystem mounted
read-only is named with its mount and the fix, by every way of writing."""

import pytest

from kvmtune.errors import InputError
from kvmtune import fileio
from kvmtune.fileio import mounts
from tests.unit import fulldisk


@fulldisk.ROOT_ONLY
@pytest.mark.parametrize('old', [{'nova.conf': b'[DEFAULT]\n'}, {}],
                         ids=['over-old', 'new'])
@pytest.mark.parametrize('how', ['write_atomic', 'check_writable',
                                 'write_atomic with a backup'])
def test_a_read_only_filesystem_is_named_with_its_mount_and_fix(
        tmp_path, old, how):
    """Every writer goes through here: on a read-only filesystem (which
    refuses root too) the line says so, names the file and the mount and
    how to remount it, never "permission denied" or "run as root"."""
    with fulldisk.readonly_tmpfs(tmp_path / 'ro', old) as ro:
        target = str(ro / 'nova.conf')
        with pytest.raises(InputError) as caught:
            if how == 'check_writable':
                fileio.check_writable(target)
            elif how == 'write_atomic' or not old:
                fileio.write_atomic(target, '[DEFAULT]\nnew = 1\n')
            else:
                fileio.write_atomic(target, '[DEFAULT]\nnew = 1\n',
                                    backup=target + '.bak')
        line = f'kvmtune: error: {caught.value.line()}\n'
        fulldisk.assert_one_line_readonly(line, ro)
        assert line.startswith(f'kvmtune: error: {target}: is on a '
                               'read-only filesystem'), line
        assert 'run as root' not in line, line
        fulldisk.assert_left_as_it_was(ro, old, filler=False)
    assert mounts.read_only_error(target) is None   # unmounted: tmp_path
