"""``kvmtune flavor apply``: a new tuned flavor copies the base flavor's
sizes and carries the profile's specs; a second run writes nothing; a dry
run writes nothing; no flavor named is one line. Against the stand-in
cloud of conftest.py with the real plan of the Intel fixture host (the
real Nova: tests/functional/test_flavors.py)."""

import os

from kvmtune import cli
from kvmtune.openstack import flavors
from tests import paths

HOST = os.path.join(paths.HOSTS, 'intel-2s-smt-ept-1g')
PROFILE = 'pinned-hugepages-ept'
WANTED = {'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'prefer',
          'hw:emulator_threads_policy': 'share',
          'hw:mem_page_size': 'large',
          'trait:CUSTOM_KVMTUNE_EPT': 'required'}


def apply(*extra):
    return cli.main(['flavor', 'apply', '--os-cloud', 'unit', '--profile',
                     PROFILE, '--root', HOST, *extra])


def test_a_new_flavor_copies_the_base_and_has_the_profile_specs(
        nova, capsys):
    nova.add_flavor('m1.bench', {'quota:cpu_shares': '10'}, ram=2048,
                    vcpus=2, disk=10)
    assert apply('--from', 'm1.bench') == 0
    made = nova.by_name(f'm1.bench.{PROFILE}')
    assert (made['ram'], made['vcpus'], made['disk']) == (2048, 2, 10)
    assert made['extra_specs'] == WANTED
    assert flavors.made_by_kvmtune(made) == (PROFILE, 'm1.bench')
    # the base flavor is not touched
    assert nova.by_name('m1.bench')['extra_specs'] == {
        'quota:cpu_shares': '10'}
    out = capsys.readouterr().out
    assert f'flavor m1.bench.{PROFILE}: created' in out
    assert out.rstrip().endswith('cloud unit: requests counted')

    nova.writes.clear()
    assert apply('--from', 'm1.bench') == 0
    assert nova.writes == []
    assert 'already matches profile' in capsys.readouterr().out


def test_an_existing_flavor_gets_the_specs_and_keeps_foreign_keys(
        nova, capsys):
    nova.add_flavor('tuned', {'hw:cpu_policy': 'shared',
                              'quota:cpu_shares': '10'})
    assert apply('--name', 'tuned') == 0
    assert nova.by_name('tuned')['extra_specs'] == dict(
        WANTED, **{'quota:cpu_shares': '10'})
    assert 'flavor tuned: updated' in capsys.readouterr().out


def test_dry_run_writes_nothing(nova, capsys):
    nova.add_flavor('m1.bench')
    assert apply('--from', 'm1.bench', '--dry-run') == 0
    assert nova.writes == []
    assert list(nova.flavors) == ['m1.bench-id']
    out = capsys.readouterr().out
    assert '  + hw:cpu_policy=dedicated' in out.splitlines()
    assert 'dry run: nothing written' in out


def test_no_flavor_named_is_one_line(nova, capsys):
    assert apply() == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and 'no flavor named' in err
    assert apply('--name', 'absent') == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and "no flavor named 'absent'" in err
    assert nova.writes == []


def test_project_makes_a_new_flavor_private_and_shares_it(nova, capsys):
    nova.add_flavor('m1.bench')
    # a public flavor cannot be made private: refused before any write
    nova.add_flavor('public')
    assert apply('--name', 'public', '--project', 'p1') == 2
    assert 'is public' in capsys.readouterr().err
    assert nova.writes == []
    assert apply('--from', 'm1.bench', '--project', 'p1') == 0
    made = nova.by_name(f'm1.bench.{PROFILE}')
    assert made['os-flavor-access:is_public'] is False
    grant = nova.writes[-1]
    assert grant[1] == f'/flavors/{made["id"]}/action'
    assert grant[2] == {'addTenantAccess': {'tenant': 'p1'}}


def test_a_plan_with_a_fail_check_sends_no_request(nova, capsys):
    """The PVM capture has no EPT: refused before the cloud is asked,
    the check named; --accept-failed-checks creates the flavor."""
    nova.add_flavor('m1.bench', {}, ram=2048, vcpus=2, disk=10)
    pvm = os.path.join(paths.HOSTS, 'pvm-guest-2cpu')
    argv = ['flavor', 'apply', '--os-cloud', 'unit', '--profile', PROFILE,
            '--root', pvm, '--from', 'm1.bench']
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert 'kvmtune flavor apply: refused' in err
    assert 'FAIL ept ept-enabled' in err
    assert nova.by_name(f'm1.bench.{PROFILE}') is None
    assert cli.main(argv + ['--accept-failed-checks']) == 0
    assert nova.by_name(f'm1.bench.{PROFILE}') is not None
