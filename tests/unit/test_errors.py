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
    # Bench local's --vms/--runtime/--ready-timeout/--compare,
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


# -- mask_secrets (linear time, the same shapes) -------------------------

# The shapes as regular expressions, as kvmtune.errors applied them before
# mask_secrets was linear (their lookaheads rescanned a run of word
# characters from each of its positions): the specification it keeps.
REFERENCE = (
    (r'([A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:)[^\s@]+(?=@)', r'\1***'),
    (r'(?i)(?<![\w/.-])([\w.-]*(?:password|passwd|pwd|secret|'
     r'token|api[_-]?key|access[_-]?key|private[_-]?key|'
     r'credential)[\w.-]*(?:\s*=\s*|:(?=\S)))'
     r'("[^"]*"|\'[^\']*\'|[^\s,;&]+)', r'\1***'),
    (r'\$(?:1|2[abxy]?|5|6|7|y|gy|md5|sha1)\$[^\s:]+', '***'),
    (r'(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}', r'\1 ***'),
    (r'(?<![\w/.-])(?=[\w+=-]*\d)(?=[\w+=-]*[a-z])'
     r'(?=[\w+=-]*[A-Z])[A-Za-z0-9+_=-]{32,}', '***'),
    (r'(?<![\w/.-])[0-9a-fA-F]{32,}(?![\w/.-])', '***'),
)


def reference(text):
    import re

    for pattern, replacement in REFERENCE:
        text = re.sub(pattern, replacement, text)
    return text


TOKEN = 'gAAAAABpw1xyzQm1kT2N0b2tlbl9mb3JfdGVzdGluZ19vbmx5'
HEX = '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08'


@pytest.mark.parametrize('text, secret', [
    ('transport_url = rabbit://nova:pw1xyz@ctl:5672/', 'pw1xyz'),
    ('connection = mysql+pymysql://nova:pw1xyz@db/nova', 'pw1xyz'),
    ('url:redis://:pw1xyz@10.0.0.5:6379', 'pw1xyz'),
    ('backend_argument = password:pw1xyz', 'pw1xyz'),
    ('my_note = token=pw1xyz', 'pw1xyz'),
    ('API-Key = "pw1 xyz"', 'pw1 xyz'),
    ("access_key:'pw1xyz'", 'pw1xyz'),
    ('?x=1&Private_Key=pw1xyz&y=2', 'pw1xyz'),
    ('OS_CREDENTIAL=pw1xyz', 'pw1xyz'),
    ('root:$6$pw1xyz$AbCdEfGhIjKlMnOp:19000:0', 'pw1xyz'),
    ('Authorization: Bearer pw1xyzpw1xyz', 'pw1xyzpw1xyz'),
    ('Basic dXNlcjpwdzF4eXo=', 'dXNlcjpwdzF4eXo='),
    (f'stamp = {TOKEN}', TOKEN),
    (f'digest {HEX}, sha256', HEX),
    # re.IGNORECASE's folds beyond ASCII: KELVIN SIGN, long s, dotless i
    ('api_\u212aey=pw1xyz', 'pw1xyz'),
    ('pa\u017f\u017fword=pw1xyz', 'pw1xyz'),
    ('credent\u0131al=pw1xyz', 'pw1xyz'),
])
def test_every_secret_shape_is_masked(text, secret):
    masked = errors.mask_secrets(text)
    assert secret not in masked and errors.MASK in masked
    assert masked == reference(text)


@pytest.mark.parametrize('text', [
    '/var/lib/nova/instances', '6f1e2d3c-1111-2222-3333-444455556666',
    'cpu_dedicated_set = 2-7,10-15', 'token', 'password =', 'g' * 5000,
    'http://host/path:x', '/etc/password=x', 'x' * 29 + 'A1',
    'access_key: x', f'{HEX}.',
    'keymap = en-us', 'basically fine',
])
def test_what_is_no_secret_stays(text):
    assert errors.mask_secrets(text) == text == reference(text)


def test_the_same_as_the_patterns_on_random_text():
    # text made of the pieces the shapes are made of, and characters that
    # fold or count as word characters beyond ASCII
    import random

    pieces = ['password', 'PassWord', 'token', 'api_key', 'api-key',
              'apikey', 'secret', 'pwd', 'credential', 'access_key',
              'private-key', '=', ' = ', ':', '://', '@', '/', '.', '-',
              '_', '+', ' ', '\n', '\t', '"', "'", ',', ';', '&', '$',
              '$6$', '$2b$', 'bearer ', 'Basic ', 'mysql+pymysql', 'u',
              'A', 'z', '0', '\u00e9', '\u0661', '\u212a', '\u017f',
              '\u0130', 'DEADBEEF0123', 'abcdef0123456789' * 2, 'aB3' * 11,
              '+a1B' * 9, 'a' * 33]
    rng = random.Random(40)
    for _ in range(4000):
        text = ''.join(rng.choice(pieces)
                       for _ in range(rng.randint(1, 30)))
        assert errors.mask_secrets(text) == reference(text), text
