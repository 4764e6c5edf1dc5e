"""capacity's counts on the test cloud's recorded answers (replay.py),
and Placement's rules on inventories an operator meets."""

import os

import pytest

from kvmtune import capacity
from kvmtune.capacity import placement
from kvmtune.capacity import request
from kvmtune.errors import InputError
from kvmtune import facts as host_facts
from kvmtune.tuning import plan as plans
from tests import paths
from tests.unit.capacity.replay import load
from tests.unit.capacity.replay import Replay

RECORDING = load('testcloud-libvirt-pinned.json')
VM = load('vm.json')
PINNED = 'kvmtune-ft-002e681a-pinned'
BASE = 'kvmtune-ft-base-94120b'


def fits(result):
    return {(f.host, f.flavor): (f.count, f.limit) for f in result.fits}


def test_the_recorded_cloud_counts_as_its_scheduler_placed():
    # tests/functional/test_capacity.py booted exactly 1 pinned server
    # on this compute (PCPU total 1) before NoValidHost.
    tuned = plans.Plan(profile='kvmtune-ft-capacity', facts_source='vm',
                       nova_conf={'compute': {'cpu_dedicated_set': '1',
                                              'cpu_shared_set': '0'}})
    result = capacity.compute(Replay(RECORDING), [PINNED, BASE],
                              facts_by_host={'vm': VM},
                              plans_for=lambda facts: [tuned])
    assert fits(result) == {('vm', PINNED): (1, 'PCPU'),
                            # VCPU 1 x allocation ratio 16, 1 vCPU each
                            ('vm', BASE): (16, 'VCPU')}
    assert result.by_flavor() == {PINNED: (1, False), BASE: (16, False)}
    assert not result.partial
    # without the host's facts the pinned flavor's NUMA fit is unknown
    alone = capacity.compute(Replay(RECORDING), [PINNED])
    assert alone.partial and 'Placement alone allows 1' in \
        alone.fits[0].reason


def host(**inventories):
    node = placement.Host(name='h', service_host='h', uuid='u')
    node.inventories = {rc: dict({'total': 0, 'reserved': 0,
                                  'allocation_ratio': 1.0, 'min_unit': 1,
                                  'max_unit': 1 << 20, 'step_size': 1},
                                 **inv)
                        for rc, inv in inventories.items()}
    return node


def req(**resources):
    return request.Request(flavor='f', resources=resources,
                           required=frozenset(), forbidden=frozenset(
                               {request.DISABLED_TRAIT}))


def test_placements_arithmetic():
    node = host(VCPU={'total': 8, 'reserved': 2, 'allocation_ratio': 4.0},
                MEMORY_MB={'total': 4096, 'reserved': 512})
    node.usages = {'VCPU': 10, 'MEMORY_MB': 1024}
    # VCPU: int((8 - 2) x 4) - 10 = 14 -> 7; memory (4096-512-1024)/512=5
    assert capacity.placement_fit(node, req(VCPU=2, MEMORY_MB=512)) == \
        (5, 'MEMORY_MB')
    assert capacity.placement_fit(node, req(VCPU=2, MEMORY_MB=256)) == \
        (7, 'VCPU')


@pytest.mark.parametrize('inventory, amount', [
    ({'max_unit': 4}, 6),        # more than one allocation may take
    ({'min_unit': 4}, 2),
    ({'step_size': 4}, 6),
])
def test_units_outside_placements_bounds_fit_nowhere(inventory, amount):
    node = host(PCPU=dict({'total': 64}, **inventory))
    assert capacity.placement_fit(node, req(PCPU=amount)) == (0, 'PCPU')


def test_a_missing_trait_or_a_disabled_compute_is_zero_with_the_trait():
    node = host(PCPU={'total': 8})
    node.traits = frozenset({'COMPUTE_NODE'})
    wanted = request.Request('f', {'PCPU': 2},
                             frozenset({'CUSTOM_KVMTUNE_EPT'}),
                             frozenset({request.DISABLED_TRAIT}))
    assert capacity.placement_fit(node, wanted) == \
        (0, 'trait:CUSTOM_KVMTUNE_EPT')
    node.traits = frozenset({'CUSTOM_KVMTUNE_EPT',
                             request.DISABLED_TRAIT})
    assert capacity.placement_fit(node, wanted) == \
        (0, '!trait:COMPUTE_STATUS_DISABLED')
    node.traits = frozenset({'CUSTOM_KVMTUNE_EPT'})
    assert capacity.placement_fit(node, wanted) == (4, 'PCPU')


def test_pcpus_free_but_pages_too_few_is_the_page_limit():
    # A real 8-node AMD capture with no huge page reserved; Placement has
    # room for 56 pinned 2-vCPU guests, the nodes hold no huge page.
    facts = host_facts.gather(os.path.join(paths.HOSTS, 'real',
                                           '64amd64-4s2n4ca2co'))
    node = host(PCPU={'total': 64}, MEMORY_MB={'total': 131072})
    wanted = request.from_flavor({
        'name': 'f', 'vcpus': 2, 'ram': 2048, 'disk': 0,
        'extra_specs': {'hw:cpu_policy': 'dedicated',
                        'hw:mem_page_size': 'large'}})
    fit = capacity.host_fit(node, wanted, facts=facts)
    assert (fit.count, fit.limit) == (0, 'pages:large')
    # without the facts: not 0, not room: partial, saying what is missing
    fit = capacity.host_fit(node, wanted)
    assert fit.count is None and '--facts-dir' in fit.reason


@pytest.mark.parametrize('kwargs, words', [
    ({'flavor_names': ['nope']}, "no flavor named 'nope'"),
    ({'flavor_names': [PINNED], 'facts_by_host': {'other': {}}},
     'facts for other, which is no compute node'),
    ({'flavor_names': [PINNED], 'hosts': ['x']}, "no compute node named"),
    ({'flavor_names': [PINNED], 'aggregates': ['a']}, 'no aggregate'),
])
def test_bad_input_names_what_and_the_fix(kwargs, words):
    with pytest.raises(InputError, match=words) as exc:
        capacity.compute(Replay(RECORDING), **kwargs)
    assert exc.value.fix


def test_for_hosts_reads_the_nodes_files_and_plans_each(tmp_path):
    # the front door: the node's nova.conf gives its dedicated CPUs, a
    # profile plans them from the node's own facts; both count as
    # compute() does with them given
    with open(os.path.join(paths.FIXTURES, 'capacity', 'vm.json')) as f:
        (tmp_path / 'vm.json').write_text(f.read())
    assert fits(capacity.for_hosts(Replay(RECORDING), [PINNED],
                                   facts_dir=str(tmp_path))) == {
        ('vm', PINNED): (None, None)}
    (tmp_path / 'vm.conf').write_text('[compute]\ncpu_dedicated_set = 1\n'
                                      'cpu_shared_set = 0\n')
    assert fits(capacity.for_hosts(Replay(RECORDING), [PINNED],
                                   facts_dir=str(tmp_path))) == {
        ('vm', PINNED): (1, 'PCPU')}
    (tmp_path / 'vm.conf').unlink()
    profile = tmp_path / 'kvmtune-ft-capacity.yaml'
    profile.write_text('name: kvmtune-ft-capacity\ndescription: t\n'
                       'source: tests/unit/capacity/test_init.py\n'
                       'tuners:\n- name: cpu_pinning\n'
                       '  params: {isolcpus: false}\n')
    assert fits(capacity.for_hosts(Replay(RECORDING), [PINNED],
                                   facts_dir=str(tmp_path),
                                   profiles=[str(profile)])) == {
        ('vm', PINNED): (1, 'PCPU')}


def test_a_fit_carries_the_nodes_service_host():
    node = host(VCPU={'total': 8})
    node.name, node.service_host = 'compute-1.example.org', 'compute-1'
    fit = capacity.host_fit(node, req(VCPU=2))
    assert (fit.host, fit.service_host, fit.count) == (
        'compute-1.example.org', 'compute-1', 4)
