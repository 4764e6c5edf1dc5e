"""Device nodes for tests of hostile output paths.

A test that hands the machine's own /dev/null to a writer destroys it when
the writer regresses (`--config /dev/null` once replaced it with a
regular file; a run of these tests against the old code did just that).
Tests make their own node instead: same driver (null 1:3, zero 1:5), in
the test's directory, so a regression replaces only that node.
"""

import os
import stat

import pytest

NULL = (1, 3)
ZERO = (1, 5)


def char_device(directory, name='null', numbers=NULL):
    """A character device node ``directory/name``; the test is skipped
    where mknod is not allowed (no CAP_MKNOD)."""
    path = os.path.join(str(directory), name)
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(*numbers))
    except PermissionError:
        pytest.skip('mknod needs CAP_MKNOD (root in the initial user '
                    'namespace)')
    return path
