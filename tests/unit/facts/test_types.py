"""The facts TypedDicts name exactly the keys gather() writes.

mypy trusts kvmtune.facts.types; these tests hold it to the documents
gather() really makes from the captured hosts, and to schema.FACTS (what
load() checks), so the static shape cannot drift from the runtime one.
"""

import os

import pytest

from kvmtune import facts as host_facts
from kvmtune.facts import schema
from kvmtune.facts import types
from tests import paths

HOSTS = sorted(
    os.path.join(top, name)
    for top in (paths.HOSTS, os.path.join(paths.HOSTS, 'real'))
    for name in os.listdir(top)
    if os.path.isfile(os.path.join(top, name, 'proc', 'cpuinfo')))

# TypedDict -> where its documents are in a facts document
PARTS = (
    (types.Facts, lambda f: [f]),
    (types.CpuFacts, lambda f: [f['cpu']]),
    (types.VirtFacts, lambda f: [f['virt']]),
    (types.MemoryFacts, lambda f: [f['memory']]),
    (types.NumaFacts, lambda f: [f['numa']]),
    (types.NumaNode, lambda f: f['numa']['nodes']),
    (types.HugepagePool, lambda f: [
        pool for node in f['numa']['nodes'] for pool in node['hugepages']]
        + f['memory']['hugepages']),
    (types.VhostNetFacts, lambda f: [f['vhost_net']]),
    (types.KernelFacts, lambda f: [f['kernel']]),
    (types.KernelArgs, lambda f: [f['kernel']['args']]),
    (types.HugepagesArg, lambda f: f['kernel']['args']['hugepages']),
    (types.Versions, lambda f: [f['versions']]),
)


def test_there_are_captured_hosts():
    assert len(HOSTS) >= 20


@pytest.mark.parametrize('root', HOSTS, ids=os.path.basename)
def test_gathered_keys_are_the_typed_keys(root):
    facts = host_facts.gather(root, probe_kvm=False)
    for typed, parts in PARTS:
        for part in parts(facts):
            keys = set(part)
            assert typed.__required_keys__ <= keys, typed.__name__
            assert keys <= (typed.__required_keys__
                            | typed.__optional_keys__), typed.__name__


def test_kernel_args_of_every_kind_are_typed():
    args = host_facts.kernel.parse_args(
        'isolcpus=managed_irq,2-3 nohz_full=2-3 hugepages=0:2,1:2 '
        'hugepagesz=1G hugepages=4 default_hugepagesz=1G intel_iommu=on '
        'isolcpus=bad')
    assert set(args) == (types.KernelArgs.__required_keys__
                         | types.KernelArgs.__optional_keys__)
    allowed = (types.HugepagesArg.__required_keys__
               | types.HugepagesArg.__optional_keys__)
    assert {key for entry in args['hugepages'] for key in entry} == allowed


def test_checked_schema_keys_are_typed():
    def walk(spec, typed, where):
        names = typed.__required_keys__ | typed.__optional_keys__
        for key, item in spec.items():
            assert key in names, f'{where}.{key}'
            hint = typed.__annotations__[key]
            if isinstance(item, dict) and hasattr(hint, '__required_keys__'):
                walk(item, hint, f'{where}.{key}')

    checked = {key: value for key, value in schema.FACTS.items()
               if key != 'numa'}
    walk(checked, types.Facts, 'facts')
    walk(schema.FACTS['numa']['nodes'][0], types.NumaNode, 'numa.nodes')
