"""The one error contract (kvmtune/errors.py): refusals that fix."""

import ast
import os

import pytest

from kvmtune import errors
from tests import paths

PACKAGE = os.path.join(paths.REPO, 'kvmtune')


def _refusals():
    """(file:line) of every InputError raised in the package without a
    fix (a keyword, or the fourth positional argument)."""
    for directory, _, files in os.walk(PACKAGE):
        for name in sorted(files):
            if not name.endswith('.py'):
                continue
            path = os.path.join(directory, name)
            with open(path) as handle:
                tree = ast.parse(handle.read(), path)
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                called = getattr(func, 'id', getattr(func, 'attr', None))
                if called != 'InputError':
                    continue
                has_fix = any(k.arg == 'fix' for k in node.keywords) or \
                    len(node.args) >= 4
                yield os.path.relpath(path, paths.REPO), node.lineno, \
                    has_fix


def test_the_walk_finds_refusals():
    found = list(_refusals())
    assert len(found) > 100
    assert any(path == 'kvmtune/tuning/profiles.py' for path, _, _ in found)


def test_every_input_refusal_carries_a_fix():
    # Issue 26: bench local's --vms/--runtime/--ready-timeout/--compare,
    # main-job's --compute-facts and the profile refusals said what was
    # wrong and not what to do. A new refusal without a fix fails here.
    missing = [f'{path}:{line}' for path, line, has_fix in _refusals()
               if not has_fix]
    assert missing == []


def test_a_refusal_reads_as_one_line_with_its_fix():
    err = errors.InputError('must be positive', source='cmd',
                            key='--runtime', fix='give --runtime 10')
    assert err.line() == ('cmd: --runtime: must be positive '
                          '(fix: give --runtime 10)')


@pytest.mark.parametrize('argv, words', [
    (['bench', 'local', '--workload', 'fio-randread-4k', '--vms', '0'],
     ['--vms/--vcpus/--ram', 'fix: e.g. --vms 2']),
    (['bench', 'local', '--workload', 'fio-randread-4k', '--vms', '1',
      '--param', 'runtime=abc'], ['runtime: not a whole number', 'fix:']),
    (['bench', 'local', '--workload', 'fio-randread-4k', '--vms', '1',
      '--ready-timeout', '-3'], ['--ready-timeout', 'fix:']),
    (['baseline', '--workload', 'fio-randread-4k', '--runtime', '0',
      '--output', 'x.json'], ['--runtime: must be positive', 'fix:']),
])
def test_cli_refusals_name_their_fix(argv, words, capsys, tmp_path,
                                     monkeypatch):
    from kvmtune import cli
    monkeypatch.chdir(tmp_path)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and 'internal error' not in err, err
    for word in words:
        assert word in err, err
    assert os.listdir(tmp_path) == []
