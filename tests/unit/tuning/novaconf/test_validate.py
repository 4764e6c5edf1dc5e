"""Where kvmtune looks for Nova, with this machine's real Pythons."""

import os
import sys

import pytest

from kvmtune.errors import InputError
from kvmtune.tuning.novaconf import validate
from tests import paths


def test_precedence_of_the_nova_python(monkeypatch):
    monkeypatch.setenv(validate.ENV_PYTHON, '/env/python')
    assert validate.configured_python('/cli/python', '/conf/python') == \
        '/cli/python'
    assert validate.configured_python(None, '/conf/python') == '/env/python'
    monkeypatch.delenv(validate.ENV_PYTHON)
    assert validate.configured_python(None, '/conf/python') == \
        '/conf/python'
    assert validate.configured_python(None, '') is None


def test_checker_under_a_python_without_nova():
    # The checker runs with the standard library alone and says "no Nova".
    answer = validate.run_checker(sys.executable, {'compute': {'x': '1'}})
    if answer['nova'] is not None:
        pytest.skip('this Python has Nova')
    assert answer == {'nova': None, 'problems': [], 'notices': [],
                      'secrets': []}


def test_configured_python_without_nova_is_an_error():
    if validate.run_checker(sys.executable, {})['nova'] is not None:
        pytest.skip('this Python has Nova')
    with pytest.raises(InputError, match='cannot import nova'):
        validate.check_with_nova({}, python=sys.executable)


def test_library_honours_the_environment(monkeypatch):
    # The DevStack plugin calls kvmtune.tuning.novaconf.update.apply
    # without a python.
    monkeypatch.setenv(validate.ENV_PYTHON, '/bin/false')
    with pytest.raises(InputError, match='exit status 1') as info:
        validate.check_with_nova({})
    assert info.value.source == '/bin/false'


@pytest.mark.parametrize('python, words', [
    ('/no/such/python', 'cannot run it'),
    ('/bin/false', 'exit status 1, no output'),
    ('/bin/echo', 'answered no usable JSON'),
])
def test_broken_python(python, words):
    with pytest.raises(InputError, match=words) as info:
        validate.check_with_nova({}, python=python)
    assert info.value.source == python


def test_nothing_found_is_one_notice(monkeypatch):
    monkeypatch.delenv(validate.ENV_PYTHON, raising=False)
    pythons = [sys.executable]
    if os.path.exists(validate.SYSTEM_PYTHON):
        pythons.append(validate.SYSTEM_PYTHON)
    if any(validate.run_checker(p, {})['nova'] for p in pythons):
        pytest.skip('a Python kvmtune tries has Nova')
    assert validate.check_with_nova({'compute': {'x': '1'}}) == {
        'nova': None, 'problems': [], 'notices': [validate.NO_NOVA],
        'via': None}


NOVA_PYTHON = paths.NOVA_PYTHON


@pytest.mark.skipif(not os.access(NOVA_PYTHON, os.X_OK),
                    reason='the test cloud venv (tools/bootstrap) has Nova')
def test_nova_names_its_secret_options():
    """Nova's own secret=True flags, not a list of names kvmtune keeps:
    [cache] backend_argument carries a Redis password and has no secret
    word in its name."""
    answer = validate.run_checker(NOVA_PYTHON, {})
    secrets = {tuple(pair) for pair in answer['secrets']}
    assert ('cache', 'backend_argument') in secrets
    assert ('vault', 'approle_role_id') in secrets
    assert ('database', 'connection') in secrets
    assert ('libvirt', 'cpu_mode') not in secrets


@pytest.mark.parametrize('stdout', ['[1, 2]', '{"nova": null}',
                                    '{"nova": NaN, "problems": []}'])
def test_checker_answer_of_the_wrong_shape(tmp_path, stdout):
    fake = tmp_path / 'python'
    fake.write_text(f"#!/bin/sh\ncat >/dev/null\necho '{stdout}'\n")
    fake.chmod(0o755)
    with pytest.raises(InputError,
                       match='the Nova option check answered ') as info:
        validate.run_checker(str(fake), {})
    assert info.value.source == str(fake)
    assert '\n' not in str(info.value)
