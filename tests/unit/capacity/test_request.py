"""A flavor's Placement request as kvmtune reads it, against Nova's own
``ResourceRequest.from_request_spec`` (the scheduler's code, in Nova's
Python: tests.paths.NOVA_PYTHON) on the same flavors."""

import json
import subprocess

import pytest

from kvmtune.capacity import request
from kvmtune.tuning import flavor_topology
from tests.unit.tuning.export.consumers import needs_nova
from tests.unit.tuning.export.consumers import NOVA_PYTHON

# What nova-scheduler does for a flavor and an empty image (no BFV).
_NOVA = r'''
import json, sys
from nova import objects
from nova.scheduler import utils
objects.register_all()
out = {}
for f in json.loads(sys.argv[1]):
    flavor = objects.Flavor(
        name=f['name'], vcpus=f['vcpus'], memory_mb=f['ram'],
        root_gb=f['disk'], ephemeral_gb=f['OS-FLV-EXT-DATA:ephemeral'],
        swap=f['swap'], extra_specs=f['extra_specs'])
    spec = objects.RequestSpec(flavor=flavor, is_bfv=False,
                               image=objects.ImageMeta.from_dict({}))
    rr = utils.ResourceRequest.from_request_spec(spec)
    required, forbidden = set(), set()
    for group in rr.get_request_group(None), *rr._rg_by_id.values():
        required |= set(group.required_traits)
        forbidden |= set(group.forbidden_traits)
    out[f['name']] = {'resources': rr.merged_resources(),
                      'required': sorted(required),
                      'forbidden': sorted(forbidden)}
json.dump(out, sys.stdout)
'''


def flavor(name, vcpus=2, ram=2048, disk=20, ephemeral=0, swap=0,
           **specs):
    return {'name': name, 'vcpus': vcpus, 'ram': ram, 'disk': disk,
            'OS-FLV-EXT-DATA:ephemeral': ephemeral, 'swap': swap,
            'extra_specs': specs}


FLAVORS = [
    flavor('shared'),
    flavor('pinned', **{'hw:cpu_policy': 'dedicated',
                        'hw:mem_page_size': 'large'}),
    flavor('pinned-isolate-emu', vcpus=4, **{
        'hw:cpu_policy': 'dedicated',
        'hw:emulator_threads_policy': 'isolate'}),
    flavor('thread-isolate', **{'hw:cpu_policy': 'dedicated',
                                'hw:cpu_thread_policy': 'isolate'}),
    flavor('thread-require', **{'hw:cpu_policy': 'dedicated',
                                'hw:cpu_thread_policy': 'require'}),
    flavor('mixed', vcpus=4, **{'hw:cpu_policy': 'mixed',
                                'hw:cpu_dedicated_mask': '^0'}),
    flavor('swap-eph', ephemeral=10, swap=1500),
    flavor('no-disk', disk=0),
    flavor('override', **{'resources:VCPU': '0', 'resources:PCPU': '2',
                          'resources:CUSTOM_FOO': '1'}),
    flavor('traits', **{'trait:CUSTOM_KVMTUNE_EPT': 'required',
                        'trait:HW_CPU_X86_AVX512F': 'forbidden',
                        'trait1:CUSTOM_X': 'required',
                        'resources1:CUSTOM_Y': '1'}),
]


@needs_nova
def test_resources_and_traits_are_novas():
    done = subprocess.run([NOVA_PYTHON, '-c', _NOVA, json.dumps(FLAVORS)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    nova = json.loads(done.stdout)
    for f in FLAVORS:
        ours = request.from_flavor(f)
        theirs = nova[f['name']]
        assert ours.resources == theirs['resources'], f['name']
        assert sorted(ours.required) == theirs['required'], f['name']
        assert sorted(ours.forbidden - {request.DISABLED_TRAIT}) == \
            theirs['forbidden'], f['name']


def test_numa_needs_from_the_extra_specs():
    pinned = request.from_flavor(FLAVORS[1]).numa
    assert (pinned.cells, pinned.policy, pinned.page_kb) == \
        (((2, 0, 2048),), 'dedicated', 'large')
    split = request.from_flavor(flavor('split', vcpus=4, ram=4096, **{
        'hw:cpu_policy': 'dedicated', 'hw:numa_nodes': '2',
        'hw:mem_page_size': '1GB'})).numa
    assert (split.cells, split.page_kb) == \
        (((2, 0, 2048), (2, 0, 2048)), 1048576)
    # a mixed guest's nodes are contiguous vCPU ranges: 0-1 both on node 0
    mixed = request.from_flavor(flavor('mixed', vcpus=4, ram=4096, **{
        'hw:cpu_policy': 'mixed', 'hw:cpu_dedicated_mask': '0-1',
        'hw:numa_nodes': '2'})).numa
    assert mixed.cells == ((2, 0, 2048), (0, 2, 2048))
    uneven = request.from_flavor(flavor('uneven', vcpus=3, ram=3072, **{
        'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0',
        'hw:numa_cpus.1': '1-2', 'hw:numa_mem.0': '1024',
        'hw:numa_mem.1': '2048'})).numa
    assert (uneven.cells, uneven.policy) == \
        (((0, 1, 1024), (0, 2, 2048)), 'shared')
    assert request.from_flavor(FLAVORS[0]).numa is None


@pytest.mark.parametrize('specs, rule', [
    ({'hw:cpu_policy': 'mixed'}, 'RequiredMixedOrRealtimeCPUMask'),
    ({'hw:numa_nodes': '3'}, 'ImageNUMATopologyAsymmetric'),
    ({'hw:mem_page_size': '3X'}, 'ValidationError'),
    ({'hw:mem_page_size': '1G'}, 'MemoryPageSizeInvalid'),
    ({'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0'},
     'ImageNUMATopologyIncomplete'),
    ({'hw:cpu_policy': 'dedicated', 'hw:cpu_dedicated_mask': '0'},
     'RequiredMixedInstancePolicy'),
    ({'hw:cpu_policy': 'mixed', 'hw:cpu_dedicated_mask': '0-1'},
     'InvalidMixedInstanceDedicatedMask'),
    ({'hw:emulator_threads_policy': 'isolate'},
     'BadRequirementEmulatorThreadsPolicy'),
    ({'hw:cpu_thread_policy': 'isolate'},
     'CPUThreadPolicyConfigurationInvalid'),
])
def test_what_nova_refuses_is_refused_by_its_rule(specs, rule):
    with pytest.raises(flavor_topology.Refused) as refused:
        request.from_flavor(flavor('x', **specs))
    assert refused.value.rule == rule


@pytest.mark.parametrize('specs, words', [
    ({'resources:vcpu': '1'}, 'not a resource class'),
    ({'resources:CUSTOM_X': '-1'}, 'negative'),
    ({'hw:cpu_policy': 'dedicated', 'hw:pmem': 'small'}, 'not modelled'),
])
def test_what_kvmtune_cannot_count_is_said(specs, words):
    with pytest.raises(request.Unsupported, match=words):
        request.from_flavor(flavor('x', **specs))
