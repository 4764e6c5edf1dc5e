"""kvmtune.capacity.placement: what Nova and Placement say about each
compute node, read once per node (three Placement calls), from a
recording of the test cloud (tests/unit/capacity/replay.py); a node that
cannot be read makes the answer partial, credentials that cannot read
Placement are an error."""

import copy

import pytest

from kvmtune import capacity
from kvmtune.capacity import placement
from kvmtune.errors import CloudError
from tests.unit.capacity.replay import load
from tests.unit.capacity.replay import Replay

RECORDING = load('testcloud-libvirt-pinned.json')
PINNED = 'kvmtune-ft-002e681a-pinned'
BASE = 'kvmtune-ft-base-94120b'
UUID = 'cf63b802-58b5-4ca2-ba0e-f3563145bd06'


def test_hosts_read_the_recorded_node():
    reader = placement.Reader(Replay(RECORDING))
    [host] = reader.hosts()
    assert (host.name, host.service_host, host.uuid) == ('vm', 'vm', UUID)
    assert sorted(host.inventories) == ['DISK_GB', 'MEMORY_MB', 'PCPU',
                                        'VCPU']
    assert host.usages == {'DISK_GB': 0, 'MEMORY_MB': 0, 'PCPU': 0,
                           'VCPU': 0}
    assert 'COMPUTE_NODE' in host.traits
    assert host.aggregates == [] and host.error is None
    # two Nova calls, three Placement calls for the node
    assert reader.calls == 5


def test_aggregates_are_by_service_host():
    recording = copy.deepcopy(RECORDING)
    recording['compute /os-aggregates'] = {'aggregates': [
        {'name': 'pinned', 'hosts': ['vm']},
        {'name': 'elsewhere', 'hosts': ['other']},
        {'name': 'empty', 'hosts': None},
        {'name': 'a-first', 'hosts': ['vm']}]}
    [host] = placement.Reader(Replay(recording)).hosts()
    assert host.aggregates == ['a-first', 'pinned']


def test_servers_skip_the_gone_and_read_topology_only_when_pinned():
    recording = copy.deepcopy(RECORDING)
    servers = [
        {'id': 's1', 'status': 'ACTIVE',
         'flavor': {'extra_specs': {'hw:cpu_policy': 'dedicated'}}},
        {'id': 's2', 'status': 'ACTIVE', 'flavor': {'extra_specs': {}}},
        {'id': 's3', 'status': 'DELETED',
         'flavor': {'extra_specs': {'hw:cpu_policy': 'dedicated'}}},
        {'id': 's4', 'status': 'SHUTOFF',
         'flavor': {'extra_specs': {'hw:mem_page_size': 'large'}}},
    ]
    recording['compute /servers/detail?all_tenants=1&host=vm&node=vm'] = {
        'servers': servers}
    for server in ('s1', 's4'):
        recording[f'compute /servers/{server}/topology'] = {
            'nodes': [{'host_node': 0}], 'pagesize_kb': None}
    reader = placement.Reader(Replay(recording))
    host = placement.Host(name='vm', service_host='vm', uuid=UUID)
    found = reader.servers(host)
    assert [(server['id'], topology is not None)
            for server, topology in found] == [
        ('s1', True), ('s2', False), ('s4', True)]
    # one list, two topologies: none read for s2 nor for the deleted s3
    assert reader.calls == 3


def test_flavors_are_read_in_one_call():
    reader = placement.Reader(Replay(RECORDING))
    listing = reader.flavors()
    assert reader.calls == 1
    assert listing.find(BASE) is not None


def test_a_node_that_cannot_be_read_is_partial_not_zero():
    uuid = 'cf63b802-58b5-4ca2-ba0e-f3563145bd06'
    cloud = Replay(RECORDING, fail={
        f'placement /resource_providers/{uuid}/usages':
        CloudError('HTTP 503: Service Unavailable', source='cloud replay')})
    result = capacity.compute(cloud, [PINNED])
    assert result.partial
    assert 'HTTP 503' in result.fits[0].reason
    assert result.by_flavor() == {PINNED: (0, True)}


def test_credentials_that_cannot_read_placement_are_an_error():
    uuid = 'cf63b802-58b5-4ca2-ba0e-f3563145bd06'
    denied = CloudError('HTTP 403: Forbidden', source='cloud replay')
    denied.http_status = 403
    cloud = Replay(RECORDING, fail={
        f'placement /resource_providers/{uuid}/inventories': denied})
    with pytest.raises(CloudError, match='403'):
        capacity.compute(cloud, [PINNED])


def test_a_provider_without_inventory_is_partial():
    recording = dict(RECORDING)
    uuid = 'cf63b802-58b5-4ca2-ba0e-f3563145bd06'
    recording[f'placement /resource_providers/{uuid}/inventories'] = {
        'inventories': {}, 'resource_provider_generation': 1}
    result = capacity.compute(Replay(recording), [PINNED])
    assert result.fits[0].count is None
    assert 'no inventory in Placement' in result.fits[0].reason


def test_calls_grow_with_hosts_not_hosts_times_flavors():
    one = Replay(RECORDING, hosts=10)
    capacity.compute(one, [PINNED])
    two = Replay(RECORDING, hosts=10)
    capacity.compute(two, [PINNED, BASE])
    more = Replay(RECORDING, hosts=20)
    capacity.compute(more, [PINNED, BASE])
    assert one.calls == two.calls
    assert more.calls - two.calls == 10 * 3
