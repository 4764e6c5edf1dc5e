"""tests/trees.py: a named tree must be the pinned one, on real git trees.

Each case makes a real git repository and asks what a test that needs the
tree would do: use it, skip with the allow-listed reason (checked against
tests/skip-allowlist.yaml itself), or fail naming the problem.
"""

import os
import re
import subprocess

import pytest

from tests import paths
from tests import strict
from tests import trees

ENV = dict(os.environ, GIT_AUTHOR_NAME='t', GIT_AUTHOR_EMAIL='t@example.org',
           GIT_COMMITTER_NAME='t', GIT_COMMITTER_EMAIL='t@example.org')


def git(path, *argv):
    done = subprocess.run(['git', '-C', str(path), *argv], env=ENV,
                          capture_output=True, text=True, check=True,
                          timeout=60)
    return done.stdout.strip()


def checkout(path, probe='nova/Chart.yaml', commits=1):
    """A git repository at path with the probe file; its commit ids."""
    path.mkdir(parents=True)
    git(path, 'init', '-q')
    (path / probe).parent.mkdir(parents=True, exist_ok=True)
    ids = []
    for number in range(commits):
        (path / probe).write_text(f'version: {number}\n')
        git(path, 'add', probe)
        git(path, 'commit', '-q', '-m', f'commit {number}')
        ids.append(git(path, 'rev-parse', 'HEAD'))
    return ids


def tree(pinned, default=None):
    return trees.PinnedTree(
        project='openstack-helm', variable='KVMTUNE_OSH_DIR', pinned=pinned,
        probe='nova/Chart.yaml', default=default,
        absent='no openstack-helm checkout at {path}: set KVMTUNE_OSH_DIR '
               'to one at commit {pinned}')


def test_the_pinned_checkout_is_used(tmp_path):
    head, = checkout(tmp_path / 'osh')
    env = {'KVMTUNE_OSH_DIR': str(tmp_path / 'osh')}
    assert tree(head).require(env) == str(tmp_path / 'osh')


def test_another_commit_fails_naming_both(tmp_path):
    first, second = checkout(tmp_path / 'osh', commits=2)
    env = {'KVMTUNE_OSH_DIR': str(tmp_path / 'osh')}
    with pytest.raises(pytest.fail.Exception,
                       match=f'KVMTUNE_OSH_DIR={tmp_path}/osh: .* is at '
                             f'commit {second}, not {first}; check out '
                             f'openstack-helm at commit {first} there$'):
        tree(first).require(env)


def test_a_named_missing_tree_fails(tmp_path):
    env = {'KVMTUNE_OSH_DIR': str(tmp_path / 'nowhere')}
    with pytest.raises(pytest.fail.Exception,
                       match='KVMTUNE_OSH_DIR=.*/nowhere: .*/nowhere is not '
                             'a directory'):
        tree('0' * 40).require(env)


def test_a_tree_without_what_the_tests_read_fails(tmp_path):
    checkout(tmp_path / 'osh', probe='README.rst')
    env = {'KVMTUNE_OSH_DIR': str(tmp_path / 'osh')}
    with pytest.raises(pytest.fail.Exception,
                       match='has no nova/Chart.yaml: not a openstack-helm '
                             'tree'):
        tree('0' * 40).require(env)


def test_a_copy_without_git_cannot_be_checked_and_fails(tmp_path,
                                                        monkeypatch):
    (tmp_path / 'osh' / 'nova').mkdir(parents=True)
    (tmp_path / 'osh' / 'nova' / 'Chart.yaml').write_text('version: 0\n')
    # git looks no higher than tmp_path for a repository
    monkeypatch.setenv('GIT_CEILING_DIRECTORIES', str(tmp_path))
    env = {'KVMTUNE_OSH_DIR': str(tmp_path / 'osh')}
    with pytest.raises(pytest.fail.Exception,
                       match='is not a git checkout, so its commit cannot '
                             'be checked'):
        tree('0' * 40).require(env)


def test_a_subdirectory_of_another_checkout_fails(tmp_path):
    head, = checkout(tmp_path / 'outer', probe='osh/nova/Chart.yaml')
    env = {'KVMTUNE_OSH_DIR': str(tmp_path / 'outer' / 'osh')}
    with pytest.raises(pytest.fail.Exception,
                       match='is inside a git checkout, not one itself'):
        tree(head).require(env)


def test_the_default_place_is_checked_too(tmp_path):
    first, second = checkout(tmp_path / 'osh', commits=2)
    with pytest.raises(pytest.fail.Exception,
                       match=f'{tmp_path}/osh \\(KVMTUNE_OSH_DIR unset\\): '
                             f'.* is at commit {second}, not {first}; .*, '
                             'or set KVMTUNE_OSH_DIR to such a checkout$'):
        tree(first, default=str(tmp_path / 'osh')).require({})


def test_no_tree_given_skips(tmp_path):
    absent = str(tmp_path / 'absent')
    with pytest.raises(pytest.skip.Exception,
                       match=f'^no openstack-helm checkout at {absent}: set '
                             f'KVMTUNE_OSH_DIR to one at commit {"0" * 40}$'):
        tree('0' * 40, default=absent).require({'KVMTUNE_OSH_DIR': ''})


@pytest.mark.parametrize('pinned', [trees.OSH, trees.DEVSTACK],
                         ids=lambda t: t.project)
def test_the_skip_of_no_tree_is_allow_listed(pinned):
    """What a CI without the tree prints is on the allow-list; any other
    reason (a named tree) fails strict mode."""
    reason = pinned.absent_reason()
    allowlist = strict.load_allowlist(
        os.path.join(paths.REPO, 'tests', 'skip-allowlist.yaml'))
    assert [e for e in allowlist if e.matches(reason)], reason
    elsewhere = pinned.absent.format(path='/srv/elsewhere',
                                     pinned=pinned.pinned)
    if elsewhere != reason:
        assert not [e for e in allowlist if e.matches(elsewhere)]


def test_devstack_pin_is_the_one_its_readme_names():
    with open(os.path.join(paths.REPO, 'devstack', 'README.rst')) as f:
        text = f.read()
    named = set(re.findall(r'\b[0-9a-f]{40}\b', text))
    assert named == {trees.DEVSTACK.pinned}


def test_the_testing_guide_clones_each_tree_at_its_pin():
    """The clone commands an operator's CI runs, as the contributor guide
    shows them (they moved there from README.md)."""
    with open(os.path.join(paths.REPO, 'doc', 'source', 'contributor',
                           'testing.md')) as f:
        text = f.read()
    for pinned in (trees.OSH, trees.DEVSTACK):
        assert f'checkout {pinned.pinned}' in text, pinned.project
