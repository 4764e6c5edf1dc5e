"""KvmTune.network_scaling (network.py) against the in-memory Nova of
tests/unit/rally/scenarios/fakenova.py: the clients get the server's
address as their peer, the server guest may have its own flavor, the
signal start by default, a network needed, a lost step naming the server
guest apart."""

import pytest
from rally import exceptions

from kvmtune.rally.scenarios.kvmtune import network
from tests.unit.rally.scenarios.fakenova import Nova
from tests.unit.rally.scenarios.fakenova import scenario
from tests.unit.rally.scenarios.fakenova import ServerError
from tests.unit.rally.scenarios.fakenova import table


def test_network_clients_get_the_server_address_as_peer():
    nova = Nova()
    scen = scenario(network.NetworkScaling, nova, iteration=2,
                    networks=[{'id': 'net-1'}])
    scen.run(flavor='f', image='i', vm_counts=[1, 2], result_timeout=5)
    server, *clients = nova.servers.created
    assert server.job['role'] == 'server' and server.job['hold']
    assert len(clients) == 2
    assert {c.job['peer'] for c in clients} == {'10.2.0.3'}
    # iperf3 serves one client at a time: one server and port per client
    assert server.job['ports'] == '5201,5202'
    assert '-p @PORT@' in server.job['command']
    assert sorted(c.job['params']['port'] for c in clients) == [5201, 5202]
    assert {'-p 5201' in clients[0].job['command'],
            '-p 5202' in clients[1].job['command']} == {True}
    rows = table(scen)
    assert len(rows) == 2 and all(r['gbit_s'] > 0 for r in rows)
    assert nova.servers.live == {}


def test_network_server_guest_may_have_its_own_flavor():
    nova = Nova()
    scen = scenario(network.NetworkScaling, nova,
                    networks=[{'id': 'net-1'}])
    scen.run(flavor='tuned', image='i', vm_counts=[1], result_timeout=5,
             server_flavor='plain')
    assert [s.flavor for s in nova.servers.created] == ['plain', 'tuned']


def test_network_default_is_the_signal_start_and_at_stays():
    for mode, nmis in ((None, [1]), ('at', [0])):
        nova = Nova()
        scen = scenario(network.NetworkScaling, nova,
                        networks=[{'id': 'net-1'}])
        mode_arg = {'start_mode': mode} if mode else {}
        scen.run(flavor='f', image='i', vm_counts=[1], result_timeout=5,
                 **mode_arg)
        server, client = nova.servers.created
        assert [client.nmis] == nmis, mode
        if mode == 'at':
            assert isinstance(client.job['start_at'], int)
            assert 'start' not in client.job
        else:
            assert client.job['start'] == 'nmi'
        assert [r['status'] for r in table(scen)] == ['ok']


def test_network_needs_a_network():
    with pytest.raises(exceptions.InvalidArgumentsException,
                       match='needs a network'):
        scenario(network.NetworkScaling, Nova()).run(
            flavor='f', image='i', vm_counts=[1])


def test_network_lost_step_names_the_server_guest_apart():
    nova = Nova()

    def no_address(server):
        raise ServerError('Unexpected API Error (HTTP 500)')

    scen = scenario(network.NetworkScaling, nova,
                    networks=[{'id': 'net-1'}])
    scen._address = no_address
    with pytest.raises(ServerError):
        scen.run(flavor='f', image='i', vm_counts=[1],
                 workload='iperf3-tcp-stream', result_timeout=5)
    rows = table(scen)
    assert [r['role'] for r in rows] == ['server']
    assert [r for r in rows if r['role'] != 'server'] == []
    assert nova.servers.live == {}


def test_a_rally_plugin_under_its_task_name():
    from rally.task import scenario as rally_scenario

    assert rally_scenario.Scenario.get('KvmTune.network_scaling') is \
        network.NetworkScaling
