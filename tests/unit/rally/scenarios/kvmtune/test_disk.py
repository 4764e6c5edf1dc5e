"""KvmTune.disk_scaling (disk.py) against the in-memory Nova of
tests/unit/rally/scenarios/fakenova.py, whose guests answer on their
console the way the benchmark image does: a step boots its guests and
reads every one, a bad job fails the iteration naming the guest, and
what cannot run is refused before anything boots."""

import pytest
from rally import exceptions

from kvmtune.rally.scenarios.kvmtune import disk
from kvmtune.rally.scenarios.kvmtune import utils
from kvmtune.results import row as rows_
from kvmtune.results import units
from tests.unit.rally.scenarios.fakenova import Nova
from tests.unit.rally.scenarios.fakenova import scenario
from tests.unit.rally.scenarios.fakenova import table


def test_disk_iteration_boots_its_step_and_reads_every_guest():
    nova = Nova()
    scen = scenario(disk.DiskScaling, nova, iteration=3)
    scen.run(flavor='f', image='i', vm_counts=[1, 2, 3], result_timeout=5,
             emulated=True)
    assert len(nova.servers.created) == 3
    jobs = [s.job for s in nova.servers.created]
    assert all(j == jobs[0] for j in jobs)      # one common start_at
    assert jobs[0]['target'] == '/dev/vdb'
    for s in nova.servers.created:
        assert s.kw['config_drive'] is True
        assert s.kw['scheduler_hints'] == {'group': 'group-0'}
        assert s.kw['nics'] == 'none'
    rows = table(scen)
    assert [r['status'] for r in rows] == ['ok'] * 3
    assert all(r['iops'] > 0 and r['tool'] == 'fio' and r['emulated']
               for r in rows)
    titles = [o['title'] for o in scen._output['additive']]
    assert titles[0] == f'IOPS by VM count ({units.EMULATED})'
    # nothing left behind
    assert nova.servers.live == {} and nova.server_groups.live == {}


def test_a_bad_job_fails_the_iteration_naming_the_guest():
    nova = Nova()
    scen = scenario(disk.DiskScaling, nova)
    with pytest.raises(utils.GuestResultsMissing,
                       match='target /dev/vdz is not a block device '
                             'here') as exc:
        scen.run(flavor='f', image='i', vm_counts=[1], target='/dev/vdz',
                 result_timeout=5)
    server, = nova.servers.created
    assert (f'{server.id}: error: target /dev/vdz is not a block device '
            'here') in str(exc.value)
    assert table(scen)[0]['status'] == rows_.ERROR
    assert nova.servers.live == {}


def test_an_unknown_workload_is_refused_before_booting():
    nova = Nova()
    with pytest.raises(exceptions.InvalidArgumentsException,
                       match='fio-no-such'):
        scenario(disk.DiskScaling, nova).run(
            flavor='f', image='i', vm_counts=[1], workload='fio-no-such')
    assert nova.servers.created == [] and nova.server_groups.live == {}


def test_a_flavor_without_data_disk_is_refused_before_booting():
    nova = Nova(ephemeral=0)
    with pytest.raises(exceptions.InvalidArgumentsException,
                       match='no ephemeral disk'):
        scenario(disk.DiskScaling, nova).run(flavor='f', image='i',
                                             vm_counts=[1])
    assert nova.servers.created == []


def test_a_rally_plugin_under_its_task_name():
    from rally.task import scenario as rally_scenario

    assert rally_scenario.Scenario.get('KvmTune.disk_scaling') is \
        disk.DiskScaling
