"""The pure logic of host tag: which traits change, which node is meant."""

import pytest

from kvmtune.cloud import placement
from kvmtune.errors import InputError

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
    with pytest.raises(ValueError):
        placement.trait_change(NOVA_TRAITS, {'COMPUTE_NODE'}, MANAGED)


NODES = [('compute-1', 'u-1'), ('compute-2', 'u-2')]


def test_pick_by_name():
    assert placement.pick_compute_node(NODES, 'compute-2', False) == (
        ('compute-2', 'u-2'), None)


def test_pick_the_only_node_unless_named_explicitly():
    node, note = placement.pick_compute_node(NODES[:1], 'laptop', False)
    assert node == ('compute-1', 'u-1')
    assert 'laptop' in note and 'compute-1' in note
    with pytest.raises(InputError) as err:
        placement.pick_compute_node(NODES[:1], 'laptop', True)
    assert 'compute-1' in err.value.line()


def test_unknown_name_among_many_lists_the_nodes():
    with pytest.raises(InputError) as err:
        placement.pick_compute_node(NODES, 'laptop', False)
    assert 'compute-1, compute-2' in err.value.line()
