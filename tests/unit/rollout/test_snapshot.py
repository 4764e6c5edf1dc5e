"""kvmtune.rollout.snapshot: the rollout's shared types, and no circle of
imports inside kvmtune/rollout (imports inside functions included)."""

import ast
import os

from kvmtune.capacity.placement import Host
from kvmtune.rollout import nova
from kvmtune.rollout import snapshot
from tests import paths


def _node(name, service_host):
    return Host(name=name, uuid=f'uuid-{name}', service_host=service_host)


def test_node_by_service_host_or_name():
    nodes = [_node('c1.example', 'c1'), _node('c2.example', 'c2')]
    snap = snapshot.Snapshot(nodes=nodes, services={}, servers={})
    assert snap.node('c1') is nodes[0]
    assert snap.node('c2.example') is nodes[1]
    assert snap.node('c3') is None
    # a snapshot whose nodes are replaced indexes them again
    snap.nodes = [_node('c3.example', 'c3')]
    assert snap.node('c3').name == 'c3.example'
    assert snap.of({'c3': 1}, snap.nodes[0]) == 1


def test_request_of_an_uncountable_flavor_is_refused():
    server = nova.Server.from_api({
        'id': 's1', 'name': 'guest', 'status': 'ACTIVE',
        'OS-EXT-SRV-ATTR:host': 'c1',
        'flavor': {'original_name': 'odd', 'vcpus': 2, 'ram': 512,
                   'extra_specs': {'hw:cpu_policy': 'nonsense'}}})
    try:
        snapshot.request_of(server)
    except snapshot.Refused as exc:
        assert 'server s1' in exc.line() and 'odd' in exc.line()
    else:
        raise AssertionError('an uncountable flavor was counted')


def _imports(path, package):
    """The kvmtune.rollout modules ``path`` imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(open(path, encoding='utf-8').read())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == package:
                found |= {a.name for a in node.names}
            elif node.module.startswith(package + '.'):
                found.add(node.module[len(package) + 1:].split('.')[0])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(package + '.'):
                    found.add(alias.name[len(package) + 1:].split('.')[0])
    return found


def cycles(graph):
    """Every module of ``graph`` ({module: modules it imports}) that
    reaches itself again."""
    looped = set()
    for start in graph:
        seen, todo = set(), list(graph[start])
        while todo:
            name = todo.pop()
            if name == start:
                looped.add(start)
                break
            if name in seen or name not in graph:
                continue
            seen.add(name)
            todo.extend(graph[name])
    return looped


def test_cycles_finds_a_planted_circle():
    assert cycles({'a': {'b'}, 'b': {'c'}, 'c': {'a'}, 'd': {'a'}}) == {
        'a', 'b', 'c'}
    assert cycles({'a': {'b'}, 'b': set()}) == set()


def test_no_circle_of_imports_inside_rollout():
    directory = os.path.join(paths.REPO, 'kvmtune', 'rollout')
    graph = {name[:-3]: _imports(os.path.join(directory, name),
                                 'kvmtune.rollout')
             for name in os.listdir(directory) if name.endswith('.py')}
    assert 'preflight' in graph and 'snapshot' in graph['preflight']
    assert cycles(graph) == set()
