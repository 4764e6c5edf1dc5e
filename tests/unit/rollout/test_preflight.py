"""The preflight on recorded answers: the test cloud's compute node as
Placement showed it (tests/fixtures/capacity/testcloud-libvirt-pinned.json:
PCPU 1, VCPU 1 at ratio 16, its facts vm.json, cpu_dedicated_set 1),
replicated into a fleet (tests/unit/capacity/replay.py), and the batch's
servers in the shape compute API 2.86 lists them. Pure logic."""

import dataclasses
import json
import os

from kvmtune.capacity import placement
from kvmtune.rollout import nova
from kvmtune.rollout import preflight
from kvmtune.rollout import snapshot as snapshots
from kvmtune.tuning.plan import Plan
from tests.unit.capacity.replay import load
from tests.unit.capacity.replay import RECORDINGS
from tests.unit.capacity.replay import Replay
from tests.unit.rollout.fakenova import server

PINNED = {'hw:cpu_policy': 'dedicated'}
with open(os.path.join(RECORDINGS, 'vm.json')) as f:
    FACTS = json.load(f)


def snapshot(count=3, batch=('compute-0000',), guests=(), facts=True,
             disabled=()):
    nodes = placement.Reader(Replay(load('testcloud-libvirt-pinned.json'),
                                    hosts=count)).hosts()
    services = {n.service_host: nova.Service(
        f'svc-{n.service_host}', n.service_host,
        'disabled' if n.service_host in disabled else 'enabled', 'up',
        None) for n in nodes}
    servers = {h: [nova.Server.from_api(g) for g in guests
                   if g['OS-EXT-SRV-ATTR:host'] == h] for h in batch}
    names = [n.name for n in nodes]
    return snapshots.Snapshot(
        nodes=nodes, services=services, servers=servers,
        facts={n: FACTS for n in names} if facts else {},
        dedicated={n: {1} for n in names})


def shared(uuid, host='compute-0000', ram=128, status='ACTIVE'):
    return server(uuid, host, status, 'kvmtune-ft-base-94120b', ram=ram)


def pinned(uuid, host='compute-0000', status='ACTIVE'):
    return server(uuid, host, status, 'kvmtune-ft-002e681a-pinned', ram=128,
                  specs=PINNED)


def test_the_rest_of_the_fleet_takes_the_batch_first_fit():
    snap = snapshot(guests=[shared('a'), shared('b', status='SHUTOFF'),
                            pinned('p')])
    placed = preflight.fleet_fit(snap, ['compute-0000'])
    assert {p.server: p.target for p in placed} == {
        'a': 'compute-0001', 'b': 'compute-0001', 'p': 'compute-0001'}
    assert preflight.refusals(placed) == []


def test_a_too_full_fleet_is_refused_naming_host_flavor_and_limit():
    # one PCPU on each of the two other nodes: a third pinned guest fits
    # nowhere
    snap = snapshot(guests=[pinned('p1'), pinned('p2'), pinned('p3')])
    placed = preflight.fleet_fit(snap, ['compute-0000'])
    # the biggest first, then by id: p3, p2, p1
    assert [(p.server, p.target) for p in placed] == [
        ('p3', 'compute-0001'), ('p2', 'compute-0002'), ('p1', None)]
    refused, = preflight.refusals(placed)
    assert refused.line() == (
        'host compute-0000: preflight: server p1 (vm-p1, flavor '
        'kvmtune-ft-002e681a-pinned) fits on no other enabled compute: '
        'PCPU on compute-0001, compute-0002 (fix: free room elsewhere or '
        'make the batch smaller; nothing was touched)')


def test_memory_runs_out_across_hosts():
    # 7710 MB allocatable per node ((8153 - 3013) x 1.5)
    snap = snapshot(guests=[shared(f'g{i}', ram=5000) for i in range(3)])
    placed = preflight.fleet_fit(snap, ['compute-0000'])
    assert [p.target is None for p in placed].count(True) == 1
    assert 'MEMORY_MB on compute-0001, compute-0002' in \
        [p.why for p in placed if p.target is None][0]


def test_a_node_by_its_service_host_or_name_first_in_order():
    snap = snapshot(count=3)
    first, second, third = snap.nodes
    assert snap.node(second.service_host) is second
    assert snap.node(third.name) is third
    assert snap.node('no-such-host') is None
    # a node named as another's service host: the first in order
    renamed = dataclasses.replace(third, name=first.service_host)
    snap.nodes = [renamed, first, second]
    assert snap.node(first.service_host) is renamed
    # the snapshot of a later batch (resume.back_by_then) has its own
    later = dataclasses.replace(snap, nodes=[first, second])
    assert later.node(first.service_host) is first
    assert later.node(third.service_host) is None


def test_disabled_computes_and_the_batch_take_nothing():
    snap = snapshot(batch=('compute-0000', 'compute-0001'),
                    guests=[shared('a'), shared('b', host='compute-0001')],
                    disabled=('compute-0002',))
    placed = preflight.fleet_fit(snap, ['compute-0000', 'compute-0001'])
    assert [p.why for p in placed] == [
        'no other compute is enabled and up'] * 2
    assert [t.name for t in preflight.targets(snap, ['compute-0000'])] \
        == ['compute-0001']


def test_numa_guests_need_the_targets_facts():
    snap = snapshot(count=2, guests=[pinned('p')], facts=False)
    placed, = preflight.fleet_fit(snap, ['compute-0000'])
    assert placed.target is None
    assert placed.why == 'NUMA fit unknown: no facts on compute-0001'


def _plan(dedicated=None, shared_set=None, pools=()):
    compute = {}
    if dedicated is not None:
        compute['cpu_dedicated_set'] = dedicated
    if shared_set is not None:
        compute['cpu_shared_set'] = shared_set
    return Plan(profile='p', facts_source=None,
                nova_conf={'compute': compute} if compute else {},
                hugepages=[{'node': n, 'size_kb': s, 'count': c}
                           for n, s, c in pools])


TOPOLOGY = {'p': {'pagesize_kb': 2048, 'nodes': [
    {'host_node': 0, 'memory_mb': 128, 'cpu_pinning': {'0': 1},
     'vcpu_set': [0]}]}}


def test_judge_drain_and_in_place():
    snap = snapshot(guests=[pinned('p')])
    snap.topologies = TOPOLOGY
    report = preflight.judge(snap, ['compute-0000'], 'drain', {})
    assert report.to_dict()['ok'] and report.placed[0].target
    report = preflight.judge(snap, ['compute-0000'], 'in-place',
                             {'compute-0000': _plan('0', '1')})
    assert report.placed == [] and not report.to_dict()['ok']
    assert 'outside the new cpu_dedicated_set' in \
        report.to_dict()['refusals'][0]


def test_a_large_fleet_names_a_few_nodes_per_limit():
    snap = snapshot(count=9, guests=[shared('g', ram=9000)])
    placed, = preflight.fleet_fit(snap, ['compute-0000'])
    assert placed.why == ('MEMORY_MB on compute-0001, compute-0002, '
                          'compute-0003, compute-0004, compute-0005 and 3 '
                          'more')


def test_a_numa_limit_is_named_when_placement_has_room():
    # Placement has a PCPU free on each node, but the nodes have no huge
    # pages (vm.json): Nova's NUMA fit refuses a large-page guest
    large = server('h', 'compute-0000', 'ACTIVE', 'pinned-large', ram=128,
                   specs={**PINNED, 'hw:mem_page_size': 'large'})
    snap = snapshot(count=2, guests=[large])
    placed, = preflight.fleet_fit(snap, ['compute-0000'])
    assert (placed.target, placed.why) == (None,
                                           'pages:large on compute-0001')
