"""The pure logic of host tag: which traits change, which node is meant."""

import pytest

from kvmtune.errors import InputError
from kvmtune.openstack import placement

MANAGED = {'CUSTOM_KVMTUNE_EPT', 'CUSTOM_KVMTUNE_NESTED',
           'CUSTOM_KVMTUNE_HUGEPAGES_1G', 'CUSTOM_KVMTUNE_VHOST_NET'}
NOVA_TRAITS = {'COMPUTE_NODE', 'HW_CPU_X86_VMX', 'CUSTOM_RACK_A1'}


def test_adds_wanted_and_keeps_every_other_trait():
    change = placement.trait_change(NOVA_TRAITS, {'CUSTOM_KVMTUNE_EPT'},
                                    MANAGED)
    assert change.new == NOVA_TRAITS | {'CUSTOM_KVMTUNE_EPT'}
    assert change.added == ['CUSTOM_KVMTUNE_EPT']
    assert change.removed == []
    assert change.lines() == ['+ CUSTOM_KVMTUNE_EPT']


def test_lost_capability_removes_only_its_trait():
    current = NOVA_TRAITS | {'CUSTOM_KVMTUNE_EPT', 'CUSTOM_KVMTUNE_NESTED'}
    change = placement.trait_change(current, {'CUSTOM_KVMTUNE_NESTED'},
                                    MANAGED)
    assert change.removed == ['CUSTOM_KVMTUNE_EPT']
    assert change.new == NOVA_TRAITS | {'CUSTOM_KVMTUNE_NESTED'}


def test_same_traits_is_no_change():
    current = NOVA_TRAITS | {'CUSTOM_KVMTUNE_EPT'}
    assert placement.trait_change(current, {'CUSTOM_KVMTUNE_EPT'},
                                  MANAGED).empty


def test_refuses_to_set_traits_kvmtune_does_not_manage():
    with pytest.raises(ValueError,
                       match=r"^not kvmtune traits: \['COMPUTE_NODE'\]$"):
        placement.trait_change(NOVA_TRAITS, {'COMPUTE_NODE'}, MANAGED)


NODES = [('compute-1', 'u-1'), ('compute-2', 'u-2')]


def test_pick_by_name():
    assert placement.pick_compute_node(NODES, 'compute-2', False) == (
        ('compute-2', 'u-2'), None)


def test_pick_the_only_node_unless_named_explicitly():
    node, note = placement.pick_compute_node(NODES[:1], 'laptop', False)
    assert node == ('compute-1', 'u-1')
    assert 'laptop' in note and 'compute-1' in note
    with pytest.raises(InputError,
                       match=r"no compute node named 'laptop' \(compute "
                             r"nodes: compute-1\)") as err:
        placement.pick_compute_node(NODES[:1], 'laptop', True)
    assert 'compute-1' in err.value.line()


def test_unknown_name_among_many_lists_the_nodes():
    with pytest.raises(InputError,
                       match=r"no compute node named 'laptop' \(compute "
                             r"nodes: compute-1, compute-2\)") as err:
        placement.pick_compute_node(NODES, 'laptop', False)
    assert 'compute-1, compute-2' in err.value.line()


class _ConflictingPlacement:
    """Placement answers for one provider whose generation moves once
    between kvmtune's read and its write (nova-compute's periodic update
    does that); records the writes."""

    name = 'test'

    def __init__(self, conflicts):
        self.traits = {'COMPUTE_NODE'}
        self.generation = 7
        self.conflicts = conflicts
        self.writes = []

    def placement(self, method, path, body=None):
        from kvmtune.openstack.errors import http_error

        if method == 'GET' and path.endswith('/traits'):
            return {'traits': sorted(self.traits),
                    'resource_provider_generation': self.generation}
        if method == 'GET' and path.startswith('/traits?'):
            return {'traits': []}
        self.writes.append((method, path))
        if method == 'PUT' and path.startswith('/resource_providers/'):
            if self.conflicts:
                self.conflicts -= 1
                self.generation += 1
                raise http_error(self.name, method, 'http://p' + path, 409,
                                 'resource provider generation conflict')
            assert body['resource_provider_generation'] == self.generation
            self.traits = set(body['traits'])
            self.generation += 1
        return None


def test_generation_conflict_is_read_again_and_retried():
    fake = _ConflictingPlacement(conflicts=2)
    change = placement.Placement(fake).set_traits(
        'u-1', {'CUSTOM_KVMTUNE_EPT'}, MANAGED)
    assert change.added == ['CUSTOM_KVMTUNE_EPT']
    assert fake.traits == {'COMPUTE_NODE', 'CUSTOM_KVMTUNE_EPT'}
    puts = [w for w in fake.writes if w[1] == '/resource_providers/u-1/traits']
    assert len(puts) == 3


def test_endless_conflicts_give_up_with_the_cloud_error():
    from kvmtune.errors import CloudError

    fake = _ConflictingPlacement(conflicts=placement.CONFLICT_RETRIES + 1)
    with pytest.raises(CloudError,
                       match='HTTP 409: resource provider generation '
                             'conflict') as err:
        placement.Placement(fake).set_traits('u-1', {'CUSTOM_KVMTUNE_EPT'},
                                             MANAGED)
    assert 'HTTP 409' in err.value.line()
