"""``kvmtune profile list``: the packaged profiles and those of
``[DEFAULT] profile_dirs``, one per line or as data; a directory or FIFO
named like a profile is passed over."""

import json
import os

import pytest

from kvmtune import cli
from tests import hang
from tests.profilefiles import GOOD
from tests.profilefiles import SHIPPED
from tests.profilefiles import write


@pytest.fixture
def site_conf(tmp_path):
    site = tmp_path / 'site'
    site.mkdir()
    write(site, 'site-pinning.yaml', GOOD)
    conf = tmp_path / 'kvmtune.conf'
    conf.write_text(f'[DEFAULT]\nprofile_dirs = {site}\n')
    return str(conf)


def test_profile_list_reads_profile_dirs(site_conf, capsys):
    assert cli.main(['--config-file', site_conf, 'profile', 'list']) == 0
    out = capsys.readouterr().out.splitlines()
    names = [line.split()[0] for line in out[2:]]    # below the header
    assert names == sorted(SHIPPED + ['site-pinning'])
    assert any('test profile' in line for line in out)


def test_profile_list_with_hostile_dir_entries(tmp_path, capsys):
    (tmp_path / 'dir.yaml').mkdir()
    os.mkfifo(tmp_path / 'fifo.yaml')
    conf = tmp_path / 'kvmtune.conf'
    conf.write_text(f'[DEFAULT]\nprofile_dirs = {tmp_path}\n')
    assert hang.call(
        lambda: cli.main(['--config-file', str(conf), 'profile', 'list']),
        release=[tmp_path / 'fifo.yaml']) == 0
    assert 'baseline' in capsys.readouterr().out


def test_profile_list_as_json_names_each_file(site_conf, tmp_path, capsys):
    assert cli.main(['--config-file', site_conf, 'profile', 'list',
                     '-f', 'json']) == 0
    listed = {p['name']: p for p in json.loads(capsys.readouterr().out)}
    assert sorted(listed) == sorted(SHIPPED + ['site-pinning'])
    assert listed['site-pinning'] == {
        'name': 'site-pinning', 'description': 'test profile',
        'path': str(tmp_path / 'site' / 'site-pinning.yaml')}
    assert listed['baseline']['path'].endswith(
        os.path.join('profiles', 'baseline.yaml'))


def test_a_later_profile_dir_wins_on_equal_names(tmp_path, capsys):
    site = tmp_path / 'site'
    site.mkdir()
    write(site, 'baseline.yaml', GOOD.replace('test profile', 'site own'))
    conf = tmp_path / 'kvmtune.conf'
    conf.write_text(f'[DEFAULT]\nprofile_dirs = {site}\n')
    assert cli.main(['--config-file', str(conf), 'profile', 'list',
                     '-f', 'value', '-c', 'name', '-c',
                     'description']) == 0
    out = capsys.readouterr().out.splitlines()
    assert 'baseline site own' in out
    assert len(out) == len(SHIPPED)
