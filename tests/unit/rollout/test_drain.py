"""The drain: ACTIVE guests live, SHUTOFF guests cold and confirmed, the
host empty at the end; other statuses refused before anything moves; a
failed move and a drain past its time are one line (on a model of Nova's
API, tests/unit/rollout/fakenova.py: pure logic)."""

import pytest

from kvmtune.errors import CloudError
from kvmtune.rollout import drain
from kvmtune.rollout import nova
from tests.unit.rollout.fakenova import FakeNova
from tests.unit.rollout.fakenova import server


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def _disabled(cloud, host='c2'):
    nova.disable(cloud, host, nova.reason('RUN1', 'p'))
    return cloud


def _drain(cloud, host='c2', timeout=60):
    clock = Clock()
    return drain.drain(cloud, host, timeout=timeout, poll=1, clock=clock,
                       sleep=clock.sleep)


def test_active_live_shutoff_cold_and_confirmed_then_empty():
    guests = [server('a1', 'c2'), server('s1', 'c2', 'SHUTOFF'),
              server('k', 'c3')]
    cloud = _disabled(FakeNova(['c2', 'c3'], guests, delay=2))
    moves = _drain(cloud)
    assert [(m.id, m.status_before, m.action, m.status_after, m.host_after)
            for m in moves] == [
        ('a1', 'ACTIVE', drain.LIVE, 'ACTIVE', 'c3'),
        ('s1', 'SHUTOFF', drain.COLD, 'SHUTOFF', 'c3')]
    assert nova.servers(cloud, 'c2') == []
    actions = [(p.split('/')[2], list(b)[0]) for m, p, b in cloud.writes
               if p.endswith('/action')]
    assert actions == [('a1', 'os-migrateLive'), ('s1', 'migrate'),
                       ('s1', 'confirmResize')]
    live = next(b for _, p, b in cloud.writes if 'a1' in p)
    assert live == {'os-migrateLive': {'block_migration': 'auto',
                                       'host': None}}


def test_an_enabled_host_is_not_drained():
    cloud = FakeNova(['c2', 'c3'], [server('a1', 'c2')])
    with pytest.raises(CloudError) as exc:
        _drain(cloud)
    assert 'enabled' in exc.value.line() and cloud.writes == []


@pytest.mark.parametrize('status', ['ERROR', 'PAUSED', 'SUSPENDED',
                                    'SHELVED', 'RESCUE'])
def test_a_status_the_drain_does_not_move_is_refused_first(status):
    guests = [server('a1', 'c2'), server('e1', 'c2', status)]
    cloud = _disabled(FakeNova(['c2', 'c3'], guests))
    writes = len(cloud.writes)
    with pytest.raises(CloudError) as exc:
        _drain(cloud)
    assert f'e1 (vm-e1, {status})' in exc.value.line()
    assert 'nothing was moved' in exc.value.line()
    assert len(cloud.writes) == writes


def test_a_failed_migration_names_the_server_and_its_migration():
    cloud = _disabled(FakeNova(['c2', 'c3'], [server('a1', 'c2')],
                               fail={'a1'}))
    with pytest.raises(CloudError) as exc:
        _drain(cloud)
    line = exc.value.line()
    assert line.startswith('host c2: drain: server a1 (vm-a1, ACTIVE) did '
                           'not leave: migration 1 is error')


def test_a_drain_past_its_time_says_what_is_left():
    cloud = _disabled(FakeNova(['c2', 'c3'], [server('a1', 'c2')],
                               delay=100))
    with pytest.raises(CloudError) as exc:
        _drain(cloud, timeout=5)
    assert 'not empty after 5 s: a1 (ACTIVE/migrating)' in exc.value.line()
    # run again: the move already under way is waited for, not asked again
    cloud.moving['a1'] = (2, 'live-migration', 'c3')
    moves = _drain(cloud)
    assert [(m.id, m.action, m.host_after) for m in moves] == [
        ('a1', 'wait', 'c3')]
    asked = [p for m, p, b in cloud.writes if p.endswith('/action')]
    assert asked == ['/servers/a1/action']


def test_a_cold_migration_left_unconfirmed_is_confirmed():
    # a killed drain: s1 went to c3 and waits there in VERIFY_RESIZE
    cloud = _disabled(FakeNova(['c2', 'c3'],
                               [server('s1', 'c3', 'VERIFY_RESIZE')]))
    cloud.migrations = [{'id': 7, 'instance_uuid': 's1',
                         'source_compute': 'c2', 'status': 'finished',
                         'migration_type': 'migration'}]
    moves = _drain(cloud)
    assert [(m.id, m.action, m.status_after) for m in moves] == [
        ('s1', drain.CONFIRM, 'SHUTOFF')]


def test_an_empty_host_drains_to_nothing():
    cloud = _disabled(FakeNova(['c2', 'c3'], [server('k', 'c3')]))
    writes = len(cloud.writes)
    assert _drain(cloud) == []
    assert len(cloud.writes) == writes


def test_next_actions():
    def s(uuid, status, task=None):
        body = server(uuid, 'c2', status)
        body['OS-EXT-STS:task_state'] = task
        return nova.Server.from_api(body)
    found = [s('a', 'ACTIVE'), s('b', 'SHUTOFF'),
             s('c', 'ACTIVE', 'migrating'), s('d', 'VERIFY_RESIZE'),
             s('e', 'ACTIVE'), s('f', 'ERROR')]
    actions, waiting, failed = drain.next_actions(found, {'e': 1})
    assert [(x.id, a) for x, a in actions] == [
        ('a', drain.LIVE), ('b', drain.COLD), ('d', drain.CONFIRM)]
    assert [x.id for x in waiting] == ['c']
    assert [x.id for x in failed] == ['e', 'f']
