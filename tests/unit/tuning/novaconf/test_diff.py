"""The masked unified diff, against difflib's for files with no secret."""

import difflib

import pytest

from kvmtune.tuning.novaconf import diff
from kvmtune.tuning.novaconf import inifile


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


def _diff(old, new, secrets=None):
    return diff.unified_diff(inifile.IniFile(old), inifile.IniFile(new),
                             'nova.conf', 'nova.conf', secrets=secrets)


def test_redis_password_in_backend_argument_is_masked_by_shape():
    """No secret word in the option's name: the value's shape gives it
    away (oslo.cache's backend_argument = url:redis://:pw@host)."""
    old = ('[cache]\nbackend = dogpile.cache.redis\n'
           'backend_argument = url:redis://:s3cr3t-Redis@10.0.0.5:6379\n'
           'backend_argument = password:hunter2\n'
           '[compute]\ncpu_shared_set = 0-1\n')
    text = _diff(old, old.replace('0-1', '0-3'))
    assert 's3cr3t-Redis' not in text and 'hunter2' not in text
    assert 'cpu_shared_set = 0-3' in text


def test_nova_secret_options_are_masked_whatever_their_value():
    """An option only Nova's secret=True flags (no secret word in its name,
    no credential shape in its value) is masked when Nova names it."""
    old = ('[vault]\nplain_option = plainword\n'
           '[compute]\ncpu_shared_set = 0-1\n')
    new = old.replace('0-1', '0-3')
    assert 'plainword' in _diff(old, new)           # nothing says secret
    text = _diff(old, new, secrets={('vault', 'plain_option')})
    assert 'plainword' not in text
    assert 'plain_option = ***' in text
    # Section names fold as oslo.config folds them.
    text = _diff(old.replace('[vault]', '[VAULT]'),
                 new.replace('[vault]', '[VAULT]'),
                 secrets={('vault', 'plain_option')})
    assert 'plainword' not in text


@pytest.mark.parametrize('line', [
    '#transport_url = rabbit://nova:pw1xyz@ctl:5672/',
    '# admin_password = pw1xyz',
    '; connection = mysql+pymysql://nova:pw1xyz@db/nova',
    'my_note = token=pw1xyz',
    'auth_hint = root:$6$pw1xyz$AbCdEfGhIjKlMnOp:19000:0',
    'stamp = gAAAAABpw1xyzQm1kT2N0b2tlbl9mb3JfdGVzdGluZ19vbmx5',
])
def test_secrets_in_comments_and_odd_places_are_masked(line):
    old = f'[DEFAULT]\n{line}\ndebug = false\n'
    text = _diff(old, old.replace('false', 'true'))
    assert 'pw1xyz' not in text
    assert '+debug = true' in text


def test_uuids_paths_and_cpu_lists_stay_readable():
    old = ('[DEFAULT]\ninstances_path = /var/lib/nova/instances\n'
           'host = 6f1e2d3c-1111-2222-3333-444455556666\ndebug = false\n'
           '[compute]\ncpu_dedicated_set = 2-7,10-15\n')
    text = _diff(old, old.replace('false', 'true'))
    for shown in ('/var/lib/nova/instances',
                  '6f1e2d3c-1111-2222-3333-444455556666', '2-7,10-15'):
        assert shown in text


def _apply_opcodes(a, b, opcodes):
    out = []
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == 'equal':
            assert a[i1:i2] == b[j1:j2]
            out += a[i1:i2]
        else:
            out += b[j1:j2]
    return out


def test_diff_is_a_correct_edit_script_on_hostile_shapes():
    import random
    rng = random.Random(11)
    for _ in range(300):
        alphabet = [f'l{i}\n' for i in range(rng.randint(1, 6))]
        a = [rng.choice(alphabet) for _ in range(rng.randint(0, 40))]
        b = list(a)
        for _ in range(rng.randint(0, 6)):
            at = rng.randint(0, len(b))
            if rng.random() < 0.5 and b and at < len(b):
                del b[at]
            else:
                b.insert(at, rng.choice(alphabet + ['new\n']))
        opcodes = diff._Matcher(a, b).get_opcodes()
        assert _apply_opcodes(a, b, opcodes) == b
        assert sum(i2 - i1 for _, i1, i2, _, _ in opcodes) == len(a)


def test_duplicate_lines_do_not_make_the_diff_quadratic():
    """4,000 duplicate lines took 47 s with difflib (autojunk off); the
    figures are in benchmarks/nova_conf_apply.py. Here: the hunk is the
    one changed line, found among 20,000 identical ones."""
    body = '[DEFAULT]\n' + 'debug = true\n' * 20000 + '[compute]\n'
    text = _diff(body, body + 'cpu_shared_set = 0-1\n')
    added = [line for line in text.splitlines()[2:]
             if line[0] not in ' @']
    assert added == ['+cpu_shared_set = 0-1']
