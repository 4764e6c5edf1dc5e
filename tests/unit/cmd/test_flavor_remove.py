"""``kvmtune flavor remove``: the profile's keys go and nothing else; with
--delete only a flavor kvmtune made for that profile is deleted; dry runs
and second runs write nothing. Against the stand-in cloud of conftest.py
(the real Nova: tests/functional/test_flavors.py)."""

import os

from kvmtune import cli
from kvmtune.openstack import flavors
from tests import paths

HOST = os.path.join(paths.HOSTS, 'intel-2s-smt-ept-1g')
PROFILE = 'pinned-hugepages-ept'


def remove(*extra):
    return cli.main(['flavor', 'remove', '--os-cloud', 'unit', '--profile',
                     PROFILE, '--root', HOST, *extra])


def test_removes_the_profile_keys_and_keeps_the_rest(nova, capsys):
    nova.add_flavor('f', {'hw:cpu_policy': 'dedicated',
                          'hw:mem_page_size': 'small',
                          'quota:cpu_shares': '10'})
    assert remove('--name', 'f') == 0
    assert nova.by_name('f')['extra_specs'] == {'quota:cpu_shares': '10'}
    # two keys: bracketed by the INCOMPLETE marker, deleted last
    assert nova.writes[0][2] == {'extra_specs': {
        flavors.INCOMPLETE: flavors.INCOMPLETE_VALUE}}
    assert nova.writes[-1][:2] == (
        'DELETE', f'/flavors/f-id/os-extra_specs/{flavors.INCOMPLETE}')
    assert 'flavor f: removed 2 keys' in capsys.readouterr().out

    nova.writes.clear()
    assert remove('--name', 'f') == 0
    assert nova.writes == []
    assert (f'flavor f: has no key of profile {PROFILE}, nothing to '
            'change') in capsys.readouterr().out


def test_a_marker_a_stopped_run_left_is_deleted(nova, capsys):
    nova.add_flavor('f', {flavors.INCOMPLETE: flavors.INCOMPLETE_VALUE,
                          'quota:cpu_shares': '10'})
    assert remove('--name', 'f') == 0
    assert nova.by_name('f')['extra_specs'] == {'quota:cpu_shares': '10'}
    assert 'a kvmtune run stopped' in capsys.readouterr().out


def test_dry_run_writes_nothing(nova, capsys):
    nova.add_flavor('f', {'hw:cpu_policy': 'dedicated'})
    assert remove('--name', 'f', '--dry-run') == 0
    assert nova.writes == []
    assert nova.by_name('f')['extra_specs'] == {'hw:cpu_policy': 'dedicated'}
    assert 'dry run: nothing written' in capsys.readouterr().out


def test_delete_only_a_flavor_kvmtune_made_for_the_profile(nova, capsys):
    nova.add_flavor('foreign')
    nova.add_flavor('other', description=flavors.description(
        'cpu-pinning', 'm1.small'))
    mine = nova.add_flavor('mine', description=flavors.description(
        PROFILE, 'm1.small'))
    for name in ('foreign', 'other'):
        assert remove('--name', name, '--delete') == 2
        err = capsys.readouterr().err
        assert err.count('\n') == 1
        assert f'flavor {name} was not created by kvmtune for profile' in err
    assert nova.writes == []

    assert remove('--name', 'mine', '--delete', '--dry-run') == 0
    assert 'flavor mine: would be deleted' in capsys.readouterr().out
    assert nova.writes == []

    assert remove('--name', 'mine', '--delete') == 0
    assert nova.writes == [('DELETE', f'/flavors/{mine["id"]}', None)]
    assert nova.by_name('mine') is None
    assert remove('--name', 'mine', '--delete') == 0
    assert 'does not exist, nothing to delete' in capsys.readouterr().out
