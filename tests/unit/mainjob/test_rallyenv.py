"""Rally's database and environment for a cloud (`kvmtune rally env`):
where plain rally's database goes, and the environment made, left or
refreshed, with the real rally program in a HOME of the test's own (the
spec from clouds.yaml: test_rallycloud.py). No cloud: Rally does not
reach one when it stores an environment (``rally env check`` is the
functional tier's, tests/functional/test_rally_env.py)."""

import json

import pytest

from kvmtune.errors import InputError
from kvmtune import extras
from kvmtune.mainjob import rallyenv

CLOUDS = """\
clouds:
  c:
    auth:
      auth_url: http://127.0.0.1:5000/v3
      username: admin
      password: secret
      project_name: admin
      user_domain_name: Default
      project_domain_name: Default
    region_name: RegionOne
    interface: internal
    verify: false
"""
PASSWORD = 'f00dfeed' * 4


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A HOME and TMPDIR of the test's own (Rally's default database is
    $TMPDIR/rally.sqlite)."""
    import tempfile

    home = tmp_path / 'home'
    home.mkdir()
    monkeypatch.setenv('TMPDIR', str(tmp_path))
    monkeypatch.setattr(tempfile, 'tempdir', None)
    return str(home)


def test_search_paths_are_rallys_order(home):
    import sys

    paths = rallyenv.search_paths(home=home)
    assert paths == [f'{sys.prefix}/etc/rally/rally.conf',
                     f'{home}/.rally/rally.conf', '/etc/rally/rally.conf']


def test_without_a_rally_conf_one_is_written_in_home(home):
    config, wrote = rallyenv.rally_config(home=home)
    assert config == wrote == f'{home}/.rally/rally.conf'
    with open(config) as f:
        assert f.read() == (f'[database]\nconnection = sqlite:///{home}/'
                            '.rally/rally.sqlite\n')
    # found the next time, not written again
    assert rallyenv.rally_config(home=home) == (config, None)


def test_rallys_default_database_in_use_is_kept(home, tmp_path):
    (tmp_path / 'rally.sqlite').write_bytes(b'')
    assert rallyenv.rally_config(home=home) == (None, None)


def test_a_home_rally_cannot_use_is_one_line(home):
    with open(f'{home}/.rally', 'w'):
        pass
    with pytest.raises(InputError, match=r"Rally's directory cannot be "
                                         r'made: File exists') as err:
        rallyenv.rally_config(home=home)
    assert '\n' not in err.value.line()


def _spec(password, auth_url='http://127.0.0.1:9/v3'):
    return {'existing@openstack': {
        'auth_url': auth_url, 'endpoint_type': 'public',
        'admin': {'username': 'admin', 'password': password,
                  'project_name': 'admin', 'user_domain_name': 'Default',
                  'project_domain_name': 'Default'}}}


@pytest.mark.slow
def test_created_left_and_refreshed_never_showing_the_password(home):
    log = []
    config, _ = rallyenv.rally_config(home=home)
    rally = rallyenv.RallyCommand(config_file=config, home=home,
                                  log=log.append)
    done = rallyenv.store(rally, 'c', _spec(PASSWORD))
    assert done == {'environment': 'created', 'replaced': None,
                    'database': f'sqlite:///{home}/.rally/rally.sqlite'}
    assert rallyenv.store(rally, 'c', _spec(PASSWORD))['environment'] \
        == 'unchanged'
    # new credentials: Rally cannot change an environment's spec, so the
    # old one is renamed, its tasks with it, and a new one made
    done = rallyenv.store(rally, 'c', _spec('0' * 32))
    assert done['environment'] == 'refreshed'
    assert done['replaced'].startswith('c@')
    rc, out = rally.run('env', 'list', '--json', secret=True)
    envs = {e['name']: e for e in json.loads(out)}
    assert set(envs) == {'c', done['replaced']}
    assert envs['c']['spec'] == _spec('0' * 32)
    with open(f'{home}/.rally/globals') as f:
        assert f.read().strip() == f'RALLY_ENV={envs["c"]["uuid"]}'
    assert not any(PASSWORD in line for line in log)


def test_a_database_rally_cannot_write_is_one_line(home, tmp_path):
    (tmp_path / 'afile').write_text('')
    config = tmp_path / 'rally.conf'
    config.write_text(f'[database]\nconnection = sqlite:///{tmp_path}/'
                      'afile/rally.sqlite\n')
    rally = rallyenv.RallyCommand(config_file=str(config), home=home)
    with pytest.raises(InputError, match=r"Rally's database cannot be "
                                         r'written: .*unable to open') as err:
        rallyenv.store(rally, 'c', _spec(PASSWORD))
    assert err.value.source == f'sqlite:///{tmp_path}/afile/rally.sqlite'
    assert '\n' not in err.value.line()


def test_no_rally_program_names_how_to_install_the_bench_extra(tmp_path):
    rally = rallyenv.RallyCommand(rally=str(tmp_path / 'no-rally'))
    with pytest.raises(InputError) as err:
        rally.run('--version')
    assert err.value.line() == (
        f'{tmp_path / "no-rally"}: no rally program (fix: '
        f"{extras.install_hint('bench')})")
