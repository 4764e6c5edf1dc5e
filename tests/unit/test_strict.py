"""The strict mode of tests/strict.py, run in pytester's own sessions."""


import pytest

from tests import paths
from tests import strict

pytest_plugins = ['pytester']

CONFTEST = '''
from tests import strict


def pytest_configure(config):
    strict.configure(config, str(config.rootpath / 'allow.yaml'))
'''
ALLOW = '''
- reason: 'no frobnicator at /opt/frob'
  why: the frobnicator is in no package registry
'''
TESTS = '''
import pytest


def test_listed():
    pytest.skip('no frobnicator at /opt/frob')


@pytest.mark.skipif(True, reason='no Nova at /opt/venv')
def test_unlisted():
    pass


@pytest.mark.xfail(reason='a known bug')
def test_expected_failure():
    assert False


def test_passes():
    pass
'''


@pytest.fixture
def session(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makefile('.yaml', allow=ALLOW)
    pytester.makepyfile(test_parts=TESTS)
    return pytester


def test_ci_true_fails_an_unlisted_skip_and_keeps_a_listed_one(
        session, monkeypatch):
    monkeypatch.setenv('CI', 'true')
    result = session.runpytest('-rs')
    # the skipif fires at setup, so its failure is an error of setup
    result.assert_outcomes(passed=1, skipped=1, xfailed=1, errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        'strict mode (CI=true): skipped: no Nova at /opt/venv',
        'That reason is not on allow.yaml: *',
        '*= allow-listed skips (CI=true): 1 =*',
        '1 skipped: no frobnicator at /opt/frob',
        '    why CI allows it: the frobnicator is in no package registry',
        '    test_parts.py::test_listed',
    ])


def test_a_skip_inside_the_test_fails_too(pytester, monkeypatch):
    pytester.makeconftest(CONFTEST)
    pytester.makefile('.yaml', allow=ALLOW)
    pytester.makepyfile('''
        import pytest

        def test_late():
            pytest.skip('the cloud is not up')
    ''')
    monkeypatch.setenv('CI', 'true')
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ['strict mode (CI=true): skipped: the cloud is not up'])


def test_without_ci_a_skip_stays_a_skip(session, monkeypatch):
    monkeypatch.delenv('CI', raising=False)
    result = session.runpytest()
    result.assert_outcomes(passed=1, skipped=2, xfailed=1)
    assert result.ret == pytest.ExitCode.OK
    assert 'allow-listed skips' not in result.stdout.str()


@pytest.mark.parametrize('value', ['false', '0', ''])
def test_ci_other_than_true_is_not_strict(session, monkeypatch, value):
    monkeypatch.setenv('CI', value)
    result = session.runpytest()
    result.assert_outcomes(passed=1, skipped=2, xfailed=1)


def test_a_module_skipped_at_import_fails_under_ci(pytester, monkeypatch):
    pytester.makeconftest(CONFTEST)
    pytester.makefile('.yaml', allow=ALLOW)
    pytester.makepyfile(test_module='''
        import pytest

        pytest.importorskip('no_such_module_kvmtune')

        def test_never_collected():
            pass
    ''')
    monkeypatch.setenv('CI', 'true')
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([
        "*could not import 'no_such_module_kvmtune'*",
        '*1 error*'])


def test_a_listed_module_skip_passes_under_ci(pytester, monkeypatch):
    pytester.makeconftest(CONFTEST)
    pytester.makefile('.yaml', allow=ALLOW)
    pytester.makepyfile(test_module='''
        import pytest

        pytest.skip('no frobnicator at /opt/frob', allow_module_level=True)
    ''')
    monkeypatch.setenv('CI', 'true')
    result = pytester.runpytest()
    result.assert_outcomes(skipped=1)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(['1 skipped: no frobnicator at /opt/frob'])


def test_the_reason_must_match_whole():
    entry = strict.Entry('no frobnicator', 'why')
    assert entry.matches('no frobnicator')
    assert not entry.matches('no frobnicator at /somewhere/else')


@pytest.mark.parametrize('text, words', [
    ('reason: x\nwhy: y\n', 'not a list of entries'),
    ("- reason: 'x'\n", 'exactly the keys reason and why'),
    ("- reason: 'x'\n  why: y\n  extra: z\n",
     'exactly the keys reason and why'),
    ("- reason: ''\n  why: y\n", 'reason is not a non-empty string'),
    ("- reason: '('\n  why: y\n", 'reason is not a regular expression'),
    ("- reason: 'x'\n  why: '  '\n", 'why is empty'),
    ('- [unclosed\n', 'skip allow-list'),
])
def test_a_bad_allowlist_is_a_usage_error(tmp_path, text, words):
    path = tmp_path / 'allow.yaml'
    path.write_text(text)
    with pytest.raises(pytest.UsageError, match=words):
        strict.load_allowlist(str(path))


def test_a_missing_allowlist_is_a_usage_error(tmp_path):
    with pytest.raises(pytest.UsageError, match='No such file'):
        strict.load_allowlist(str(tmp_path / 'absent.yaml'))


def test_the_repository_allowlist_is_short_and_says_why():
    entries = strict.load_allowlist(
        f'{paths.REPO}/tests/skip-allowlist.yaml')
    assert 0 < len(entries) <= 10
    for entry in entries:
        assert len(entry.why) > 40, entry


@pytest.mark.parametrize('environ, strict_wanted', [
    ({'CI': 'true'}, True), ({'CI': 'TRUE'}, True), ({'CI': '1'}, True),
    ({'CI': 'false'}, False), ({}, False),
])
def test_strict_mode_reads_ci(environ, strict_wanted):
    assert strict.strict_mode(environ) is strict_wanted
