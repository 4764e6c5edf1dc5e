"""A rollout on the real test cloud and the real test fleet
(tests/fleet.py): four hosts, each Debian's sshd on its own loopback
address, paired with the fake nova-computes kvmtune-compute-2..5 of a
cloud brought up here (``cloud up --computes 5 --network stub``, each
fake shaped by its host's facts) and taken down at the end.

Guests are booted on the fleet's computes (pinned, huge-page and shared;
some stopped), then ``kvmtune rollout`` runs the kvmtune.fleet
collection's playbook with ansible-playbook over SSH: preflight, disable,
drain, apply (``nova-conf apply`` and ``boot apply`` on the host), the
reboot through ansible.builtin.reboot whose ``reboot_command`` is the
test's SIMULATED reboot (``python -m tests.fleet reboot``: the hosts share
this machine's kernel; the staged command line becomes the booted one,
the pools it asks for are set, the boot id changes and the host's
nova-compute is restarted), the verify gate, enable, the textfile.
Shown: --mode in-place over a pinned guest whose CPUs the plan moves,
refused with nothing touched; the cpu-pinning profile in batches of one,
the controller SIGKILLed during a drain and run again; pinned-hugepages
in batches of two with a host that "boots" with a short huge page pool,
stopped at the gate (against the plan applied) while its batch-mate that
passed is enabled, run again unfixed and stopped again there (the plan
the run applied, kept in its state file), fixed and run again; the
batches in their printed order; every host empty at its reboot; every
guest there afterwards, in its status before; os-services, polled in the
background, never with more disabled hosts than the batch; a finished
rollout run again makes nothing. Also:
a too full fleet refused by preflight with nothing disabled; an unknown
host and missing credentials one line, exit 2.

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
import signal
import subprocess
import sys
import threading
import time
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
from tests import paths

CLOUD = (sys.executable, '-m', 'kvmtune.cli', 'cloud')
KVMTUNE = (sys.executable, '-m', 'kvmtune.cli')
UP_BOUND = 900
NAMES = [novacompute.extra_host(i) for i in range(2, 6)]
PROFILE = 'cpu-pinning'
# the second rollout: cpu-pinning's changes and a 2M pool at boot
PROFILE_2 = 'pinned-hugepages'
RUN = 'ft-' + uuid.uuid4().hex[:6]
# a 2 MiB pool on every host's tree before its facts are taken, so its
# fake reports huge pages and takes the huge-page guests of a batch
POOLS = {name: 'hugepagesz=2M hugepages=256' for name in NAMES}
# the fleet's ansible-core (tools/bootstrap --tests)
FLEET_BIN = os.path.join(os.environ.get(
    'KVMTUNE_CONSUMERS', '/opt/kvmtune-consumers'), 'fleet-venv', 'bin')
# what the hosts' reboot and restart commands need of this environment
CLOUD_ENV = ('KVMTUNE_CLOUD_DIR', 'KVMTUNE_CLOUD_VENV',
             'OS_CLIENT_CONFIG_FILE')


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
def tuned_flavors(admin, fleet, flavors):
    """The profiles' flavors (``flavor apply``, once, the cloud half of
    the change): the gate's cloud layer checks they carry the profiles'
    extra specs."""
    names = []
    try:
        for profile in (PROFILE, PROFILE_2):
            name = f'{PREFIX}{profile}-{RUN}'
            names.append(name)
            rc, out, err = kvmtune(
                'flavor', 'apply', '--os-cloud', ADMIN, '--profile',
                profile, '--from', flavors['shared'].name, '--name', name,
                '--root', str(fleet.hosts[0].root))
            assert rc == 0, out + err
        yield names
    finally:
        for name in names:
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


def _moved_pins(fleet, admin, profile):
    """[(host, server, its pinned CPUs the plan leaves out of the new
    cpu_dedicated_set)] over the fleet in inventory order: each host
    planned from its facts, each server's pinning read from Nova."""
    from kvmtune import facts as host_facts
    from kvmtune.facts.cpulist import parse_cpu_spec
    from kvmtune.tuning import plan

    moved = []
    for host in fleet.hosts:
        planned, = plan.for_host([profile], facts=host_facts.load(
            str(host.facts_file)))
        dedicated = parse_cpu_spec(
            planned.nova_conf['compute']['cpu_dedicated_set'])
        for server in admin.compute.servers(all_projects=True,
                                            compute_host=host.name):
            topology = admin.compute.get(f'/servers/{server.id}/topology',
                                         microversion='2.78').json()
            pins = {int(cpu) for cell in topology.get('nodes') or ()
                    for cpu in (cell.get('cpu_pinning') or {}).values()}
            if pins - dedicated:
                moved.append((host.name, server.id, server.status,
                              sorted(pins - dedicated)))
    return moved


def test_in_place_over_a_pinned_guest_whose_cpus_move_is_refused(
        fleet, admin, guests, tmp_path):
    """kvmtune rollout --mode in-place of cpu-pinning over the fleet and
    its guests: a pinned guest whose host's plan leaves the CPUs it is
    pinned to out of the new cpu_dedicated_set (a SHUTOFF guest holds its
    pinning in Nova too; Nova would only warn, and another guest could get
    those CPUs) is refused before any host is touched: exit 2, one line
    naming the host, the guest and the CPUs that move; no host disabled,
    none rebooted, every guest as it was."""
    moved = _moved_pins(fleet, admin, PROFILE)
    print(f'pinned guests whose CPUs {PROFILE} moves: {moved}')
    assert moved
    host, server, _, cpus = moved[0]
    before, booted = _statuses(admin), _boot_ids(fleet)
    state_file = tmp_path / 'in-place.json'
    rc, out, err = _rollout(fleet, *_rollout_argv(
        _inventory(fleet), PROFILE, 1, state_file), '--mode', 'in-place')
    assert (rc, out) == (2, '')
    line, = err.splitlines()
    assert f': the preflight refuses it: host {host}: in-place: server ' \
        f'{server} (' in line
    assert f'): pinned to CPUs {cpus} outside the new cpu_dedicated_set ' \
        in line
    assert '(fix: drain this host instead of changing it in place; ' \
        'nothing was touched; ' in line
    assert _disabled(admin) == {}
    assert _boot_ids(fleet) == booted and fleet.reboots() == []
    assert _statuses(admin) == before
    assert not state_file.exists()


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


def _restart(name):
    rc, out = _cloud('restart-compute', '--host', name)
    assert rc == 0, out


def _gate(fleet, host, profile):
    """The gate's three layers (host, novacompute, cloud) for ``host``,
    from this side: the host's tree and the file its nova-compute reads."""
    return step('gate', host, '--profile', profile, '--root',
                str(fleet.host(host).root), '--nova-config-file',
                '/etc/nova/nova.conf')


def _env():
    return {k: os.environ[k] for k in CLOUD_ENV if k in os.environ}


def _inventory(fleet):
    """The fleet's inventory for a rollout with the cloud: each host
    reboots by the SIMULATED reboot (kvmtune_reboot_command), restarts
    its fake nova-compute (kvmtune_restart_command), is verified on its
    host layer there (the gate's cloud layer runs on the controller) and
    has a node_exporter textfile directory in its tree."""
    env = [f'{k}={v}' for k, v in _env().items()]
    host_vars = {}
    for host in fleet.hosts:
        textfiles = host.root / 'var/lib/node_exporter/textfile_collector'
        textfiles.mkdir(parents=True, exist_ok=True)
        host_vars[host.name] = {
            'kvmtune_reboot_command': fleet.reboot_command(
                host.name, _env(), cloud=ADMIN),
            'kvmtune_restart_command': [
                '/usr/bin/env', *env, sys.executable, '-m', 'kvmtune.cli',
                'cloud', 'restart-compute', '--host', host.name],
            'kvmtune_verify_layers': ['host'],
            'kvmtune_textfile_dir': str(textfiles)}
    return str(fleet.inventory(host_vars))


def _rollout_argv(inventory, profile, batch, state_file):
    return [*KVMTUNE, 'rollout', '--inventory', inventory, '--os-cloud',
            ADMIN, '--profile', profile, '--batch', str(batch), '--state',
            str(state_file)]


def _rollout_env(fleet):
    return {**fleet.ansible_env(),
            'PATH': f'{FLEET_BIN}:{os.environ["PATH"]}',
            'PYTHONPATH': paths.REPO}


def _rollout(fleet, *argv):
    done = subprocess.run(list(argv), capture_output=True, text=True,
                          timeout=1800, env=_rollout_env(fleet))
    print(f'$ kvmtune rollout ... -> {done.returncode}')
    print(done.stdout, done.stderr)
    return done.returncode, done.stdout, done.stderr


def _printed(out):
    """(batches, [(host, step, status)]) of kvmtune rollout's lines."""
    batches = [line.split(': ', 1)[1].split() for line in out.splitlines()
               if line.startswith('batch ')]
    steps = [tuple(line.split()) for line in out.splitlines()
             if len(line.split()) == 3 and line.split()[0] in NAMES]
    return batches, steps


def _in_batch_order(steps, batches):
    """Every step line of a batch comes before any of the next batch's."""
    number = {h: n for n, hosts in enumerate(batches) for h in hosts}
    seen = [number[host] for host, _, _ in steps]
    assert seen == sorted(seen), seen


def _migrations(admin):
    return admin.compute.get('/os-migrations',
                             microversion='2.86').json()['migrations']


def _boot_ids(fleet):
    return {h.name: (h.root / 'proc/sys/kernel/random/boot_id').read_text()
            for h in fleet.hosts}


def _show_guests(label, statuses):
    print(f'guests {label} ({len(statuses)}):')
    for server, (status, host) in sorted(statuses.items()):
        print(f'  {server} {status} {host}')


def _same_guests(before, after):
    assert {k: s for k, (s, _) in after.items()} == \
        {k: s for k, (s, _) in before.items()}
    assert {s for s, _ in after.values()} <= {'ACTIVE', 'SHUTOFF'}


def _guests_kept_and_batches_held(admin, before, watch, batch):
    """Every guest there as before, and os-services, sampled throughout,
    never with more hosts disabled than the batch; the statuses after."""
    after = _statuses(admin)
    _show_guests('after', after)
    _same_guests(before, after)
    print(f'os-services polled {watch.seen} times; most disabled at once: '
          f'{watch.most}')
    assert watch.seen > 10 and 1 <= watch.most <= batch
    return after


def _ends_planned(fleet, admin, profile):
    """Every host: the gate's three layers PASS, enabled, a textfile."""
    for host in fleet.hosts:
        rc, out, err = _gate(fleet, host.name, profile)
        assert rc == 0, out + err
        print(out.splitlines()[-1])
        prom = (host.root / 'var/lib/node_exporter/textfile_collector/'
                'kvmtune_verify.prom')
        assert 'kvmtune_' in prom.read_text(), host.name
    assert _disabled(admin) == {}


def _tree(top):
    """{pid: command line} of ``top`` and every process under it (by
    parent; Ansible's workers make sessions of their own, os.setsid)."""
    parent, line = {}, {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open(f'/proc/{entry}/stat') as f:
                parent[int(entry)] = int(f.read().rsplit(')', 1)[1].split()[1])
            with open(f'/proc/{entry}/cmdline', 'rb') as f:
                line[int(entry)] = f.read().replace(b'\0', b' ').decode()
        except (OSError, ValueError, IndexError):
            continue
    found, todo = {}, [top]
    while todo:
        pid = todo.pop()
        if pid in line:
            found[pid] = line[pid]
        todo += [child for child, up in parent.items() if up == pid]
    return found


def _kill_tree(top):
    """The controller dies: ``top`` and everything under it stopped
    (SIGSTOP, until no new process appears), then SIGKILLed at once."""
    stopped = {}
    while True:
        new = {p: c for p, c in _tree(top).items() if p not in stopped}
        if not new:
            break
        for pid in new:
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass
        stopped.update(new)
    for pid in stopped:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return stopped


def _kill_during_drain(fleet, argv, host, admin):
    """kvmtune rollout started, then SIGKILLed with every process it
    started (ansible-playbook, its workers, the steps they run: the
    controller dies) while ``host``'s drain runs with a migration under
    way: the output so far."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            env=_rollout_env(fleet), start_new_session=True)
    output = []
    reader = threading.Thread(target=lambda: output.extend(proc.stdout),
                              daemon=True)
    reader.start()
    needle = f'rollout-step drain --host {host} '
    deadline = time.monotonic() + 1200
    killed = None
    while time.monotonic() < deadline and proc.poll() is None:
        if any(needle in c for c in _tree(proc.pid).values()):
            moving = [m for m in _migrations(admin)
                      if m['source_compute'] == host]
            if moving:
                gone = _kill_tree(proc.pid)
                drains = [p for p, c in gone.items() if needle in c]
                killed = [(m['instance_uuid'], m['migration_type'],
                           m['status']) for m in moving]
                break
        time.sleep(0.2)
    proc.wait(timeout=60)
    reader.join(timeout=60)
    print(''.join(output))
    assert killed is not None, 'the drain was not seen with a migration'
    print(f'SIGKILL to the rollout and the {len(gone)} processes under it '
          f'(the drain among them: {drains}) during the drain of {host}; '
          f'its migrations then: {killed}')
    assert drains and proc.returncode == -signal.SIGKILL
    return ''.join(output)


def test_the_playbook_rolls_cpu_pinning_out_one_host_at_a_time(
        fleet, admin, guests, tuned_flavors, tmp_path):
    """kvmtune rollout --batch 1 over the fleet with the cloud; each
    reboot is the SIMULATED one (ansible.builtin.reboot running the
    fleet's reboot command). The controller is SIGKILLed during the
    third host's drain and run again with the same state file: it goes
    on. A second run makes nothing."""
    before = _statuses(admin)
    _show_guests('before', before)
    assert len(before) == len(GUESTS)
    assert {status for status, _ in before.values()} == {'ACTIVE', 'SHUTOFF'}
    inventory = _inventory(fleet)
    state_file = tmp_path / 'rollout-1.json'
    argv = _rollout_argv(inventory, PROFILE, 1, state_file)
    started = time.monotonic()
    with ServicesWatch() as watch:
        killed = _kill_during_drain(fleet, argv, NAMES[2], admin)
        run_id = states.load(str(state_file)).run_id
        assert _disabled(admin) == {
            NAMES[2]: f'kvmtune rollout {run_id}: {PROFILE}'}
        _record(admin, '/os-services?binary=nova-compute')
        _record(admin, f'/servers/detail?all_tenants=1&host={NAMES[2]}')
        _record(admin, f'/os-migrations?source_compute={NAMES[2]}')
        _save_recording()
        rc, out, err = _rollout(fleet, *argv)
    print(f'rollout (killed, then run again): '
          f'{time.monotonic() - started:.0f} s')
    assert rc == 0, err
    # the killed run printed every batch in inventory order and went
    # through them in that order; the run again goes on with the two
    # hosts left, and leaves the two finished ones alone
    batches, steps = _printed(killed)
    assert batches == [[name] for name in NAMES]
    _in_batch_order(steps, batches)
    assert [h for h, s, st in steps if (s, st) == ('enable', 'changed')] \
        == NAMES[:2]
    batches, steps = _printed(out)
    assert batches == [[NAMES[2]], [NAMES[3]]]
    _in_batch_order(steps, batches)
    for name in NAMES[:2]:
        assert f'{name} unchanged: nothing to do, left alone' in out
    for name in NAMES[2:]:
        for done in (('reboot', 'changed'), ('gate', 'ok'),
                     ('enable', 'changed'), ('textfile', 'changed')):
            assert (name, *done) in steps, (name, done)
    assert (NAMES[3], 'drain', 'changed') in steps
    # every host went through one SIMULATED reboot, empty at that moment
    reboots = fleet.reboots()
    print('SIMULATED reboots:', json.dumps(reboots, indent=1))
    assert [r['host'] for r in reboots] == NAMES
    assert all(r['servers'] == [] for r in reboots)
    after = _guests_kept_and_batches_held(admin, before, watch, batch=1)
    _ends_planned(fleet, admin, PROFILE)

    # run again: nothing to do on any host
    moved, booted = len(_migrations(admin)), _boot_ids(fleet)
    with ServicesWatch() as watch:
        rc, out, err = _rollout(fleet, *argv)
    assert rc == 0, err
    assert 'nothing to do on any host' in out
    assert watch.most == 0
    assert len(_migrations(admin)) == moved and _boot_ids(fleet) == booted
    assert len(fleet.reboots()) == len(NAMES)
    assert _statuses(admin) == after


def _pool(host, node):
    return int((host.root / f'sys/devices/system/node/node{node}/hugepages/'
                'hugepages-2048kB/nr_hugepages').read_text())


def test_a_short_pool_stops_the_rollout_at_the_gate_two_at_a_time(
        fleet, admin, guests, tuned_flavors, tmp_path):
    """pinned-hugepages in batches of two. The second host "boots" (the
    SIMULATED reboot) with half the huge pages its command line asks
    for: its gate, checking the plan the apply step applied, finds the
    pool short and says the kernel could not reserve it at boot. Its
    batch-mate, which passed, is enabled and gets its textfile; then the
    rollout stops, one line naming the host and the fix; the host stays
    disabled with its reason, the next batch is not touched. Run again
    with nothing fixed, it stops there again with the same reason and fix
    (the plan the run applied, recorded in its state file, is applied and
    gated again, not one made again from the short boot's facts); the
    host is not disabled, drained or rebooted again, the later batch is
    not touched. Rebooted again without the plant (the fix), the rollout
    run again goes on from there."""
    before = _statuses(admin)
    _show_guests('before', before)
    mate, short = NAMES[0], NAMES[1]
    # the 2M pool the host has on each of its two nodes: the plan keeps it
    # (the hugepages tuner), its command line asks for it in all, and the
    # planted boot reserves half of it
    pool = _pool(fleet.host(short), 0)
    assert pool > 0 and _pool(fleet.host(short), 1) == pool
    fleet.plant_short_pool(short)
    inventory = _inventory(fleet)
    state_file = tmp_path / 'rollout-2.json'
    argv = _rollout_argv(inventory, PROFILE_2, 2, state_file)
    untouched = {h.name: (h.root / 'proc/cmdline').read_text()
                 for h in fleet.hosts[2:]}
    reboots = len(fleet.reboots())
    started = time.monotonic()

    def stopped(passed):
        """The stop line, ``passed`` the batch-mate enabled again."""
        return (
            f'the rollout stopped: {short} failed at step verify (failed): '
            f'host pages node0 2M: expected >= {pool}, live {pool // 2} '
            f'({pool // 2} free, 0 in use) (and 1 more); it stays disabled, '
            f'{passed} of its batch passed and was enabled again, the hosts '
            'of later batches were not touched (fix: the kernel could not '
            'reserve the pool at boot (the booted command line asks for '
            f'hugepagesz=2M hugepages={2 * pool}): free the memory it needs '
            'at boot (fewer boot-time reservations, such as crashkernel=) '
            'and reboot, or plan the host again with a smaller pool (a plan '
            'made now keeps the pool the host has) and boot that (shrunk '
            f'since the boot: kvmtune pages apply 0:2M:{pool}), then run '
            'kvmtune rollout again with the same --state: it goes on from '
            'there and judges the plan it applied again (plans the host '
            f'again with --replan {short}))')

    with ServicesWatch() as watch:
        rc, out, err = _rollout(fleet, *argv)
        assert rc == 2
        line, = err.strip().splitlines()
        print(f'the gate failure line: {line}')
        # the plan applied asks for the pool, and the command line the
        # host booted has it: the pool came up short
        assert line.startswith('kvmtune: error: ')
        assert line.partition('.log: ')[2] == stopped(mate)
        assert states.load(str(state_file)).applied(short)['hugepages'] == [
            {'node': 0, 'size_kb': 2048, 'count': pool},
            {'node': 1, 'size_kb': 2048, 'count': pool}]
        run_id = states.load(str(state_file)).run_id
        disabled = _disabled(admin)
        print('disabled:', disabled)
        assert disabled == {short: f'kvmtune rollout {run_id}: {PROFILE_2}'}
        batches, steps = _printed(out)
        assert batches == [NAMES[:2], NAMES[2:]]
        assert {h for h, _, _ in steps} <= set(NAMES[:2])
        # the batch-mate that passed went on: enabled, verified, textfile
        for done in (('verify', 'ok'), ('gate', 'ok'), ('enable', 'changed'),
                     ('textfile', 'changed')):
            assert (mate, *done) in steps, done
        assert (short, 'verify', 'failed') in steps
        assert not any(h == short and s in ('enable', 'textfile')
                       for h, s, _ in steps)
        rc, gated, gate_err = _gate(fleet, mate, PROFILE_2)
        assert rc == 0, gated + gate_err
        assert f'profile="{PROFILE_2}"' in (
            fleet.host(mate).root / 'var/lib/node_exporter/'
            'textfile_collector/kvmtune_verify.prom').read_text()
        assert {h.name: (h.root / 'proc/cmdline').read_text()
                for h in fleet.hosts[2:]} == untouched
        assert not any(r['host'] in NAMES[2:]
                       for r in fleet.reboots()[reboots:])

        # run again, nothing fixed: the same stop, the same reason and
        # fix. The host goes on with the plan the run applied (a plan made
        # again from the short boot's facts would take the short pool as
        # planned, and pass): not disabled, drained or rebooted again
        # (its command line has that plan). The next host in inventory
        # order is its batch-mate now, goes through and is enabled; the
        # later batch is not touched.
        later = NAMES[3]
        booted = (fleet.host(later).root / 'proc/cmdline').read_text()
        ran, rerun = len(fleet.reboots()), time.monotonic()
        rc, out, err = _rollout(fleet, *argv)
        print(f'rollout run again, nothing fixed: '
              f'{time.monotonic() - rerun:.0f} s')
        assert rc == 2
        again, = err.strip().splitlines()
        print(f'the gate failure line, run again: {again}')
        assert again.partition('.log: ')[2] == stopped(NAMES[2])
        assert f'{short} goes on with the plan run {run_id} applied to it ' \
            f'(another: --replan {short})' in out
        batches, steps = _printed(out)
        assert batches == [[short, NAMES[2]], [later]]
        _in_batch_order(steps, batches)
        assert (short, 'verify', 'failed') in steps
        for step_name in ('disable', 'drain', 'reboot', 'enable'):
            assert (short, step_name, 'changed') not in steps, step_name
        assert (NAMES[2], 'enable', 'changed') in steps
        assert not any(h == later for h, _, _ in steps)
        assert (fleet.host(later).root / 'proc/cmdline').read_text() == \
            booted
        assert [r['host'] for r in fleet.reboots()[ran:]] == [NAMES[2]]
        assert _disabled(admin) == {
            short: f'kvmtune rollout {run_id}: {PROFILE_2}'}

        # the fix: the host rebooted again, its pool whole this time
        fleet.unplant(short)
        print(f'SIMULATED reboot of {short} by hand: '
              f'{fleet.reboot(short, restart_compute=_restart)!r}')
        rc, out, err = _rollout(fleet, *argv)
    print(f'rollout (stopped, fixed, run again): '
          f'{time.monotonic() - started:.0f} s')
    assert rc == 0, err
    batches, steps = _printed(out)
    # the hosts done are left alone; the stopped host goes on first
    for name in (mate, NAMES[2]):
        assert f'{name} unchanged: nothing to do, left alone' in out
    assert batches == [[short, NAMES[3]]]
    _in_batch_order(steps, batches)
    # the stopped host is not disabled, drained or rebooted again
    for step_name in ('disable', 'drain', 'reboot'):
        assert (short, step_name, 'changed') not in steps
    assert (short, 'enable', 'changed') in steps
    made = fleet.reboots()[reboots:]
    print('SIMULATED reboots:', json.dumps(made, indent=1))
    assert sorted(r['host'] for r in made) == sorted(NAMES)
    assert [r['short_pool'] for r in made if r['host'] == short] == [True]
    assert all(r['servers'] == [] for r in made)
    _guests_kept_and_batches_held(admin, before, watch, batch=2)
    _ends_planned(fleet, admin, PROFILE_2)

    moved, booted = len(_migrations(admin)), _boot_ids(fleet)
    rc, out, err = _rollout(fleet, *argv)
    assert rc == 0 and 'nothing to do on any host' in out, err
    assert len(_migrations(admin)) == moved and _boot_ids(fleet) == booted
