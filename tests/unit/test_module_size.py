"""The house (issue 23): no module of the installed package over 400 lines.

A module that grows past it is split by what its parts do (doc/design.md
9.1), not cut in halves. The package is read where Python imports it
from, so the Rally plugins (kvmtune/rally/) and everything else installed
with kvmtune count; the checkout's tests and tools do not.
"""

import os

import kvmtune

MAX_LINES = 400


def too_long(root, limit=MAX_LINES):
    """[(path relative to root, lines)] of the .py files under ``root``
    over ``limit`` lines (as wc -l counts), sorted by path."""
    found = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != '__pycache__')
        for name in sorted(files):
            if not name.endswith('.py'):
                continue
            path = os.path.join(directory, name)
            with open(path, 'rb') as f:
                lines = f.read().count(b'\n')
            if lines > limit:
                found.append((os.path.relpath(path, root), lines))
    return found


def test_no_module_of_the_package_is_over_400_lines():
    root = os.path.dirname(os.path.abspath(kvmtune.__file__))
    found = too_long(root)
    assert not found, 'over %d lines: %s' % (MAX_LINES, ', '.join(
        f'kvmtune/{path} ({lines})' for path, lines in found))


def test_a_module_over_the_limit_is_named_with_its_count(tmp_path):
    (tmp_path / 'sub').mkdir()
    (tmp_path / 'sub' / 'long.py').write_text('x = 1\n' * 401)
    (tmp_path / 'limit.py').write_text('x = 1\n' * 400)
    (tmp_path / 'notes.txt').write_text('x\n' * 1000)
    (tmp_path / '__pycache__').mkdir()
    (tmp_path / '__pycache__' / 'stale.py').write_text('x = 1\n' * 1000)
    assert too_long(str(tmp_path)) == [(os.path.join('sub', 'long.py'),
                                        401)]
