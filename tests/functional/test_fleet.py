"""The test fleet works: four hosts, each
Debian's sshd of its own on its own loopback address, reached over real
SSH with a key the test makes (tests/fleet.py), each with the facts and
boot state of a different real capture, each paired with a nova-compute
of the multi-host test cloud under the same host name (the NUMA fake
driver with that host's facts, ``cloud up --computes 5 --compute-facts``),
and Ansible (ansible-core from PyPI, tools/bootstrap's fleet-venv)
reaching all four. The reboot in the last test is SIMULATED
(Fleet.reboot): this machine's kernel is shared by the hosts.

The module brings up a cloud of its own (new databases and credentials)
and takes it down: tools/run-functional runs it alone, after the tier,
holding the test cloud's lock.
"""

import json
import os
import pathlib
import subprocess
import sys
import time

import pytest

from kvmtune.testcloud import api
from kvmtune.testcloud import novacompute
from kvmtune.testcloud import procs
from tests import fleet as test_fleet
from tests.functional.conftest import ADMIN
from tests.functional.test_multihost import _numa_shape
from tests import paths

CLOUD = (sys.executable, '-m', 'kvmtune.cli', 'cloud')
UP_BOUND = 900
# tools/bootstrap --tests makes it (KVMTUNE_CONSUMERS, as there)
ANSIBLE = pathlib.Path(os.environ.get(
    'KVMTUNE_CONSUMERS', '/opt/kvmtune-consumers'), 'fleet-venv', 'bin',
    'ansible')
# the fleet's hosts are the cloud's extra computes 2..5, by their names
NAMES = [novacompute.extra_host(i) for i in range(2, 6)]


def _cloud(*argv):
    done = subprocess.run([*CLOUD, *argv], capture_output=True, text=True,
                          timeout=UP_BOUND)
    return done.returncode, done.stdout + done.stderr


@pytest.fixture(scope='module')
def fleet(tmp_path_factory):
    started = time.monotonic()
    hosts = test_fleet.Fleet(tmp_path_factory.mktemp('fleet'), NAMES)
    hosts.start()
    try:
        facts = []
        for host in hosts.hosts:
            facts += ['--compute-facts', str(hosts.write_facts(host))]
        _cloud('down')
        rc, out = _cloud('up', '--compute', 'fake', '--network', 'stub',
                         '--computes', str(len(NAMES) + 1), *facts)
        assert rc == 0, out
        print(f'\nfleet of {len(NAMES)} hosts and its cloud up in '
              f'{time.monotonic() - started:.0f} s')
        yield hosts
    finally:
        hosts.stop()
        _cloud('down')


@pytest.fixture(scope='module')
def admin(fleet):
    import openstack

    os.environ['OS_CLIENT_CONFIG_FILE'] = api.env()['OS_CLIENT_CONFIG_FILE']
    conn = openstack.connect(cloud=ADMIN)
    yield conn
    conn.close()


def _expected(capture):
    with open(os.path.join(paths.HOSTS, capture, 'expected.json')) as f:
        return json.load(f)


def test_each_host_answers_over_ssh_at_its_address_from_its_tree(fleet):
    for host in fleet.hosts:
        done = fleet.ssh(host.name, 'echo "$SSH_CONNECTION"; kvmtune host '
                         'inspect --root "$KVMTUNE_ROOT" -f json')
        assert done.returncode == 0, done.stderr
        connection, text = done.stdout.split('\n', 1)
        facts = json.loads(text)
        expected = _expected(host.capture)
        # sshd of that address answered, and read that host's tree: the
        # topology its capture's own tool (lstopo/lscpu) recorded
        assert connection.split()[2:] == [host.address, str(test_fleet.PORT)]
        assert facts['source'] == str(host.root)
        assert facts['cpu']['online'] == expected['online']
        assert {str(n['id']): n['cpus'] for n in facts['numa']['nodes']} \
            == expected['nodes']
        print(f"{host.name} {host.address}: {host.capture} over "
              f"{host.distro}, {len(facts['cpu']['online'])} CPUs, "
              f"{len(facts['numa']['nodes'])} NUMA node(s), booted "
              f"{facts['kernel']['cmdline'][:50]!r}")
    shapes = {(len(_expected(h.capture)['online']),
               len(_expected(h.capture)['nodes'])) for h in fleet.hosts}
    assert len(shapes) == len(fleet.hosts)      # four different shapes


def test_ansible_reaches_every_host_over_ssh(fleet):
    assert ANSIBLE.is_file(), 'run tools/bootstrap --tests (the fleet-venv)'
    done = subprocess.run(
        [str(ANSIBLE), '-i', str(fleet.inventory()), 'computes', '-m',
         'ansible.builtin.command', '-a',
         'cat {{ kvmtune_root }}/proc/sys/kernel/random/boot_id'],
        capture_output=True, text=True, timeout=300,
        env=fleet.ansible_env())
    assert done.returncode == 0, done.stdout + done.stderr
    print(done.stdout)
    for host in fleet.hosts:
        boot_id = (host.root / 'proc/sys/kernel/random/boot_id').read_text()
        assert f'{host.name} | CHANGED | rc=0 >>\n{boot_id.strip()}\n' \
            in done.stdout
    ping = subprocess.run(
        [str(ANSIBLE), '-i', str(fleet.inventory()), 'computes', '-m',
         'ansible.builtin.ping'], capture_output=True, text=True,
        timeout=300, env=fleet.ansible_env())
    assert ping.returncode == 0, ping.stdout + ping.stderr
    assert sorted(line.split(' |')[0] for line in ping.stdout.splitlines()
                  if '| SUCCESS =>' in line) == sorted(NAMES)


def test_each_host_is_a_nova_compute_of_its_shape(fleet, admin):
    hypervisors = {h.name: h for h in admin.compute.hypervisors()}
    for host in fleet.hosts:
        assert hypervisors[host.name].state == 'up', host.name
        service, = admin.compute.services(host=host.name,
                                          binary='nova-compute')
        assert service.status == 'enabled'
        cells, _ = _numa_shape(host.name)
        assert cells == len(_expected(host.capture)['nodes']), host.name


def test_simulated_reboot_boots_what_boot_apply_staged(fleet, admin):
    # a 4-node capture without 2M pages, Debian's boot files: update-grub
    host = fleet.hosts[2]
    apply = ('kvmtune boot apply --profile pinned-hugepages --root '
             '"$KVMTUNE_ROOT" -f json')
    done = fleet.ssh(host.name, apply)
    assert done.returncode == 0, done.stderr
    staged = json.loads(done.stdout)
    assert staged['reboot_required'] and staged['loader'] == 'grub-debian'
    pool = next(arg for arg in staged['kernel_args']
                if arg.startswith('hugepages='))
    pages = int(pool.partition('=')[2])
    assert 2048 not in _numa_shape(host.name)[1]    # no 2M pages yet
    old_boot = (host.root / 'proc/sys/kernel/random/boot_id').read_text()
    pids = procs.load_state(api.layout())['services']
    service = f'nova-compute-{NAMES.index(host.name) + 2}'

    def restart(name):
        rc, out = _cloud('restart-compute', '--host', name)
        assert rc == 0, out

    print(f'SIMULATED reboot of {host.name} (not a real one: the test '
          'writes the booted command line, pools and boot id, and '
          'restarts its nova-compute)')
    line = fleet.reboot(host.name, restart_compute=restart)
    for arg in staged['kernel_args']:
        assert arg in line.split()
    assert (host.root / 'proc/sys/kernel/random/boot_id').read_text() \
        != old_boot
    assert procs.load_state(api.layout())['services'][service] \
        != pids[service]
    # Nova sees the pool the reboot reserved, on the host's NUMA cells
    cells, sizes = _numa_shape(host.name)
    assert (cells, sizes) == (4, {2048})
    print(f'{host.name}: booted {line!r}; 2M pool of {pages} pages; '
          f'Nova: {cells} cells with {sizes} kB pages')
    # booted: a second boot apply has nothing to do and drops the record
    again = json.loads(fleet.ssh(host.name, apply).stdout)
    assert (again['reboot_required'], again['record'],
            again['files']) == (False, 'removed', [])
    service_of = admin.compute.services(host=host.name, binary='nova-compute')
    assert [s.state for s in service_of] == ['up']
