"""KvmTuneScenario (utils.py), what both scenarios share, through
KvmTune.disk_scaling against the in-memory Nova of
tests/unit/rally/scenarios/fakenova.py: where a step's guests are placed,
the start at a common time, lost rows of a step that fails before its
verdicts, and deletes that outlast an API down for a while or end within
Rally's timeout."""

import types

from novaclient import api_versions
import pytest
from rally.common import cfg
from rally import exceptions

from kvmtune.rally.scenarios.kvmtune import disk
from kvmtune.rally.scenarios.kvmtune import utils
from kvmtune.results import row as rows_
from tests.unit.rally.scenarios.fakenova import atomic_names
from tests.unit.rally.scenarios.fakenova import DeadCompute
from tests.unit.rally.scenarios.fakenova import Nova
from tests.unit.rally.scenarios.fakenova import scenario
from tests.unit.rally.scenarios.fakenova import table


def test_admin_host_pins_the_batch_without_a_group():
    nova = Nova()
    scenario(disk.DiskScaling, nova).run(
        flavor='f', image='i', vm_counts=[1], host='compute-1',
        result_timeout=5)
    server, = nova.servers.created
    assert server.kw['availability_zone'] == 'nova:compute-1'
    assert 'scheduler_hints' not in server.kw


def test_start_mode_at_keeps_the_old_common_start():
    nova = Nova()
    scen = scenario(disk.DiskScaling, nova, iteration=2)
    scen.run(flavor='f', image='i', vm_counts=[1, 2], result_timeout=5,
             start_mode='at')
    jobs = [s.job for s in nova.servers.created]
    assert all(isinstance(j['start_at'], int) and 'start' not in j
               for j in jobs)
    assert [s.nmis for s in nova.servers.created] == [0, 0]
    assert [r['status'] for r in table(scen)] == ['ok', 'ok']
    assert 'kvmtune.start' not in atomic_names(scen)


def test_a_step_that_fails_before_its_verdicts_leaves_lost_rows(monkeypatch):
    # A boot that never ends (nova-compute gone while building): Rally's
    # wait times out. Before: no row, so the SLA never named the guests.
    nova = Nova()

    def never_active(self, servers):
        raise exceptions.TimeoutException(
            desired_status='ACTIVE', resource_name=servers[0].name,
            resource_type='server', resource_id=servers[0].id,
            resource_status='BUILD', timeout=300)

    monkeypatch.setattr(utils.KvmTuneScenario, '_wait_active', never_active)
    scen = scenario(disk.DiskScaling, nova, iteration=2)
    with pytest.raises(exceptions.TimeoutException):
        scen.run(flavor='f', image='i', vm_counts=[1, 2], result_timeout=5)
    rows = table(scen)
    assert [r['status'] for r in rows] == [rows_.NO_RESULT] * 2
    assert all(r['reason'].startswith('lost: the step failed before its '
                                      'verdict (TimeoutException')
               and r['workload'] == 'fio-randread-4k' for r in rows), rows
    assert nova.servers.live == {} and nova.server_groups.live == {}


def test_an_api_that_is_down_for_a_while_still_gets_the_delete():
    nova = Nova()
    real_delete, failures = nova.servers.delete, []

    def flaky_delete(sid):
        if len(failures) < 2:
            failures.append(sid)
            raise ConnectionError('Unable to establish connection')
        return real_delete(sid)

    nova.servers.delete = flaky_delete
    scenario(disk.DiskScaling, nova).run(flavor='f', image='i',
                                         vm_counts=[1], result_timeout=5)
    assert len(failures) == 2 and nova.servers.live == {}


def test_a_delete_that_never_takes_ends_within_rallys_timeout():
    nova = Nova()
    DeadCompute(nova, seen_down_after=10 ** 9)
    cfg.CONF.set_override('nova_server_delete_timeout', 0,
                          group='openstack')
    try:
        scen = scenario(disk.DiskScaling, nova)
        with pytest.raises(exceptions.TimeoutException,
                           match='not deleted .*still there'):
            scen.run(flavor='f', image='i', vm_counts=[1],
                     result_timeout=0, ready_timeout=0)
    finally:
        cfg.CONF.clear_override('nova_server_delete_timeout',
                                group='openstack')
    # the lost guest was charted before the delete gave up
    assert table(scen)[0]['status'] == rows_.NO_RESULT


@pytest.mark.parametrize('iteration, expected', [(1, 1), (2, 2), (3, 3),
                                                 (4, 1), (5, 2)])
def test_iteration_i_runs_the_ith_step_of_the_sweep(iteration, expected):
    scen = scenario(disk.DiskScaling, Nova(), iteration=iteration)
    assert scen._vm_count([1, 2, 3]) == expected


def test_nics_as_asked_else_the_context_network_else_none():
    given = [{'net-id': 'mine'}]
    scen = scenario(disk.DiskScaling, Nova(), networks=[{'id': 'n1'},
                                                        {'id': 'n2'}])
    assert scen._nics(given) == given
    assert scen._nics(None) == [{'net-id': 'n1'}]
    # no network: "none" from compute API 2.37, nothing before it
    alone = scenario(disk.DiskScaling, Nova())
    assert alone._nics(None) == 'none'
    old = Nova()
    old.api_version = api_versions.APIVersion('2.36')
    assert scenario(disk.DiskScaling, old)._nics(None) is None


def test_a_batch_goes_to_an_admins_host_or_an_affinity_group():
    scen = scenario(disk.DiskScaling, Nova())
    group = types.SimpleNamespace(id='g-1')
    assert scen._placement('compute-1', group) == {
        'availability_zone': 'nova:compute-1'}
    assert scen._placement(None, group) == {
        'scheduler_hints': {'group': 'g-1'}}
