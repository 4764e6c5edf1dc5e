"""A rollout's cloud side on the real test cloud and the real test fleet
(tests/fleet.py): four hosts, each Debian's sshd on its own loopback
address, paired with the fake nova-computes kvmtune-compute-2..5 of a
cloud brought up here (``cloud up --computes 5 --network stub``, each
fake shaped by its host's facts) and taken down at the end.

Guests are booted on the fleet's computes (pinned, huge-page and shared;
some stopped), then each host in turn goes through ``kvmtune
rollout-step`` as the rollout's roles call it: preflight, disable, drain,
the change (``boot apply`` over SSH, ``nova-conf apply`` of the
cpu-pinning profile into the host's nova-compute file), a SIMULATED
reboot (Fleet.reboot: this machine's kernel is shared by the hosts; the
host's nova-compute is restarted), the gate, enable. Shown: every host
empty before its reboot; every guest there afterwards, in its status
before; os-services never with more disabled hosts than the batch (one);
a failed gate leaves the host disabled with its reason; a too full fleet
refused by preflight with nothing disabled; an unknown host and missing
credentials one line, exit 2; a rollout run again makes nothing.

What the fake driver does, read from the test cloud's Nova
(/opt/kvmtune-cloud/venv, nova/virt/fake.py and nova/compute/manager.py):
it live-migrates (``live_migration`` calls Nova's post method,
``post_live_migration_at_destination`` spawns the guest there) and
cold-migrates (``migrate_disk_and_power_off``, ``finish_migration``,
``confirm_migration``), but it never sets
``dst_supports_numa_live_migration`` (only the libvirt driver does), so
Nova live-migrates a pinned or huge-page guest without a NUMA claim on the
destination: it would keep its source host's pinning. Pinned and
huge-page guests are therefore SHUTOFF here (moved cold, claimed by
Nova's resize claim); the ACTIVE ones are shared guests (moved live).

The module brings up a cloud of its own and takes it down: run it alone,
holding the test cloud's lock (``flock /run/lock/kvmtune-testcloud.lock``).
"""

import json
import os
import shutil
import subprocess
import sys
import threading
import uuid

import pytest

from kvmtune.facts import kernel
from kvmtune.rollout import state as states
from kvmtune.testcloud import api
from kvmtune.testcloud import novacompute
from kvmtune.testcloud import procs
from tests import fleet as test_fleet
from tests.functional.conftest import ADMIN
from tests.functional.conftest import PREFIX
from tests.functional.conftest import Servers

CLOUD = (sys.executable, '-m', 'kvmtune.cli', 'cloud')
KVMTUNE = (sys.executable, '-m', 'kvmtune.cli')
UP_BOUND = 900
NAMES = [novacompute.extra_host(i) for i in range(2, 6)]
PROFILE = 'cpu-pinning'
RUN = 'ft-' + uuid.uuid4().hex[:6]
# a 2 MiB pool on these hosts' trees before their facts are taken, so
# their fakes report huge pages (the third capture has none of its own)
POOLS = {NAMES[0]: 'hugepagesz=2M hugepages=256',
         NAMES[1]: 'hugepagesz=2M hugepages=256'}


def _cloud(*argv):
    done = subprocess.run([*CLOUD, *argv], capture_output=True, text=True,
                          timeout=UP_BOUND)
    return done.returncode, done.stdout + done.stderr


def kvmtune(*argv, env=None):
    done = subprocess.run([*KVMTUNE, *argv], capture_output=True,
                          text=True, timeout=1200,
                          env={**os.environ, **(env or {})})
    return done.returncode, done.stdout, done.stderr


def step(name, host, *argv, env=None):
    hosts = [host] if isinstance(host, str) else host
    return kvmtune('rollout-step', name, '--os-cloud', ADMIN, '--run-id',
                   RUN, *[a for h in hosts for a in ('--host', h)], *argv,
                   env=env)


def _drain_killed_after_its_first_move(host):
    """The drain SIGKILLed as soon as its first migration request was
    answered (the test hook KVMTUNE_TEST_KILL_AFTER_CALL=N of
    kvmtune.openstack.connection, N counted up until the request killed
    after is a server action): the line naming that request."""
    for calls in range(1, 60):
        rc, out, err = step('drain', host,
                            env={'KVMTUNE_TEST_KILL_AFTER_CALL': str(calls)})
        assert rc != 0, f'the drain finished within {calls} requests'
        if 'SIGKILL after request' in err and '/action' in err:
            return err.strip().splitlines()[-1]
    raise AssertionError('no server action within 60 requests')


@pytest.fixture(scope='module')
def fleet(tmp_path_factory):
    hosts = test_fleet.Fleet(tmp_path_factory.mktemp('fleet'), NAMES)
    hosts.start()
    try:
        facts = []
        for host in hosts.hosts:
            if host.name in POOLS:
                hosts._set_pools(host, kernel.parse_args(POOLS[host.name]))
            facts += ['--compute-facts', str(hosts.write_facts(host))]
        _cloud('down')
        rc, out = _cloud('up', '--compute', 'fake', '--network', 'stub',
                         '--computes', str(len(NAMES) + 1), *facts)
        assert rc == 0, out
        os.environ['OS_CLIENT_CONFIG_FILE'] = \
            api.env()['OS_CLIENT_CONFIG_FILE']
        _conf_in_trees(hosts)
        yield hosts
    finally:
        hosts.stop()
        _cloud('down')


def _conf_in_trees(hosts):
    """Each fleet host's nova-compute file lives in its tree, at
    /etc/nova/nova.conf (where ``nova-conf apply`` and the gate's
    novacompute layer find it under ``--root``); the cloud's path to it
    becomes a link there, so the fake compute reads the same file."""
    layout = api.layout()
    for entry in procs.computes_of(procs.load_state(layout), layout):
        if entry['host'] not in NAMES:
            continue
        tree = hosts.host(entry['host']).root / 'etc' / 'nova'
        tree.mkdir(parents=True, exist_ok=True)
        shutil.move(entry['conf'], tree / 'nova.conf')
        os.symlink(tree / 'nova.conf', entry['conf'])


@pytest.fixture(scope='module')
def admin(fleet):
    import openstack

    conn = openstack.connect(cloud=ADMIN)
    yield conn
    conn.close()


@pytest.fixture(scope='module')
def flavors(admin):
    made = {}
    for name, specs in (('shared', {}),
                        ('pinned', {'hw:cpu_policy': 'dedicated'}),
                        ('huge', {'hw:mem_page_size': '2048'})):
        flavor = admin.compute.create_flavor(
            name=f'{PREFIX}{name}-{RUN}', ram=128, vcpus=1, disk=1,
            is_public=True)
        if specs:
            admin.compute.create_flavor_extra_specs(flavor, specs)
        made[name] = flavor
    yield made
    for flavor in made.values():
        admin.compute.delete_flavor(flavor.id, ignore_missing=True)


@pytest.fixture(scope='module')
def image(admin, tmp_path_factory):
    path = tmp_path_factory.mktemp('image') / 'blank.raw'
    path.write_bytes(b'\0' * (1024 * 1024))
    made = admin.image.create_image(
        name=f'{PREFIX}image-{RUN}', filename=str(path), disk_format='raw',
        container_format='bare', wait=True, validate_checksum=False)
    yield made
    admin.image.delete_image(made.id, ignore_missing=True)


# (host, flavor, stopped?): every fleet host gets guests; huge-page ones
# where pools are
GUESTS = [(NAMES[0], 'shared', False), (NAMES[0], 'huge', True),
          (NAMES[1], 'shared', False), (NAMES[1], 'pinned', True),
          (NAMES[1], 'huge', True), (NAMES[2], 'shared', False),
          (NAMES[2], 'shared', False), (NAMES[2], 'pinned', True),
          (NAMES[3], 'shared', False), (NAMES[3], 'shared', True)]


@pytest.fixture(scope='module')
def guests(admin, flavors, image):
    made = Servers(admin)
    try:
        for n, (host, flavor, stopped) in enumerate(GUESTS):
            made.host = host
            server = made.boot(f'{PREFIX}{flavor}-{n}', flavors[flavor].id,
                               image.id)
            assert server.status == 'ACTIVE', (host, flavor, server.fault)
            if stopped:
                admin.compute.stop_server(server)
                admin.compute.wait_for_server(server, status='SHUTOFF',
                                              wait=120)
        yield made
    finally:
        made.delete_all()


@pytest.fixture(scope='module')
def tuned_flavor(admin, fleet, flavors):
    """The profile's flavor (``flavor apply``, once, the cloud half of the
    change): the gate's cloud layer checks it carries the profile's
    extra specs."""
    name = f'{PREFIX}{PROFILE}-{RUN}'
    rc, out, err = kvmtune('flavor', 'apply', '--os-cloud', ADMIN,
                           '--profile', PROFILE, '--from',
                           flavors['shared'].name, '--name', name, '--root',
                           str(fleet.hosts[0].root))
    assert rc == 0, out + err
    yield name
    made = admin.compute.find_flavor(name)
    if made is not None:
        admin.compute.delete_flavor(made.id, ignore_missing=True)


def _statuses(admin):
    return {s.id: (s.status, s.compute_host) for s in
            admin.compute.servers(all_projects=True)
            if s.name.startswith(PREFIX)}


def _disabled(admin):
    return {s.host: s.disabled_reason for s in
            admin.compute.services(binary='nova-compute')
            if s.status == 'disabled'}


# KVMTUNE_SAVE_ROLLOUT_RECORDING=FILE: the answers of the reads the
# rollout's steps make, taken from the live cloud during the run, saved for
# the unit tier (tests/fixtures/rollout/, keyed "compute <path>")
RECORD = os.environ.get('KVMTUNE_SAVE_ROLLOUT_RECORDING')
RECORDED = {}


def _record(admin, path):
    if RECORD:
        RECORDED[f'compute {path}'] = admin.compute.get(
            path, microversion='2.86').json()


def _save_recording():
    if RECORD:
        with open(RECORD, 'w') as f:
            json.dump(RECORDED, f, indent=1, sort_keys=True)
            f.write('\n')


def _facts_dir(fleet, directory):
    """HOST.json (the host's facts now) and HOST.conf (its nova-compute
    file now) per fleet host, as ``--facts-dir`` takes them."""
    directory.mkdir(exist_ok=True)
    for host in fleet.hosts:
        shutil.copy(host.facts_file, directory / f'{host.name}.json')
        shutil.copy(host.root / 'etc/nova/nova.conf',
                    directory / f'{host.name}.conf')
    return str(directory)


def test_an_unknown_host_and_no_credentials_are_one_line_exit_2(
        fleet, admin, tmp_path):
    rc, out, err = step('disable', 'no-such-compute', '--profile', PROFILE)
    print(err)
    assert (rc, out) == (2, '')
    assert len(err.splitlines()) == 1 and "'no-such-compute'" in err
    assert all(name in err for name in NAMES)
    empty = tmp_path / 'clouds.yaml'
    empty.write_text('clouds: {}\n')
    rc, out, err = kvmtune('rollout-step', 'disable', '--os-cloud', ADMIN,
                           '--host', NAMES[0], '--run-id', RUN,
                           '--profile', PROFILE,
                           env={'OS_CLIENT_CONFIG_FILE': str(empty)})
    print(err)
    assert rc == 2 and len(err.splitlines()) == 1 and ADMIN in err
    assert _disabled(admin) == {}


def test_a_too_full_fleet_is_refused_with_nothing_disabled(
        fleet, admin, image, tmp_path):
    """A guest so large that no other compute has the memory: the
    preflight of its host refuses, naming host, flavor and MEMORY_MB."""
    room = {}
    for node in admin.compute.hypervisors(details=True):
        body = admin.placement.get(
            f'/resource_providers/{node.id}/inventories',
            microversion='1.6').json()['inventories']['MEMORY_MB']
        used = admin.placement.get(
            f'/resource_providers/{node.id}/usages',
            microversion='1.6').json()['usages'].get('MEMORY_MB', 0)
        room[node.name] = int((body['total'] - body['reserved']) *
                              body['allocation_ratio']) - used
    host = max(room, key=room.get)
    ram = max(v for k, v in room.items() if k != host) + 1
    print(f'\nMEMORY_MB room: {room}; a {ram} MB guest on {host}')
    assert host in NAMES and room[host] >= ram
    flavor = admin.compute.create_flavor(name=f'{PREFIX}big-{RUN}', ram=ram,
                                         vcpus=1, disk=1, is_public=True)
    big = Servers(admin, host)
    try:
        server = big.boot(f'{PREFIX}big', flavor.id, image.id)
        assert server.status == 'ACTIVE', server.fault
        before = _statuses(admin)
        rc, out, err = step('preflight', host, '--profile', PROFILE,
                            '--facts-dir', _facts_dir(fleet, tmp_path / 'f'))
        print(out, err)
        assert rc == 2
        line, = err.splitlines()
        assert line.startswith(f'kvmtune: error: host {host}: preflight: '
                               f'server {server.id} ')
        assert f'flavor {PREFIX}big-{RUN}' in line
        others = sorted(name for name in room if name != host)
        assert f'MEMORY_MB on {", ".join(others)} (fix: ' in line
        assert _disabled(admin) == {} and _statuses(admin) == before
    finally:
        big.delete_all()
        admin.compute.delete_flavor(flavor.id, ignore_missing=True)


class ServicesWatch:
    """os-services polled in the background: the most hosts it ever
    showed disabled at once."""

    def __init__(self):
        import openstack

        self.conn = openstack.connect(cloud=ADMIN)
        self.most = 0
        self.seen = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stop.is_set():
            self.most = max(self.most, len(_disabled(self.conn)))
            self.seen += 1
            self.stop.wait(0.5)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        self.conn.close()


def _apply(fleet, host):
    """The change (the rollout's apply role): kernel arguments staged, the
    profile's options in the host's nova-compute file."""
    for command in ('boot apply', 'nova-conf apply'):
        extra = ' --config "$KVMTUNE_ROOT/etc/nova/nova.conf" --service ' \
            'compute' if command == 'nova-conf apply' else ''
        done = fleet.ssh(host, f'kvmtune {command} --profile {PROFILE} '
                               f'--root "$KVMTUNE_ROOT"{extra}')
        assert done.returncode == 0, (command, done.stdout, done.stderr)


def _restart(name):
    rc, out = _cloud('restart-compute', '--host', name)
    assert rc == 0, out


def _gate(fleet, host):
    return step('gate', host, '--profile', PROFILE, '--root',
                str(fleet.host(host).root), '--nova-config-file',
                '/etc/nova/nova.conf')


def test_each_host_drained_changed_gated_and_enabled_in_turn(
        fleet, admin, guests, tuned_flavor, tmp_path):
    before = _statuses(admin)
    print('\nguests before:', json.dumps(before, indent=1))
    assert len(before) == len(GUESTS)
    statuses = {status for status, _ in before.values()}
    assert statuses == {'ACTIVE', 'SHUTOFF'}
    state_file = str(tmp_path / 'rollout.json')
    run, _ = states.open_run(state_file, PROFILE, RUN)
    with ServicesWatch() as watch:
        for n, host in enumerate(NAMES):
            facts_dir = _facts_dir(fleet, tmp_path / f'facts-{host}')
            rc, out, err = step('preflight', host, '--profile', PROFILE,
                                '--facts-dir', facts_dir, '--state',
                                state_file)
            print(out, err)
            assert rc == 0, err
            rc, out, err = step('disable', host, '--profile', PROFILE,
                                '--state', state_file)
            assert rc == 0, err
            assert _disabled(admin) == {
                host: f'kvmtune rollout {RUN}: {PROFILE}'}
            if n == 0:
                _record(admin, '/os-services?binary=nova-compute')
                _record(admin, f'/servers/detail?all_tenants=1&host={host}')
            if host == NAMES[-1]:
                # killed with its first move under way, then run again:
                # it goes on, and no guest is moved twice
                print('killed:', _drain_killed_after_its_first_move(host))
            rc, out, err = step('drain', host, '--state', state_file,
                                '-f', 'json')
            if host == NAMES[-1]:
                for guest in [k for k, (_, h) in before.items() if h == host]:
                    moved = admin.compute.get(
                        f'/os-migrations?instance_uuid={guest}',
                        microversion='2.86').json()['migrations']
                    print(guest, [(m['migration_type'], m['status'])
                                  for m in moved])
                    assert len(moved) == 1, moved
            if n == 0:
                _record(admin, f'/os-migrations?source_compute={host}')
                _save_recording()
            assert rc == 0, err
            moves = json.loads(out)['moves']
            print(f'{host} drained:', json.dumps(moves, indent=1))
            on_host = [s.id for s in admin.compute.servers(
                all_projects=True, compute_host=host)]
            assert on_host == [], (host, on_host)
            # its own guests moved (and those earlier drains put here)
            assert {k for k, (_, h) in before.items() if h == host} <= \
                {m['id'] for m in moves}
            if n == 0:
                # not changed yet: the gate does not pass and the host
                # stays disabled, with its reason
                rc, out, err = _gate(fleet, host)
                print(out, err)
                assert rc == 1
                assert 'the host stays disabled (fix: ' in out.splitlines(
                )[-1]
                assert _disabled(admin) == {
                    host: f'kvmtune rollout {RUN}: {PROFILE}'}
            _apply(fleet, host)
            run.mark(host, 'apply')
            print(f'SIMULATED reboot of {host}: '
                  f'{fleet.reboot(host, restart_compute=_restart)!r}')
            run.mark(host, 'reboot')
            rc, out, err = _gate(fleet, host)
            print(out, err)
            assert rc == 0, out + err
            run.mark(host, 'gate')
            rc, out, err = step('enable', host, '--state', state_file)
            assert rc == 0, err
            run.mark(host, 'textfile')
            assert _disabled(admin) == {}
    after = _statuses(admin)
    print('guests after:', json.dumps(after, indent=1))
    print(f'os-services polled {watch.seen} times; most disabled at once: '
          f'{watch.most}')
    assert watch.seen > 10 and watch.most == 1
    assert {k: s for k, (s, _) in after.items()} == \
        {k: s for k, (s, _) in before.items()}
    assert all(states.load(state_file).finished(h) for h in NAMES)

    # run again: finished, nothing disabled, migrated or changed
    for host in NAMES:
        for name in ('disable', 'drain', 'enable'):
            rc, out, err = step(name, host, '--state', state_file,
                                '--profile', PROFILE)
            assert rc == 0 and 'nothing made' in out, (name, out, err)
    assert _statuses(admin) == after and _disabled(admin) == {}
