"""KvmTune.disk_scaling and KvmTune.network_scaling against an in-memory
Nova whose guests answer on their console the way the benchmark image does
(design.md §6), with real tool output from tests/fixtures/outputs."""

import hashlib
import itertools
import json
import os

import pytest

from rally.common import cfg
from rally.common import opts
from rally import exceptions
from rally import plugins
from novaclient import api_versions

from kvmtune.results import rally as rally_results
from kvmtune.results import row as rows_
from kvmtune.rally.scenarios.kvmtune import charts
from kvmtune.rally.scenarios.kvmtune import consoles
from kvmtune.rally.scenarios.kvmtune import disk
from kvmtune.rally.scenarios.kvmtune import network
from kvmtune.rally.scenarios.kvmtune import utils
from tests import paths

FIXTURES = os.path.join(paths.FIXTURES, 'outputs')


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return f.read()


def frame(instance, workload, tool, raw):
    data = raw.encode()
    return (f'KVMTUNE-RESULT-BEGIN {instance} {workload} {tool} {len(data)} '
            f'{hashlib.sha256(data).hexdigest()}\n{raw}\n'
            f'KVMTUNE-RESULT-END {instance}\nKVMTUNE-STATUS {instance} ok\n')


def benchmark_guest(job, instance, nmis=0):
    """What the image prints for a job (a stand-in for booting it) after
    ``nmis`` start signals."""
    boot = '[    0.000000] Linux version 6.1.0\nkvmtune: job read\n'
    if job.get('start') == 'nmi':
        boot += f'KVMTUNE-STATUS {instance} ready uptime=9.50 time=1795\n'
        if not nmis:
            return boot
    if job['role'] == 'server':
        return boot + f'KVMTUNE-STATUS {instance} serving\n'
    if job['target'] not in (None, '/dev/vdb'):
        return boot + (f'KVMTUNE-STATUS {instance} error target '
                       f'{job["target"]} is not a block device here\n')
    if job['workload'] == 'fio-randread-4k':
        return boot + frame(instance, job['workload'], 'fio',
                            fixture('fio-3.33-randread-4k.json'))
    if job['workload'] == 'iperf3-tcp-stream':
        assert job['peer'] == '10.2.0.3'
        return boot + frame(instance, job['workload'], 'iperf3',
                            fixture('iperf3-3.12-tcp.json'))
    raise AssertionError(f'no such guest behaviour: {job}')


class NotFound(Exception):
    code = 404


class Obj:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class Servers:
    def __init__(self, nova):
        self.nova, self.live, self.created = nova, {}, []
        self.ids = (f'00000000-0000-0000-0000-{i:012d}'
                    for i in itertools.count(1))

    def create(self, name, image, flavor, **kw):
        sid = next(self.ids)
        addresses = ({'net': [{'addr': f'10.2.0.{len(self.created) + 3}',
                               'OS-EXT-IPS:type': 'fixed'}]}
                     if isinstance(kw.get('nics'), list) else {})
        server = Obj(id=sid, name=name, status='ACTIVE', manager=self,
                     addresses=addresses, kw=kw, flavor=flavor,
                     job=json.loads(kw['userdata']), nmis=0)
        self.live[sid] = server
        self.created.append(server)
        return server

    def get(self, sid):
        sid = getattr(sid, 'id', sid)      # novaclient takes either
        if sid not in self.live:
            raise NotFound(sid)
        return self.live[sid]

    def delete(self, sid):
        if self.live.pop(getattr(sid, 'id', sid), None) is None:
            raise NotFound(sid)

    def get_console_output(self, server):
        if self.nova.powered_off:
            # libvirt: a stopped guest has no pty, Nova answers 404
            server.status = 'SHUTOFF'
            raise NotFound('Guest does not have a console available.')
        if server.id in self.nova.never_ready:
            return '[    0.000000] Linux version 6.1.0\n'
        return benchmark_guest(server.job, server.id, server.nmis)

    def trigger_crash_dump(self, server):
        guest = self.live[server.id]
        # the scenario signals only once every guest said ready
        assert all('ready' in self.get_console_output(s) for s in
                   self.live.values() if s.job.get('start') == 'nmi' and
                   s.id not in self.nova.never_ready)
        guest.nmis += 1


class ServerGroups:
    def __init__(self):
        self.live = {}

    def create(self, name, policies):
        group = Obj(id=f'group-{len(self.live)}', policies=policies)
        self.live[group.id] = group
        return group

    def delete(self, gid):
        self.live.pop(gid)


class Nova:
    api_version = api_versions.APIVersion('2.37')

    def __init__(self, ephemeral=1, powered_off=False):
        self.powered_off = powered_off
        self.never_ready = set()    # ids of guests stuck in their boot
        self.servers = Servers(self)
        self.server_groups = ServerGroups()
        self.flavors = Obj(get=lambda fid: Obj(**{
            'name': fid, 'OS-FLV-EXT-DATA:ephemeral': ephemeral}))


class Clients:
    def __init__(self, nova):
        self._nova = nova

    def nova(self, version=None):
        return self._nova


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch):
    plugins.load()
    opts.register()
    names = ('nova_server_boot_prepoll_delay',
             'nova_server_boot_poll_interval',
             'nova_server_delete_poll_interval')
    for name in names:
        cfg.CONF.set_override(name, 0, group='openstack')
    monkeypatch.setattr(consoles, 'CONSOLE_POLL_INTERVAL', 0)
    monkeypatch.setattr(consoles, 'SIGNAL_POLL_INTERVAL', 0)
    if hasattr(utils, 'DELETE_RESEND_INTERVAL'):
        monkeypatch.setattr(utils, 'DELETE_RESEND_INTERVAL', 0)
    monkeypatch.setattr(utils.KvmTuneScenario, 'sleep_between',
                        lambda self, *a, **kw: None)
    yield
    for name in names:
        cfg.CONF.clear_override(name, group='openstack')


def scenario(cls, nova, iteration=1, networks=None):
    context = {'iteration': iteration, 'owner_id': 'o',
               'task': {'uuid': 'a2b3c4d5-0000-0000-0000-000000000000'},
               'tenant': {'networks': networks or []}}
    return cls(context, clients=Clients(nova))


def table(scen):
    """The per-VM table, read back as the report reads it (flat Rows)."""
    return [r.flat() for r in rally_results.rows_of(scen._output)]


def test_disk_iteration_boots_its_step_and_reads_every_guest():
    nova = Nova()
    scen = scenario(disk.DiskScaling, nova, iteration=3)
    scen.run(flavor='f', image='i', vm_counts=[1, 2, 3], result_timeout=5,
             emulated=True)
    assert len(nova.servers.created) == 3
    jobs = [s.job for s in nova.servers.created]
    assert all(j == jobs[0] for j in jobs)      # one common start_at
    assert jobs[0]['target'] == '/dev/vdb'
    for s in nova.servers.created:
        assert s.kw['config_drive'] is True
        assert s.kw['scheduler_hints'] == {'group': 'group-0'}
        assert s.kw['nics'] == 'none'
    rows = table(scen)
    assert [r['status'] for r in rows] == ['ok'] * 3
    assert all(r['iops'] > 0 and r['tool'] == 'fio' and r['emulated']
               for r in rows)
    titles = [o['title'] for o in scen._output['additive']]
    assert titles[0] == 'IOPS by VM count (emulated: QEMU TCG)'
    # nothing left behind
    assert nova.servers.live == {} and nova.server_groups.live == {}


def test_admin_host_pins_the_batch_without_a_group():
    nova = Nova()
    scenario(disk.DiskScaling, nova).run(
        flavor='f', image='i', vm_counts=[1], host='compute-1',
        result_timeout=5)
    server, = nova.servers.created
    assert server.kw['availability_zone'] == 'nova:compute-1'
    assert 'scheduler_hints' not in server.kw


def test_a_bad_job_fails_the_iteration_naming_the_guest():
    nova = Nova()
    scen = scenario(disk.DiskScaling, nova)
    with pytest.raises(utils.GuestResultsMissing,
                       match='target /dev/vdz is not a block device '
                             'here') as exc:
        scen.run(flavor='f', image='i', vm_counts=[1], target='/dev/vdz',
                 result_timeout=5)
    server, = nova.servers.created
    assert (f'{server.id}: error: target /dev/vdz is not a block device '
            'here') in str(exc.value)
    assert table(scen)[0]['status'] == rows_.ERROR
    assert nova.servers.live == {}


def test_an_unknown_workload_is_refused_before_booting():
    nova = Nova()
    with pytest.raises(exceptions.InvalidArgumentsException,
                       match='fio-no-such'):
        scenario(disk.DiskScaling, nova).run(
            flavor='f', image='i', vm_counts=[1], workload='fio-no-such')
    assert nova.servers.created == [] and nova.server_groups.live == {}


def test_a_flavor_without_data_disk_is_refused_before_booting():
    nova = Nova(ephemeral=0)
    with pytest.raises(exceptions.InvalidArgumentsException,
                       match='no ephemeral disk'):
        scenario(disk.DiskScaling, nova).run(flavor='f', image='i',
                                             vm_counts=[1])
    assert nova.servers.created == []


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


# Issue 15: the signal start (default) and the old start_at mode.

def atomic_names(scen):
    return [a['name'] for a in scen.atomic_actions()]


def budget(scen):
    chart, = [c for c in scen._output['complete']
              if c['title'] == charts.BUDGET_TITLE]
    return dict(chart['data']['rows'])


def test_start_mode_at_keeps_the_old_common_start():
    nova = Nova()
    scen = scenario(disk.DiskScaling, nova, iteration=2)
    scen.run(flavor='f', image='i', vm_counts=[1, 2], result_timeout=5,
             start_mode='at')
    jobs = [s.job for s in nova.servers.created]
    assert all(isinstance(j['start_at'], int) and 'start' not in j
               for j in jobs)
    assert [s.nmis for s in nova.servers.created] == [0, 0]
    assert [r['status'] for r in table(scen)] == ['ok', 'ok']
    assert 'kvmtune.start' not in atomic_names(scen)


# -- faults on the cloud side (issue 25) -------------------------------------

class ServerError(Exception):
    """What novaclient raises for Nova's 500 (an RPC timeout to a dead
    nova-compute is "Unexpected API Error")."""
    code = 500


class DeadCompute:
    """The guests' nova-compute was SIGKILLed: console reads time out in
    Nova (500), and a delete is ignored while Nova still counts the
    service up (the server stays in task_state deleting), then done
    locally once it is seen down (after ``seen_down_after`` deletes)."""

    def __init__(self, nova, seen_down_after=2):
        self.servers = nova.servers
        self.deletes = 0
        self.seen_down_after = seen_down_after
        nova.servers.get_console_output = self.console
        nova.servers.delete = self.delete

    def console(self, server):
        raise ServerError('Unexpected API Error (HTTP 500)')

    def delete(self, sid):
        self.deletes += 1
        sid = getattr(sid, 'id', sid)
        if sid not in self.servers.live:
            raise NotFound(sid)
        if self.deletes > self.seen_down_after:
            del self.servers.live[sid]


def test_a_step_that_fails_before_its_verdicts_leaves_lost_rows(monkeypatch):
    # A boot that never ends (nova-compute gone while building): Rally's
    # wait times out. Before: no row, so the SLA never named the guests.
    nova = Nova()

    def never_active(self, servers):
        raise exceptions.TimeoutException(
            desired_status='ACTIVE', resource_name=servers[0].name,
            resource_type='server', resource_id=servers[0].id,
            resource_status='BUILD', timeout=300)

    monkeypatch.setattr(utils.KvmTuneScenario, '_wait_active', never_active)
    scen = scenario(disk.DiskScaling, nova, iteration=2)
    with pytest.raises(exceptions.TimeoutException):
        scen.run(flavor='f', image='i', vm_counts=[1, 2], result_timeout=5)
    rows = table(scen)
    assert [r['status'] for r in rows] == [rows_.NO_RESULT] * 2
    assert all(r['reason'].startswith('lost: the step failed before its '
                                      'verdict (TimeoutException')
               and r['workload'] == 'fio-randread-4k' for r in rows), rows
    assert nova.servers.live == {} and nova.server_groups.live == {}


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


def test_an_api_that_is_down_for_a_while_still_gets_the_delete():
    nova = Nova()
    real_delete, failures = nova.servers.delete, []

    def flaky_delete(sid):
        if len(failures) < 2:
            failures.append(sid)
            raise ConnectionError('Unable to establish connection')
        return real_delete(sid)

    nova.servers.delete = flaky_delete
    scenario(disk.DiskScaling, nova).run(flavor='f', image='i',
                                         vm_counts=[1], result_timeout=5)
    assert len(failures) == 2 and nova.servers.live == {}


def test_a_delete_that_never_takes_ends_within_rallys_timeout():
    nova = Nova()
    DeadCompute(nova, seen_down_after=10 ** 9)
    cfg.CONF.set_override('nova_server_delete_timeout', 0,
                          group='openstack')
    try:
        scen = scenario(disk.DiskScaling, nova)
        with pytest.raises(exceptions.TimeoutException,
                           match='not deleted .*still there'):
            scen.run(flavor='f', image='i', vm_counts=[1],
                     result_timeout=0, ready_timeout=0)
    finally:
        cfg.CONF.clear_override('nova_server_delete_timeout',
                                group='openstack')
    # the lost guest was charted before the delete gave up
    assert table(scen)[0]['status'] == rows_.NO_RESULT
