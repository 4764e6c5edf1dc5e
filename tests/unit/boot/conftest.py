"""Host trees for the boot tests: a real capture with a distribution's
boot files over it (tests/hosttrees.py)."""

import pytest

from tests import hosttrees


@pytest.fixture
def tree(tmp_path):
    """tree('debian-12') -> a writable host tree (pathlib.Path)."""
    def make(distro, capture=None):
        return hosttrees.make(tmp_path / distro, distro, capture)
    return make
