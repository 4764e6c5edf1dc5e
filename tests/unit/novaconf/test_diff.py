"""The masked unified diff, against difflib's for files with no secret."""

import difflib

import pytest

from kvmtune.novaconf import diff
from kvmtune.novaconf import inifile


@pytest.mark.parametrize('old, new', [
    ('[DEFAULT]\na = 1\nb = 2\n', '[DEFAULT]\na = 1\nb = 3\nc = 4\n'),
    ('[DEFAULT]\na = 1', '[DEFAULT]\na = 1\nb = 2'),
    ('[x]\n' + ''.join(f'k{i} = {i}\n' for i in range(20)),
     '[x]\n' + ''.join(f'k{i} = {i * (i % 7 != 3)}\n' for i in range(20))),
    ('[x]\na = 1\n', '[x]\na = 1\n'),
])
def test_same_as_difflib_without_secrets(old, new):
    got = diff.unified_diff(inifile.IniFile(old), inifile.IniFile(new),
                            'a/nova.conf', 'b/nova.conf')
    want = ''.join(difflib.unified_diff(
        old.splitlines(True), new.splitlines(True), 'a/nova.conf',
        'b/nova.conf', lineterm='\n'))
    # difflib leaves a line without newline unterminated; GNU diff (and
    # kvmtune) add the "\ No newline at end of file" marker.
    want = want.replace('= 1+', '= 1\n\\ No newline at end of file\n+')
    if want and not want.endswith('\n'):
        want += '\n\\ No newline at end of file\n'
    assert got == want


def test_secrets_masked_changed_or_not():
    old = ('[DEFAULT]\ntransport_url = rabbit://u:pw1@h/\n'
           '[database]\nconnection = mysql://u:pw2@h/nova\n'
           '[key_manager]\nfixed_key = abcd\n'
           '[keystone_authtoken]\npassword = pw3\n  continued-pw4\n'
           'memcache_secret_key = pw5\nadmin_token: pw6\n'
           '[libvirt]\ncpu_mode = custom\n')
    new = old.replace('pw3', 'pw7').replace('custom', 'host-passthrough')
    text = diff.unified_diff(inifile.IniFile(old), inifile.IniFile(new),
                             'nova.conf', 'nova.conf')
    for secret in ('pw1', 'pw2', 'abcd', 'pw3', 'pw4', 'pw5', 'pw6', 'pw7'):
        assert secret not in text
    assert '-password = ***\n+password = ***\n     ***\n' in text
    assert '-cpu_mode = custom\n+cpu_mode = host-passthrough\n' in text


@pytest.mark.parametrize('name, secret', [
    ('password', True), ('admin_password', True), ('transport_url', True),
    ('connection', True), ('slave_connection', True), ('token', True),
    ('memcache_secret_key', True), ('fixed_key', True), ('key', True),
    ('cpu_shared_set', False), ('reserved_huge_pages', False),
    ('keymap', False), ('enabled_filters', False),
])
def test_secret_names(name, secret):
    assert diff.is_secret(name) is secret
