"""A flavor as a whole, as nova-api judges it at boot, against Nova 34's
own ``numa_get_constraints`` (in Nova's Python, tests.paths.NOVA_PYTHON):
the rule it refuses a flavor by, or the guest NUMA nodes it makes. The
cross product of the specs that shape a NUMA fit is checked the same way
by tests/unit/capacity/test_numa.py; here, the rules that cross product
does not reach."""

import json
import subprocess

import pytest

from kvmtune.tuning import flavor_topology
from tests.unit.tuning.export.consumers import needs_nova
from tests.unit.tuning.export.consumers import NOVA_PYTHON

# Runs in Nova's Python: per flavor, Nova's exception name, or per guest
# node (dedicated vCPUs, shared vCPUs, memory MB).
_NOVA = r'''
import json, sys, warnings
warnings.simplefilter('ignore')
from nova import exception, objects
from nova.virt import hardware
objects.register_all()
out = {}
for name, (vcpus, ram, specs) in json.load(sys.stdin).items():
    flavor = objects.Flavor(vcpus=vcpus, memory_mb=ram, extra_specs=specs)
    try:
        topology = hardware.numa_get_constraints(
            flavor, objects.ImageMeta.from_dict({}))
    except exception.NovaException as exc:
        out[name] = type(exc).__name__
        continue
    out[name] = [[sorted(c.pcpuset), sorted(c.cpuset), c.memory]
                 for c in (topology.cells if topology else [])]
json.dump(out, sys.stdout)
'''

FLAVORS = {
    'uneven': (3, 3072, {'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0',
                         'hw:numa_cpus.1': '1-2', 'hw:numa_mem.0': '1024',
                         'hw:numa_mem.1': '2048'}),
    'mixed-2-nodes': (4, 4096, {'hw:cpu_policy': 'mixed',
                                'hw:cpu_dedicated_mask': '0-1',
                                'hw:numa_nodes': '2'}),
    'pcpu-resources': (2, 2048, {'resources:PCPU': '2'}),
    'pcpu-too-many': (2, 2048, {'resources:PCPU': '3'}),
    'pcpu-and-policy': (2, 2048, {'resources:PCPU': '2',
                                  'hw:cpu_policy': 'dedicated'}),
    'vcpu-and-pcpu': (2, 2048, {'resources:PCPU': '2',
                                'resources:VCPU': '2'}),
    'ht-trait-forbidden': (2, 2048, {'hw:cpu_policy': 'dedicated',
                                     'trait:HW_CPU_HYPERTHREADING':
                                     'forbidden'}),
    'ht-trait-and-policy': (2, 2048, {'hw:cpu_policy': 'dedicated',
                                      'hw:cpu_thread_policy': 'require',
                                      'trait:HW_CPU_HYPERTHREADING':
                                      'required'}),
    'cpu-out-of-range': (2, 2048, {'hw:numa_nodes': '1',
                                   'hw:numa_cpus.0': '0-2',
                                   'hw:numa_mem.0': '2048'}),
    'cpu-twice': (2, 2048, {'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0-1',
                            'hw:numa_cpus.1': '1', 'hw:numa_mem.0': '1024',
                            'hw:numa_mem.1': '1024'}),
    'cpu-unassigned': (3, 2048, {'hw:numa_nodes': '2',
                                 'hw:numa_cpus.0': '0', 'hw:numa_cpus.1': '1',
                                 'hw:numa_mem.0': '1024',
                                 'hw:numa_mem.1': '1024'}),
    'memory-sum': (2, 2048, {'hw:numa_nodes': '2', 'hw:numa_cpus.0': '0',
                             'hw:numa_cpus.1': '1', 'hw:numa_mem.0': '1024',
                             'hw:numa_mem.1': '512'}),
    'mem-without-cpus': (2, 2048, {'hw:numa_nodes': '2',
                                   'hw:numa_mem.0': '1024',
                                   'hw:numa_mem.1': '1024'}),
    'asymmetric': (3, 2048, {'hw:numa_nodes': '2'}),
    'mask-everything': (2, 2048, {'hw:cpu_policy': 'mixed',
                                  'hw:cpu_dedicated_mask': '0-1'}),
    'mask-beyond': (2, 2048, {'hw:cpu_policy': 'mixed',
                              'hw:cpu_dedicated_mask': '0,5'}),
    'mask-on-dedicated': (2, 2048, {'hw:cpu_policy': 'dedicated',
                                    'hw:cpu_dedicated_mask': '0'}),
    'page-without-unit': (2, 2048, {'hw:mem_page_size': '2M'}),
    'shared-no-topology': (2, 2048, {'hw:numa_cpus.0': '0-1'}),
}


def ours(vcpus, ram, specs):
    try:
        topology = flavor_topology.guest_topology(vcpus, ram, specs)
    except flavor_topology.Refused as exc:
        return exc.rule
    return [[sorted(p), sorted(v), m] for p, v, m in topology.nodes]


@needs_nova
def test_each_flavor_is_judged_as_nova_judges_it():
    done = subprocess.run([NOVA_PYTHON, '-c', _NOVA],
                          input=json.dumps(FLAVORS), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    novas = json.loads(done.stdout)
    assert {name: ours(*f) for name, f in FLAVORS.items()} == novas
    # the cases reach both kinds of answer
    assert 'ImageNUMATopologyCPUDuplicates' in novas.values()
    assert novas['mixed-2-nodes'] == [[[0, 1], [], 2048], [[], [2, 3], 2048]]


def test_a_refusal_names_the_rule_and_why():
    with pytest.raises(flavor_topology.Refused) as refused:
        flavor_topology.guest_topology(2, 2048, {
            'hw:emulator_threads_policy': 'isolate'})
    assert refused.value.rule == 'BadRequirementEmulatorThreadsPolicy'
    assert 'dedicated or mixed' in str(refused.value)
