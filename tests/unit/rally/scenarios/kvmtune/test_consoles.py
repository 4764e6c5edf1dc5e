"""Reading a step's guests through Nova's console API (consoles.py),
through KvmTune.disk_scaling and network_scaling against the in-memory
Nova of fakenova.py: the signal start once every guest is ready, a
guest never ready or stopped before being read, a dead nova-compute."""

import pytest

from kvmtune.rally.scenarios.kvmtune import disk
from kvmtune.rally.scenarios.kvmtune import network
from kvmtune.rally.scenarios.kvmtune import utils
from kvmtune.results import row as rows_
from tests.unit.rally.scenarios.fakenova import atomic_names
from tests.unit.rally.scenarios.fakenova import budget
from tests.unit.rally.scenarios.fakenova import DeadCompute
from tests.unit.rally.scenarios.fakenova import Nova
from tests.unit.rally.scenarios.fakenova import scenario
from tests.unit.rally.scenarios.fakenova import table


def test_signal_mode_starts_every_guest_once_all_are_ready():
    nova = Nova()
    scen = scenario(disk.DiskScaling, nova, iteration=3)
    scen.run(flavor='f', image='i', vm_counts=[1, 2, 3], result_timeout=5)
    jobs = [s.job for s in nova.servers.created]
    assert all(j['start'] == 'nmi' and j['start_at'] is None for j in jobs)
    assert [s.nmis for s in nova.servers.created] == [1, 1, 1]
    rows = table(scen)
    assert [r['status'] for r in rows] == ['ok'] * 3
    assert all(r['ready_s'] == 9.5 and r['seen_ready_s'] >= 0
               for r in rows)
    assert atomic_names(scen) == [
        'nova.create_server_group', 'kvmtune.create_servers',
        'kvmtune.wait_active',
        'kvmtune.wait_ready', 'kvmtune.start', 'kvmtune.wait_results',
        'kvmtune.collect', 'kvmtune.delete_servers']
    figures = budget(scen)
    assert figures['guests'] == 3 and figures['guests ready'] == 3
    assert figures['guests started'] == 3
    assert figures['guest uptime at ready, max s'] == 9.5
    assert nova.servers.live == {}


def test_a_guest_never_ready_is_not_waited_for_nor_averaged_in():
    nova = Nova()
    nova.servers.ids = iter(f'00000000-0000-0000-0000-{i:012d}'
                            for i in range(1, 4))
    nova.never_ready.add('00000000-0000-0000-0000-000000000002')
    scen = scenario(disk.DiskScaling, nova, iteration=3)
    with pytest.raises(utils.GuestResultsMissing,
                       match='^1 of 3 guests gave no valid result: .*: '
                             'no-result: no KVMTUNE-STATUS line') as exc:
        scen.run(flavor='f', image='i', vm_counts=[1, 2, 3],
                 result_timeout=5, ready_timeout=0)
    assert [s.nmis for s in nova.servers.created] == [1, 0, 1]
    rows = table(scen)
    assert [r['status'] for r in rows] == ['ok', 'no-result', 'ok']
    assert rows[1]['iops'] is None and rows[1]['seen_ready_s'] is None
    assert '1 of 3 guests' in str(exc.value)
    figures = budget(scen)
    assert (figures['guests ready'], figures['guests started']) == (2, 2)
    # the per-VM chart averages the two valid guests only
    trend = [o for o in scen._output['additive']
             if o['title'].startswith('IOPS by VM count')][0]
    per_vm, total = trend['data']
    assert per_vm[1] == pytest.approx(total[1] / 2)


def test_network_signal_mode_starts_the_clients_once_the_server_serves():
    nova = Nova()
    scen = scenario(network.NetworkScaling, nova, iteration=2,
                    networks=[{'id': 'net-1'}])
    scen.run(flavor='f', image='i', vm_counts=[1, 2], result_timeout=5,
             start_mode='signal')
    server, *clients = nova.servers.created
    assert 'start' not in server.job and server.nmis == 0
    assert all(c.job['start'] == 'nmi' and c.nmis == 1 for c in clients)
    rows = table(scen)
    assert [r['status'] for r in rows] == ['ok', 'ok']
    assert all(r['gbit_s'] > 0 and r['ready_s'] == 9.5 for r in rows)
    figures = budget(scen)
    assert (figures['guests'], figures['guests ready'],
            figures['guests started']) == (2, 2, 2)


def test_a_guest_that_stopped_before_being_read_is_a_no_result():
    nova = Nova(powered_off=True)
    scen = scenario(disk.DiskScaling, nova)
    with pytest.raises(utils.GuestResultsMissing, match='no-result: Nova '
                       'gave no console log'):
        scen.run(flavor='f', image='i', vm_counts=[1], result_timeout=5)
    assert nova.servers.created[0].job['hold'] is True
    assert table(scen)[0]['status'] == rows_.NO_RESULT
    assert nova.servers.live == {}


def test_a_dead_compute_mid_step_counts_guests_lost_and_still_deletes():
    # Before: the first unreadable console (500) ended the iteration with
    # no rows at all, and the one delete Nova ignored left the server.
    nova = Nova()
    dead = DeadCompute(nova)
    scen = scenario(disk.DiskScaling, nova, iteration=2)
    with pytest.raises(utils.GuestResultsMissing,
                       match='^2 of 2 guests gave no valid result') as exc:
        scen.run(flavor='f', image='i', vm_counts=[1, 2], result_timeout=0,
                 ready_timeout=0)
    rows = table(scen)
    assert [r['status'] for r in rows] == [rows_.NO_RESULT] * 2
    for r in rows:
        assert 'its console could not be read: ServerError: Unexpected ' \
            'API Error' in r['reason'], r
        assert r['iops'] is None
    assert 'console could not be read' in str(exc.value)
    assert dead.deletes > 2        # sent again until Nova took it
    assert nova.servers.live == {} and nova.server_groups.live == {}
