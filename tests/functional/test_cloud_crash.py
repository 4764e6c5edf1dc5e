"""The test cloud after a crash, and its stop.

`kvmtune cloud up` after every service of a cloud with a running guest was
SIGKILLed comes up by itself: no "a cloud is already up", no manual
clean-up; the crashed cloud's guest (its libvirt domain and tap) does not
outlive it. `kvmtune cloud down` then stops every service on SIGTERM
within its bound (kvmtune.testcloud.stop.STOP_GRACE), SIGKILLing none.

This module takes the cloud down and brings up a fresh one (new
databases and credentials), which would pull the cloud from under the
session fixtures of the rest of the tier: tools/run-functional runs it
alone, after the tier, in the libvirt pass (the main run --ignores it).
"""

import os
import pathlib
import signal
import subprocess
import sys
import time
import uuid

import pytest

from kvmtune.testcloud import api
from kvmtune.testcloud import procs
from kvmtune.testcloud import stop
from kvmtune.testcloud import system
from tests.functional.conftest import ADMIN
from tests.functional.conftest import BENCH_IMAGE
from tests.functional.conftest import PREFIX

pytestmark = pytest.mark.compute('libvirt')
CLOUD = (sys.executable, '-m', 'kvmtune.cli', 'cloud')
UP_BOUND = 900      # hang bound: up takes ~110 s here


def cloud(*argv):
    done = subprocess.run([*CLOUD, *argv], capture_output=True, text=True,
                          timeout=UP_BOUND)
    return done.returncode, done.stdout + done.stderr


def connect():
    import openstack

    os.environ['OS_CLIENT_CONFIG_FILE'] = api.env()['OS_CLIENT_CONFIG_FILE']
    return openstack.connect(cloud=ADMIN)


def guest_on_a_network(conn):
    """A server on a tenant network of its own (a tap on br-int): what a
    sweep leaves running when the cloud dies under it."""
    name = PREFIX + 'crash-' + uuid.uuid4().hex[:6]
    net = conn.network.create_network(name=name)
    conn.network.create_subnet(network_id=net.id, ip_version=4,
                               cidr='10.250.0.0/24', enable_dhcp=False)
    image = conn.image.create_image(
        name=name, filename=str(BENCH_IMAGE), disk_format='raw',
        container_format='bare', wait=True, validate_checksum=False)
    flavor = conn.compute.create_flavor(name=name, ram=128, vcpus=1,
                                        disk=1)
    server = conn.compute.create_server(name=name, flavor_id=flavor.id,
                                        image_id=image.id,
                                        networks=[{'uuid': net.id}])
    server = conn.compute.wait_for_server(server, wait=300)
    port, = conn.network.ports(device_id=server.id)
    return server.id, 'tap' + port.id[:11]


def test_cloud_up_after_every_service_was_killed_comes_back_by_itself(
        test_cloud):
    assert test_cloud.compute_mode == 'libvirt'
    conn = connect()
    server, tap = guest_on_a_network(conn)
    conn.close()
    assert server in system.virsh('list', '--uuid').stdout.split()
    assert pathlib.Path('/sys/class/net', tap).exists()
    lay = api.layout()
    services = procs.load_state(lay)['services']
    for pid in services.values():     # kill -9 of every service
        os.kill(pid, signal.SIGKILL)
    procs.wait_until(lambda: not any(procs.alive(p)
                                     for p in services.values()),
                     60, 'the killed services')
    left = procs.owned_pids(lay)
    print(f'\n{len(services)} services SIGKILLed; {len(left)} of the '
          'cloud\'s processes outlived them: ' + ', '.join(
              procs.cmdline(p)[:40] for p in left))
    started = time.monotonic()
    rc, out = cloud('up', '--compute', 'libvirt')
    seconds = time.monotonic() - started
    assert rc == 0, out
    assert 'was not taken down (its services died): cleaning up' in out
    assert 'cleaned up: ' in out
    # the crashed cloud's guest went with it
    assert server not in system.virsh('list', '--all', '--uuid').stdout
    assert not pathlib.Path('/sys/class/net', tap).exists()
    assert api.status()['not_running'] == []
    print(f'cloud up after the kill: rc {rc} in {seconds:.0f} s; '
          + ' | '.join(line for line in out.splitlines()
                       if 'cleaned up' in line or 'SIGKILL' in line or
                       'destroyed' in line or 'not taken down' in line))


def test_cloud_down_stops_every_service_within_its_grace(test_cloud):
    """With a guest running (nova-compute has one to stop), every service
    ends on SIGTERM within its bound (STOP_GRACE s, nova-compute and the
    OVS agent STOP_TIMEOUT's). Only the OVS agent is SIGKILLed, with the
    line saying why, after its own shutdown: its process never ends
    (stop.STOP_NOTE). Before: the RPC server was SIGKILLed too (Neutron's
    60 s graceful_shutdown_timeout)."""
    conn = connect()
    server, tap = guest_on_a_network(conn)
    conn.close()
    agent_log = api.layout().log_file('neutron-openvswitch-agent')
    with open(agent_log, 'rb') as f:
        offset = len(f.read())
    started = time.monotonic()
    rc, out = cloud('down')
    seconds = time.monotonic() - started
    assert rc == 0, out
    killed = [line for line in out.splitlines() if 'SIGKILL' in line]
    agent = 'neutron-openvswitch-agent'
    assert len(killed) == 2 and killed[0].startswith(f'{agent} (pid '), out
    assert killed[0].endswith(f'still running 15 s after SIGTERM: SIGKILL '
                              f'({stop.STOP_NOTE[agent]})'), out
    assert f'{agent} (SIGKILL)' in killed[1] and \
        killed[1].count('SIGKILL') == 1, out
    with open(agent_log, 'rb') as f:
        f.seek(offset)
        assert b'Agent caught SIGTERM, quitting daemon loop' in f.read()
    assert server not in system.virsh('list', '--all', '--uuid').stdout
    assert not pathlib.Path('/sys/class/net', tap).exists()
    print(f'\ncloud down in {seconds:.0f} s (bound: {stop.STOP_GRACE} s a '
          f'service, nova-compute {stop.STOP_TIMEOUT["nova-compute"]} s):'
          f' {out.strip().splitlines()[-1]}')
