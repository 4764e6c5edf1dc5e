"""The Nova side of a rollout: disable and enable are this run's alone and
converge when made again; servers follow the API's pages; a host Nova does
not know is one line (a model of Nova's API: tests/unit/rollout/
fakenova.py; the real one in tests/functional/test_rollout.py)."""

import copy
import json
import os
import urllib.parse

import pytest

from kvmtune.errors import CloudError
from kvmtune.errors import InputError
from kvmtune.rollout import nova
from kvmtune.rollout import snapshot as snapshots
from tests import paths
from tests.unit.rollout.fakenova import FakeNova
from tests.unit.rollout.fakenova import server

WHY = nova.reason('RUN1', 'pinned-hugepages')


def test_the_reason_names_the_run_and_the_profile():
    assert WHY == 'kvmtune rollout RUN1: pinned-hugepages'
    assert WHY.startswith(nova.reason_prefix('RUN1'))
    assert not WHY.startswith(nova.reason_prefix('RUN'))   # not a prefix


def test_disable_once_then_it_is_done():
    cloud = FakeNova(['c2', 'c3'])
    service, changed = nova.disable(cloud, 'c2', WHY)
    assert changed and (service.status, service.disabled_reason) == (
        'disabled', WHY)
    assert cloud.writes == [('PUT', '/os-services/svc-c2',
                             {'status': 'disabled',
                              'disabled_reason': WHY})]
    service, changed = nova.disable(cloud, 'c2', WHY)
    assert not changed and len(cloud.writes) == 1


@pytest.mark.parametrize('other', ['MAINTENANCE', None,
                                   nova.reason('RUN0', 'pinned-hugepages')])
def test_a_host_disabled_by_someone_else_is_refused(other):
    cloud = FakeNova(['c2'])
    cloud.services['c2'].update(status='disabled', disabled_reason=other)
    with pytest.raises(CloudError) as exc:
        nova.disable(cloud, 'c2', WHY)
    assert f'with the reason {other!r}' in exc.value.line()
    assert exc.value.line().startswith('host c2: disabled_reason: ')
    with pytest.raises(CloudError):
        nova.enable(cloud, 'c2', 'RUN1')
    assert cloud.writes == []


def test_enable_only_what_this_run_disabled():
    cloud = FakeNova(['c2'])
    nova.disable(cloud, 'c2', WHY)
    service, changed = nova.enable(cloud, 'c2', 'RUN1')
    assert changed and service.status == 'enabled'
    assert cloud.writes[-1] == ('PUT', '/os-services/svc-c2',
                                {'status': 'enabled'})
    _, changed = nova.enable(cloud, 'c2', 'RUN1')
    assert not changed and len(cloud.writes) == 2


def test_an_unknown_host_is_one_line_naming_it():
    cloud = FakeNova(['c2', 'c3'])
    with pytest.raises(InputError) as exc:
        nova.disable(cloud, 'c9', WHY)
    line = exc.value.line()
    assert "host 'c9'" in line and 'c2, c3' in line and '\n' not in line
    with pytest.raises(InputError) as exc:
        nova.check_hosts(cloud, ['c2', 'c9'])
    assert exc.value.key == 'c9'
    assert cloud.writes == []
    assert set(nova.check_hosts(cloud, ['c2'])) == {'c2', 'c3'}


def test_servers_follow_the_pages():
    servers = [server(f'{i:04d}-id', 'c2') for i in range(5)]
    cloud = FakeNova(['c2', 'c3'], servers + [server('x', 'c3')], page=2)
    found = nova.servers(cloud, 'c2')
    assert [s.id for s in found] == [s['id'] for s in servers]
    assert found[0].flavor_name == 'm1' and found[0].host == 'c2'


def test_unconfirmed_cold_migrations_of_the_host():
    cloud = FakeNova(['c2', 'c3'])
    cloud.migrations = [
        {'id': 1, 'instance_uuid': 'a', 'source_compute': 'c2',
         'migration_type': 'migration', 'status': 'finished'},
        {'id': 2, 'instance_uuid': 'b', 'source_compute': 'c2',
         'migration_type': 'migration', 'status': 'confirmed'},
        {'id': 3, 'instance_uuid': 'c', 'source_compute': 'c3',
         'migration_type': 'migration', 'status': 'finished'}]
    assert [m['id'] for m in nova.unconfirmed(cloud, 'c2')] == [1]
    assert nova.last_migration(cloud, 'b')['id'] == 2
    assert nova.last_migration(cloud, 'z') is None


# -- the test cloud's own answers -------------------------------------------

RECORDING = os.path.join(paths.FIXTURES, 'rollout', 'testcloud-fleet.json')
DRAINED = 'kvmtune-compute-2'


class Recorded:
    """Nova's answers to the rollout's reads, recorded on the test cloud
    (tests/fixtures/rollout/README.md); a migrations query is answered
    with the host's recorded migrations, unfiltered, so the filter tested
    is kvmtune's own."""

    name = 'recorded'

    def __init__(self):
        with open(RECORDING) as f:
            self.answers = json.load(f)

    def compute(self, method, path, body=None):
        assert method == 'GET', (method, path)
        if path.startswith('/os-migrations?'):
            query = dict(urllib.parse.parse_qsl(path.split('?', 1)[1]))
            path = f'/os-migrations?source_compute={query["source_compute"]}'
        return copy.deepcopy(self.answers[f'compute {path}'])


def test_the_test_clouds_answers():
    cloud = Recorded()
    found = {s.host: s for s in nova.services(cloud)}
    assert {f'kvmtune-compute-{i}' for i in range(2, 6)} <= set(found)
    # disabled by the rollout, with its reason: this run's, not another's
    drained = found[DRAINED]
    assert drained.status == 'disabled'
    assert drained.disabled_reason.startswith(nova.REASON_PREFIX + ' ')
    run = drained.disabled_reason.split()[2].rstrip(':')
    assert drained.ours(run) and not drained.ours(run + 'x')
    with pytest.raises(CloudError):
        nova.disable(cloud, DRAINED, nova.reason(run + 'x', 'cpu-pinning'))
    servers = nova.servers(cloud, DRAINED)
    assert {s.status for s in servers} == {'ACTIVE', 'SHUTOFF'}
    assert {s.host for s in servers} == {DRAINED}
    for guest in servers:
        request = snapshots.request_of(guest)
        assert request.resources['MEMORY_MB'] == guest.flavor['ram']
    huge, = [s for s in servers if s.flavor['extra_specs']]
    assert snapshots.request_of(huge).numa.page_kb == 2048
    # after the drain: one live migration done, one cold one confirmed;
    # nothing waits for a confirm
    moved = cloud.answers[f'compute /os-migrations?source_compute={DRAINED}']
    assert {m['instance_uuid'] for m in moved['migrations']} == \
        {s.id for s in servers}
    assert nova.unconfirmed(cloud, DRAINED) == []
