"""kvmtune.rollout.snapshot: the rollout's shared types, below the judges
that use them (no import circle: tests/unit/test_house.py)."""

from kvmtune.capacity.placement import Host
from kvmtune.rollout import nova
from kvmtune.rollout import snapshot


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


def test_the_judges_share_the_types_below_them():
    """preflight takes the shared types from snapshot, which imports none
    of the judges; that no module of rollout/ closes an import circle
    (imports inside functions included) is tests/unit/test_house.py's
    check of every package."""
    from kvmtune.rollout import preflight

    assert preflight.snapshots is snapshot
