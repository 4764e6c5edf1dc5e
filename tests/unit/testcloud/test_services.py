"""What the test cloud's services are started with."""

import re

from kvmtune.testcloud import services


def test_secrets_are_never_read_as_options():
    # keystone-manage bootstrap --bootstrap-password <secret>: a secret
    # starting with '-' failed cloud up; hex ones cannot.
    for _ in range(200):
        for name, secret in services.new_secrets().items():
            assert re.fullmatch(r'[0-9a-f]{36}', secret), (name, secret)


def _secrets_file(tmp_path, data):
    import json

    path = tmp_path / 'secrets.json'
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return str(path)


def test_the_last_ups_secrets_are_kept(tmp_path):
    # clouds.yaml copies and Rally environments keep working
    old = services.new_secrets()
    secrets, how = services.load_secrets(_secrets_file(tmp_path, old))
    assert (secrets, how) == (old, 'kept')


def test_first_up_and_rotation_make_new_secrets(tmp_path):
    secrets, how = services.load_secrets(str(tmp_path / 'none.json'))
    assert how == 'new' and set(secrets) == set(services.SECRET_NAMES)
    old = services.new_secrets()
    secrets, how = services.load_secrets(_secrets_file(tmp_path, old),
                                         rotate=True)
    assert how == 'rotated'
    assert not set(secrets.values()) & set(old.values())
    assert 'Rally environment' in services.ROTATION_INVALIDATES


def test_a_missing_or_bad_secret_is_replaced_the_rest_kept(tmp_path):
    old = services.new_secrets()
    del old['neutron']                  # an older kvmtune had no such user
    old['glance'] = "x'; DROP USER --"  # a hand-edited file
    secrets, how = services.load_secrets(_secrets_file(tmp_path, old))
    assert how == 'kept'
    assert secrets['admin'] == old['admin']
    assert re.fullmatch(r'[0-9a-f]{36}', secrets['neutron'])
    assert re.fullmatch(r'[0-9a-f]{36}', secrets['glance'])


def test_an_unreadable_secrets_file_gives_new_ones(tmp_path):
    for text in ('{not json', '[1, 2]'):
        secrets, how = services.load_secrets(_secrets_file(tmp_path, text))
        assert how == 'new' and set(secrets) == set(services.SECRET_NAMES)
