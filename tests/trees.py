"""Source trees no package registry has, pinned to one commit.

Two test modules need a checkout of a project that is in no package
registry and is not copied into this repository: openstack-helm's nova
chart (tests/unit/tuning/export/test_helm.py) and DevStack's scripts
(tests/functional/test_devstack_real.py). Each is pinned to one commit,
named where the reader looks for it (devstack/README.rst, the helm test's
docstring), and an operator's CI provides the tree through a variable
(doc/source/contributor/testing.md, the contributor guide's "Running
the tests").

The variable is the operator's word that the tree is there: when it names
a tree that is missing, is no git checkout, lacks what the tests read, or
is at another commit than the pinned one, the test fails saying which.
Only when no tree is given at all (the variable unset and no checkout at
the default place) does the test skip, with the reason
tests/skip-allowlist.yaml lists for strict mode (tests/strict.py).
"""

import dataclasses
import os
import subprocess

import pytest


@dataclasses.dataclass(frozen=True)
class PinnedTree:
    """A checkout the tests read, given by ``variable``.

    ``default``: where the tree is looked for when the variable is unset
    (None: nowhere). ``probe``: a file, relative to the tree, the tests
    read (a tree without it is not the project's). ``absent``: the skip
    reason when no tree is given, formatted with ``path`` (the default)
    and ``pinned``; it must match an entry of the allow-list.
    """

    project: str
    variable: str
    pinned: str
    probe: str
    absent: str
    default: str = None

    def given(self, environ=None):
        """(path, named): the tree the variable names (named True), else
        the default when it exists (named False), else (None, False)."""
        environ = os.environ if environ is None else environ
        value = environ.get(self.variable, '')
        if value:
            return value, True
        if self.default and os.path.lexists(self.default):
            return self.default, False
        return None, False

    def problem(self, path):
        """Why the tree at ``path`` is not the pinned one, or None."""
        if not os.path.isdir(path):
            return f'{path} is not a directory'
        if not os.path.isfile(os.path.join(path, self.probe)):
            return f'{path} has no {self.probe}: not a {self.project} tree'
        # -c safe.directory: the tree may belong to another user (git
        # refuses such a repository otherwise; a command-line setting is
        # honoured, git-config(1), "safe.directory")
        done = subprocess.run(
            ['git', '-c', f'safe.directory={os.path.abspath(path)}', '-C',
             path, 'rev-parse', '--verify', '--quiet', 'HEAD^{commit}'],
            capture_output=True, text=True, timeout=60)
        head = done.stdout.strip()
        if done.returncode != 0 or not head:
            return (f'{path} is not a git checkout, so its commit cannot be '
                    f'checked ({done.stderr.strip()[-200:] or "no HEAD"})')
        if os.path.realpath(self._toplevel(path)) != os.path.realpath(path):
            return f'{path} is inside a git checkout, not one itself'
        if head != self.pinned:
            return f'{path} is at commit {head}, not {self.pinned}'
        return None

    def _toplevel(self, path):
        done = subprocess.run(
            ['git', '-c', f'safe.directory={os.path.abspath(path)}', '-C',
             path, 'rev-parse', '--show-toplevel'],
            capture_output=True, text=True, timeout=60)
        return done.stdout.strip() or path

    def absent_reason(self):
        return self.absent.format(path=self.default, pinned=self.pinned)

    def skip_if_absent(self, environ=None):
        """A skipif mark for when no tree is given, evaluated before any
        fixture (a test module's costly set-up); ``require`` still checks
        a tree that is given."""
        return pytest.mark.skipif(self.given(environ)[0] is None,
                                  reason=self.absent_reason())

    def require(self, environ=None):
        """The path of the pinned tree. Skips (the allow-listed reason)
        when none is given; fails when the given one is not the pinned
        tree, naming the variable, the problem and the fix."""
        path, named = self.given(environ)
        if path is None:
            pytest.skip(self.absent_reason())
        problem = self.problem(path)
        if problem is not None:
            source = (f'{self.variable}={path}' if named else
                      f'{path} ({self.variable} unset)')
            pytest.fail(f'{source}: {problem}; check out {self.project} at '
                        f'commit {self.pinned} there'
                        + ('' if named else
                           f', or set {self.variable} to such a checkout'),
                        pytrace=False)
        return path


# openstack-helm's nova chart and helm-toolkit, rendered by helm in
# tests/unit/tuning/export/test_helm.py (2026-08-20)
OSH = PinnedTree(
    project='openstack-helm', variable='KVMTUNE_OSH_DIR',
    pinned='0ee5adeffcaefb6f7a78bb23bf845414672e6827',
    probe=os.path.join('nova', 'Chart.yaml'), default='/opt/openstack-helm',
    absent='no openstack-helm checkout at {path}: set KVMTUNE_OSH_DIR to '
           'one at commit {pinned}')

# DevStack's scripts, run by tests/functional/test_devstack_real.py; the
# commit devstack/README.rst names ("Testing"; tests/unit/test_trees.py
# checks they agree)
DEVSTACK = PinnedTree(
    project='DevStack', variable='KVMTUNE_DEVSTACK_DIR',
    pinned='493835a61a996731a7031861f80c7629acd5d6f2', probe='stack.sh',
    absent='KVMTUNE_DEVSTACK_DIR is not set: give a DevStack checkout at '
           'commit {pinned} (see devstack/README.rst)')
