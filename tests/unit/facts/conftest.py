"""Fixtures of the facts tests: a writable copy of this machine's capture
(tests/fixtures/hosts/pvm-guest-2cpu, a PVM guest)."""

import os
import shutil

import pytest

from tests import paths

PVM = os.path.join(paths.HOSTS, 'pvm-guest-2cpu')


@pytest.fixture
def pvm_tree(tmp_path):
    root = tmp_path / 'pvm'
    shutil.copytree(PVM, root)
    return root


def write(root, path, text):
    """Write ``text`` to ``path`` under the tree ``root``, making its
    folders."""
    full = root / path
    full.parent.mkdir(parents=True, exist_ok=True)
    full.write_text(text)
