"""Real guest networking in the test cloud: Neutron ML2/OVS on the
userspace datapath, two benchmark guests, iperf3 between them.

Needs the cloud in libvirt mode with ``--network neutron`` (the default
there) and the benchmark image built ``--with-net``
(``$KVMTUNE_NET_IMAGE_DIR``, default /var/lib/kvmtune/images-net). Under
TCG every figure is emulated.
"""

import base64
import os
import time
import uuid

import pytest

from kvmtune.rally.scenarios.kvmtune import guests
from kvmtune import workloads
from kvmtune.workloads import console
from kvmtune.workloads import guestjob
from kvmtune.workloads import parsers
from tests.functional.conftest import PREFIX

NET_IMAGE = os.path.join(os.environ.get('KVMTUNE_NET_IMAGE_DIR',
                                        '/var/lib/kvmtune/images-net'),
                         'kvmtune-bench.raw')
MEMBER = 'kvmtune-member'
CIDR = '10.2.0.0/24'
ADDRESSES = ('10.2.0.5', '10.2.0.6')
RUNTIME = 5
# Two TCG guests boot in ~25-50 s, longer while the host is loaded: the
# client starts on its signal once both said ready, as the Rally
# scenarios' signal mode does (kvmtune/rally/scenarios/kvmtune/consoles.py),
# not at a start time guessed before they boot (a client that started
# before its server listened failed with "No route to host").
READY_TIMEOUT = 300
RESULT_TIMEOUT = 240


@pytest.fixture
def neutron_cloud(test_cloud):
    """The cloud, with real Neutron. The test's compute('libvirt') mark
    skips it in fake mode (stub network); in libvirt mode the cloud runs
    Neutron unless started with --network stub (kvmtune/testcloud/api.py,
    up()), which tools/run-functional never does: a libvirt cloud without
    Neutron is a broken setup, so this fails instead of skipping."""
    network = test_cloud.env.get('KVMTUNE_CLOUD_NETWORK')
    if network != 'neutron':
        pytest.fail('needs real Neutron (kvmtune cloud up --compute libvirt '
                    '--network neutron, the default in libvirt mode); '
                    f'KVMTUNE_CLOUD_NETWORK is {network or "unset"}',
                    pytrace=False)
    return test_cloud


@pytest.fixture
def member(neutron_cloud):
    import openstack

    conn = openstack.connect(cloud=MEMBER)
    yield conn
    conn.close()


class Made:
    """What the test creates, deleted in reverse dependency order."""

    def __init__(self, admin, member):
        self.admin, self.member = admin, member
        self.servers, self.ports, self.subnets, self.networks = [], [], [], []
        self.flavors, self.images = [], []

    def delete(self):
        m = self.member
        for server in self.servers:
            m.compute.delete_server(server, ignore_missing=True)
        for server in self.servers:
            found = m.compute.find_server(server, ignore_missing=True)
            if found is not None:
                m.compute.wait_for_delete(found, wait=120)
        for port in self.ports:
            m.network.delete_port(port, ignore_missing=True)
        for subnet in self.subnets:
            m.network.delete_subnet(subnet, ignore_missing=True)
        for network in self.networks:
            m.network.delete_network(network, ignore_missing=True)
        for flavor in self.flavors:
            self.admin.compute.delete_flavor(flavor, ignore_missing=True)
        for image in self.images:
            self.admin.image.delete_image(image, ignore_missing=True)


@pytest.fixture
def made(admin, member):
    resources = Made(admin, member)
    yield resources
    resources.delete()


def _user_data(the_job):
    return base64.b64encode(guestjob.encode(the_job).encode()).decode()


def _wait_active(conn, server_id, timeout=300):
    deadline = time.monotonic() + timeout
    while True:
        server = conn.compute.get_server(server_id)
        if server.status == 'ACTIVE':
            return server
        if server.status == 'ERROR' or time.monotonic() > deadline:
            raise AssertionError(f'server {server_id}: {server.status} '
                                 f'{server.fault}')
        time.sleep(2)


def _wait_port_active(conn, port_id, timeout=120):
    deadline = time.monotonic() + timeout
    while True:
        port = conn.network.get_port(port_id)
        if port.status == 'ACTIVE' or time.monotonic() > deadline:
            return port
        time.sleep(2)


def _wait_consoles(conn, servers, said, timeout):
    """{id: console} once ``said(console, id)`` holds for every guest
    (``guests.ready``: ready or serving or a verdict; ``guests.status``:
    a verdict), or at the timeout."""
    deadline = time.monotonic() + timeout
    while True:
        texts = {s.id: conn.compute.get_server_console_output(s)['output']
                 for s in servers}
        if all(said(texts[s.id], s.id) for s in servers) or \
                time.monotonic() > deadline:
            return texts
        time.sleep(5)


@pytest.mark.compute('libvirt')
def test_two_guests_iperf3_over_neutron(neutron_cloud, admin, member, made):
    if not os.path.exists(NET_IMAGE):
        pytest.fail(f'{NET_IMAGE} missing (build it: kvmtune image build '
                    '--with-net --output '
                    f'{os.path.dirname(NET_IMAGE)})')
    name = PREFIX + 'net-' + uuid.uuid4().hex[:6]
    # An ephemeral disk like the benchmark flavors (the boot disk is
    # never a benchmark target); 256 MB for the guest with iperf3.
    flavor = admin.compute.create_flavor(name=name, ram=256, vcpus=1,
                                         disk=1, ephemeral=1)
    made.flavors.append(flavor)
    image = admin.image.create_image(
        name=name, filename=NET_IMAGE, disk_format='raw',
        container_format='bare', visibility='public', wait=True,
        validate_checksum=False)
    made.images.append(image)

    # As the member user, as Rally's network context would.
    network = member.network.create_network(name=name)
    made.networks.append(network)
    subnet = member.network.create_subnet(name=name, network_id=network.id,
                                          ip_version=4, cidr=CIDR)
    made.subnets.append(subnet)
    ports = []
    for address in ADDRESSES:
        port = member.network.create_port(
            name=name, network_id=network.id,
            fixed_ips=[{'subnet_id': subnet.id, 'ip_address': address}])
        made.ports.append(port)
        ports.append(port)

    workload = workloads.get('iperf3-tcp-stream')
    jobs = (guestjob.build(workload, role='server', start_at=time.time(),
                           runtime=RUNTIME, hold=True,
                           address=ADDRESSES[0] + '/24'),
            guestjob.build(workload, role='client', start='nmi',
                           runtime=RUNTIME, peer=ADDRESSES[0], hold=True,
                           address=ADDRESSES[1] + '/24'))
    servers = []
    for role, port, the_job in zip(('server', 'client'), ports, jobs):
        server = member.compute.create_server(
            name=f'{name}-{role}', flavor_id=flavor.id, image_id=image.id,
            networks=[{'port': port.id}], user_data=_user_data(the_job))
        made.servers.append(server.id)
        servers.append(server)
    servers = [_wait_active(member, s.id) for s in servers]

    for server, port, address in zip(servers, ports, ADDRESSES):
        # Binding details are admin-only by policy.
        bound = _wait_port_active(admin, port.id)
        assert bound.status == 'ACTIVE', bound
        assert bound.binding_vif_type == 'ovs', bound.binding_vif_type
        assert bound.binding_vif_details.get('datapath_type') == 'netdev'
        assert bound.device_id == server.id
        seen = [a['addr'] for a in server.addresses.get(network.name, [])]
        assert seen == [address], server.addresses

    server, client = servers
    said = _wait_consoles(member, servers, guests.ready, READY_TIMEOUT)
    for guest, wanted in ((server, 'serving'), (client, 'ready')):
        state = console.status(said[guest.id], guest.id) or ('nothing',)
        assert state[0] == wanted, (
            f'{guest.name}: {state[0]} after up to {READY_TIMEOUT} s, not '
            f'{wanted}: {said[guest.id][-3000:]}')
    # the start signal: an NMI (Nova's crash dump trigger, API 2.17, a
    # project member's right), as the scenarios send it
    member.compute.trigger_server_crash_dump(client)
    text = _wait_consoles(member, [client], guests.status,
                          RUNTIME + RESULT_TIMEOUT)[client.id]
    # an ok line carries the guest's times (ready=, start=, ...); the
    # verdict is its first word
    assert console.status(text, client.id)[0] == 'ok', text[-3000:]
    (payload,) = console.extract(text, client.id)
    emulated = neutron_cloud.state.get('virt_type') != 'kvm'
    result = parsers.parse('iperf3', payload['raw'], emulated=emulated)
    print(f'\niperf3 guest to guest over Neutron ML2/OVS (netdev '
          f'datapath): {result["gbit_s"]:.3f} Gbit/s'
          + (', emulated (QEMU TCG)' if emulated else ''))
    assert result['gbit_s'] > 0


@pytest.mark.compute('libvirt')
def test_member_router_on_subnet(neutron_cloud, member):
    """What Rally's network@openstack context does by default (router
    {"external": true}): a router without gateway (no external network
    here), the subnet plugged into it, and all of it removed again. The
    router plugin has no L3 agent: API objects only."""
    name = PREFIX + 'router-' + uuid.uuid4().hex[:6]
    assert not list(member.network.networks(is_router_external=True))
    network = member.network.create_network(name=name)
    try:
        subnet = member.network.create_subnet(
            name=name, network_id=network.id, ip_version=4,
            cidr='10.2.1.0/24')
        router = member.network.create_router(name=name)
        try:
            member.network.add_interface_to_router(router,
                                                   subnet_id=subnet.id)
            ports = list(member.network.ports(device_id=router.id))
            assert [p.fixed_ips[0]['ip_address'] for p in ports] == \
                ['10.2.1.1']
            member.network.remove_interface_from_router(
                router, subnet_id=subnet.id)
        finally:
            member.network.delete_router(router, ignore_missing=True)
    finally:
        member.network.delete_network(network, ignore_missing=True)
    assert member.network.find_network(name) is None
