"""kvmtune's NUMA fit against Nova's: on real machines' topologies
(tests/fixtures/hosts/real), the number of guests kvmtune's model says fit
is the number of times Nova's own ``numa_fit_instance_to_host`` fits one
and ``numa_usage_from_instance_numa`` claims it, until it fits no more
(Nova's Python: tests.paths.NOVA_PYTHON)."""

import copy
import json
import os
import subprocess

import pytest

from kvmtune import facts as host_facts
from kvmtune.capacity import numa
from kvmtune.capacity import request
from tests import hang
from tests import paths
from tests.unit.tuning.export.consumers import NOVA_PYTHON
from tests.unit.tuning.export.consumers import needs_nova

REAL = os.path.join(paths.HOSTS, 'real')

# Nova's resource tracker, instance after instance (hardware.py), on the
# same host numbers kvmtune reads.
_NOVA = r'''
import json, sys
from nova import objects
from nova.virt import hardware
objects.register_all()
case = json.loads(sys.argv[1])
cells = []
for n in case['nodes']:
    pages = [objects.NUMAPagesTopology(size_kb=s, total=t, used=0,
                                       reserved=0)
             for s, t in sorted(n['pages'].items(), key=lambda i: int(i[0]))]
    for p in pages:
        p.size_kb = int(p.size_kb)
    cells.append(objects.NUMACell(
        id=n['id'], cpuset=set(n['shared']), pcpuset=set(n['pcpus']),
        memory=n['memory_mb'], cpu_usage=0, memory_usage=0,
        pinned_cpus=set(), siblings=[set(s) for s in n['siblings']],
        mempages=pages, socket=0,
        network_metadata=objects.NetworkMetadata(physnets=set(),
                                                 tunneled=False)))
host = objects.NUMATopology(cells=cells)
out = {}
for name, f in case['flavors'].items():
    flavor = objects.Flavor(vcpus=f['vcpus'], memory_mb=f['ram'],
                            extra_specs=f['extra_specs'])
    topo, count = host, 0
    while count < 1000:
        # a new request each time: the fit writes the page size it chose
        # into the instance's cells, as for each server Nova schedules
        wanted = hardware.numa_get_constraints(
            flavor, objects.ImageMeta.from_dict({}))
        fitted = hardware.numa_fit_instance_to_host(topo, wanted, None)
        if fitted is None:
            break
        topo = hardware.numa_usage_from_instance_numa(topo, fitted)
        count += 1
    out[name] = count
json.dump(out, sys.stdout)
'''

FLAVORS = {
    'pinned-2-large': {'vcpus': 2, 'ram': 2048, 'extra_specs': {
        'hw:cpu_policy': 'dedicated', 'hw:mem_page_size': 'large'}},
    'pinned-4-small': {'vcpus': 4, 'ram': 4096, 'extra_specs': {
        'hw:cpu_policy': 'dedicated'}},
    'pinned-4-2m-2nodes': {'vcpus': 4, 'ram': 4096, 'extra_specs': {
        'hw:cpu_policy': 'dedicated', 'hw:mem_page_size': '2MB',
        'hw:numa_nodes': '2'}},
    'pinned-2-1g': {'vcpus': 2, 'ram': 2048, 'extra_specs': {
        'hw:cpu_policy': 'dedicated', 'hw:mem_page_size': '1GB'}},
    'pinned-2-any': {'vcpus': 2, 'ram': 1024, 'extra_specs': {
        'hw:cpu_policy': 'dedicated', 'hw:mem_page_size': 'any'}},
    'pinned-2-emulator-isolate': {'vcpus': 2, 'ram': 1024, 'extra_specs': {
        'hw:cpu_policy': 'dedicated',
        'hw:emulator_threads_policy': 'isolate'}},
    'pinned-2-thread-isolate': {'vcpus': 2, 'ram': 1024, 'extra_specs': {
        'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'isolate'}},
}


def with_pools(facts, pools):
    """The real topology with these pools per node ({size_kb: total}):
    the pools are the operator's choice, the topology the machine's."""
    changed = copy.deepcopy(facts)
    for node in changed['numa']['nodes']:
        node['hugepages'] = [{'size_kb': s, 'total': t, 'free': t}
                             for s, t in pools.items()]
    return changed


def nova_case(facts, dedicated):
    siblings = [set(s) for s in facts['cpu']['thread_siblings'] or ()]
    nodes = []
    for node in facts['numa']['nodes']:
        cpus = set(node['cpus'] or ())
        huge = sum(p['size_kb'] * p['total'] for p in node['hugepages'])
        pages = {p['size_kb']: p['total'] for p in node['hugepages']}
        pages[4] = (node['memory_mb'] * 1024 - huge) // 4
        nodes.append({
            'id': node['id'], 'pcpus': sorted(cpus & dedicated),
            'shared': sorted(cpus - dedicated),
            'memory_mb': node['memory_mb'], 'pages': pages,
            'siblings': [sorted(s & cpus & dedicated) for s in siblings
                         if s & cpus & dedicated]})
    return nodes


def first_core_shared(facts):
    """cpu_pinning's rule: each node's first core stays with the host."""
    siblings = {c: set(s) for s in facts['cpu']['thread_siblings'] or ()
                for c in s}
    shared = set()
    for node in facts['numa']['nodes']:
        if node['cpus']:
            shared |= siblings.get(min(node['cpus']), {min(node['cpus'])})
    return set(facts['cpu']['online']) - shared


CASES = [
    ('32intel64-2p8co2t+8ve', None),                 # its own 2 MB pools
    ('32intel64-2p8co2t+8ve', {2048: 700}),
    ('64amd64-4s2n4ca2co', {2048: 3000, 1048576: 3}),
    ('40intel64-2g2n4c+pcilocality', {1048576: 5}),
    ('16amd64-8n2c', {2048: 1500}),
    ('16em64t-4s2c2t', {2048: 4000}),
]


@needs_nova
@pytest.mark.parametrize('name, pools', CASES)
def test_kvmtunes_count_is_novas(name, pools):
    facts = host_facts.gather(os.path.join(REAL, name))
    if pools is not None:
        facts = with_pools(facts, pools)
    dedicated = first_core_shared(facts)
    case = {'nodes': nova_case(facts, dedicated), 'flavors': FLAVORS}
    done = subprocess.run([NOVA_PYTHON, '-c', _NOVA, json.dumps(case)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    novas = json.loads(done.stdout)
    ours = {}
    for flavor, f in FLAVORS.items():
        wanted = request.from_flavor(dict(f, name=flavor, disk=0))
        nodes = numa.host_nodes(facts, dedicated, ())
        ours[flavor] = numa.fit(nodes, wanted.numa)[0]
    print(f'\n{name} {pools}: nova {novas}')
    assert ours == novas


def test_pages_too_few_on_every_node_is_the_page_limit():
    facts = host_facts.gather(os.path.join(REAL, '64amd64-4s2n4ca2co'))
    # a real capture with no huge pages reserved: PCPUs free, pages none
    wanted = request.from_flavor(dict(FLAVORS['pinned-2-large'],
                                      name='x', disk=0))
    count, limit = numa.fit(numa.host_nodes(facts, first_core_shared(facts),
                                            ()), wanted.numa)
    assert (count, limit) == (0, 'pages:large')


def test_servers_already_there_use_their_nodes():
    facts = with_pools(host_facts.gather(
        os.path.join(REAL, '32intel64-2p8co2t+8ve')), {2048: 1024})
    dedicated = first_core_shared(facts)
    wanted = request.from_flavor(dict(FLAVORS['pinned-2-large'], name='x',
                                      disk=0)).numa
    before = numa.fit(numa.host_nodes(facts, dedicated, ()), wanted)[0]
    # Nova's GET /servers/{id}/topology of a pinned guest on node 0
    topology = {'pagesize_kb': 2048, 'nodes': [{
        'host_node': 0, 'memory_mb': 2048, 'cpu_pinning': {'0': 2, '1': 3},
        'vcpu_set': [0, 1], 'siblings': [[2], [3]]}]}
    after = numa.fit(numa.host_nodes(facts, dedicated,
                                     [({'id': 'a'}, topology)]), wanted)[0]
    assert after == before - 1


SHARED_NUMA = {
    'shared-numa-1': {'vcpus': 2, 'ram': 2048, 'extra_specs': {
        'hw:numa_nodes': '1'}},
    'shared-2m': {'vcpus': 2, 'ram': 2048, 'extra_specs': {
        'hw:mem_page_size': '2MB'}},
    'shared-numa-2': {'vcpus': 4, 'ram': 4096, 'extra_specs': {
        'hw:numa_nodes': '2'}},
}


@pytest.mark.parametrize('name', sorted(
    n for n in os.listdir(REAL) if os.path.isdir(os.path.join(REAL, n))))
def test_shared_numa_flavors_return_on_every_capture(name):
    """A shared flavor with a NUMA topology has no pinned CPUs: the fit
    used to count its "unlimited" CPU units up one by one, for ever."""
    facts = with_pools(host_facts.gather(os.path.join(REAL, name)),
                       {2048: 512})

    def count():
        out = {}
        for flavor, f in SHARED_NUMA.items():
            wanted = request.from_flavor(dict(f, name=flavor, disk=0))
            out[flavor] = numa.fit(numa.host_nodes(facts, set(), ()),
                                   wanted.numa)[0]
        return out

    counts = hang.call_in_child(count, timeout=hang.HANG_BOUND_S)
    memory = sum(n['memory_mb'] or 0 for n in facts['numa']['nodes'])
    for flavor, got in counts.items():
        # whatever the count, no more guests than the memory holds
        assert 0 <= got <= memory // SHARED_NUMA[flavor]['ram'], flavor
