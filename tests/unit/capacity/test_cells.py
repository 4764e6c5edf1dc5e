"""A host's NUMA nodes as Nova's scheduler sees them, from real machines'
captures (tests/fixtures/hosts/real), with topology kvmtune did not
compute: what the capture's /sys says."""

import os

from kvmtune.capacity import cells
from kvmtune import facts as host_facts
from tests import paths

REAL = os.path.join(paths.HOSTS, 'real')


def gather(name):
    return host_facts.gather(os.path.join(REAL, name))


def test_offline_siblings_leave_single_thread_cores():
    facts = gather('16em64t-4s2c2t-offlines')  # CPUs 2, 5, 13, 14 offline
    online = set(facts['cpu']['online'])
    [node] = cells.host_nodes(facts, online - {0, 8}, (), {0, 8})
    assert sorted(map(sorted, node.siblings)) == [
        [0, 8], [1, 9], [3, 11], [4, 12], [6], [7, 15], [10]]
    assert node.shared == {0, 8}
    assert node.pcpus == online - {0, 8}


def test_a_memory_only_node_has_no_cpu_but_its_memory():
    facts = gather('nvidiagpunumanodes')
    online = set(facts['cpu']['online'])
    nodes = {n.id: n for n in cells.host_nodes(facts, online, (), set())}
    empty = [n for n in nodes.values() if not n.pcpus and not n.shared]
    assert len(empty) == 6
    for node in empty:
        assert node.siblings == []
        assert node.memory_mb == 15360
        assert node.pages[cells.SMALL_KB][0] == 15360 * 1024 // 4


def test_huge_page_pools_leave_the_rest_as_small_pages():
    facts = gather('32intel64-2p8co2t+8ve')   # 2048 x 2 MiB per node
    nodes = cells.host_nodes(facts, set(), (), None)
    for node, captured in zip(nodes, facts['numa']['nodes']):
        assert node.pages[2048] == [2048, 0]
        assert node.pages[cells.SMALL_KB][0] == (
            captured['memory_mb'] * 1024 - 2048 * 2048) // 4
        # no cpu_dedicated_set: every online CPU of the node is shared
        assert node.shared == set(captured['cpus'])


def test_a_servers_topology_is_its_use():
    facts = gather('32intel64-2p8co2t+8ve')
    online = set(facts['cpu']['online'])
    server = {'id': 'a', 'flavor': {'extra_specs': {
        'hw:cpu_policy': 'dedicated', 'hw:cpu_thread_policy': 'isolate',
        'hw:emulator_threads_policy': 'isolate'}}}
    topology = {'pagesize_kb': 2048, 'nodes': [{
        'host_node': 0, 'memory_mb': 2048, 'cpu_pinning': {'0': 2, '1': 3},
        'vcpu_set': [0, 1]}]}
    node = cells.host_nodes(facts, online - {0, 16}, [(server, topology)],
                            {0, 16})[0]
    # isolate: the pinned CPUs' siblings too; the emulator threads' CPU
    # (not in the API's topology) one more free dedicated CPU
    assert {2, 3, 18, 19} < node.pinned
    assert len(node.pinned) == 6
    assert node.memory_used == 2048
    assert node.pages[2048][1] == 1024
