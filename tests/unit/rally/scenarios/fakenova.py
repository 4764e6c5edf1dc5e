"""An in-memory Nova for KvmTune.disk_scaling and KvmTune.network_scaling,
whose guests answer on their console the way the benchmark image does
(design.md §6), with real tool output from tests/fixtures/outputs; and
``no_waiting``, the fixture that loads Rally's plugins and takes the poll
waits away (autouse in tests/unit/rally/scenarios/kvmtune/conftest.py).
The scenarios' tests mirror their modules under kvmtune/ here."""

import hashlib
import itertools
import json
import os

import pytest

from novaclient import api_versions
from rally.common import cfg
from rally.common import opts
from rally import plugins

from kvmtune.rally.scenarios.kvmtune import charts
from kvmtune.rally.scenarios.kvmtune import consoles
from kvmtune.rally.scenarios.kvmtune import utils
from kvmtune.results import rally as rally_results
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


# The signal start (default) and the old start_at mode.

def atomic_names(scen):
    return [a['name'] for a in scen.atomic_actions()]


def budget(scen):
    chart, = [c for c in scen._output['complete']
              if c['title'] == charts.BUDGET_TITLE]
    return dict(chart['data']['rows'])


# -- faults on the cloud side ------------------------------------------------

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
