"""``kvmtune host tag``: the compute node named like the host gets exactly
kvmtune's traits for its facts; every other trait stays; a second run and
a dry run write nothing. Against the stand-in cloud of conftest.py (the
real Placement: tests/functional/test_traits.py)."""

import os

from kvmtune import cli
from tests import paths

INTEL = os.path.join(paths.HOSTS, 'intel-2s-smt-ept-1g')    # compute-intel-1
AMD = os.path.join(paths.HOSTS, 'amd-epyc-npt')              # compute-amd-1
INTEL_TRAITS = {'CUSTOM_KVMTUNE_EPT', 'CUSTOM_KVMTUNE_HUGEPAGES_1G',
                'CUSTOM_KVMTUNE_NESTED', 'CUSTOM_KVMTUNE_VHOST_NET'}
FOREIGN = {'COMPUTE_NODE', 'HW_CPU_X86_VMX', 'CUSTOM_RACK_A1'}


def tag(*extra):
    return cli.main(['host', 'tag', '--os-cloud', 'unit', *extra])


def test_tags_the_node_named_like_the_host_and_keeps_other_traits(
        nova, capsys):
    nova.add_node('compute-amd-1', 'u-amd', FOREIGN)
    nova.add_node('compute-intel-1', 'u-intel', FOREIGN)
    assert tag('--root', INTEL) == 0
    out = capsys.readouterr().out
    assert nova.provider_traits['u-intel'] == FOREIGN | INTEL_TRAITS
    assert nova.provider_traits['u-amd'] == FOREIGN
    assert 'compute node compute-intel-1 (resource provider u-intel)' in out
    assert '  + CUSTOM_KVMTUNE_EPT' in out.splitlines()
    assert 'compute node compute-intel-1: traits updated' in out
    # the missing custom traits were created before the provider's PUT
    created = [p for m, p, _ in nova.writes if p.startswith('/traits/')]
    assert sorted(created) == sorted(f'/traits/{t}' for t in INTEL_TRAITS)
    assert nova.writes[-1][1] == '/resource_providers/u-intel/traits'

    nova.writes.clear()
    assert tag('--root', INTEL) == 0
    assert nova.writes == []
    assert 'traits already match, nothing to change' in \
        capsys.readouterr().out


def test_a_lost_capability_takes_only_its_trait(nova, capsys):
    nova.traits |= INTEL_TRAITS
    nova.add_node('compute-amd-1', 'u-amd', FOREIGN | INTEL_TRAITS)
    assert tag('--root', AMD) == 0
    assert nova.provider_traits['u-amd'] == FOREIGN | {
        'CUSTOM_KVMTUNE_EPT', 'CUSTOM_KVMTUNE_NESTED'}
    lines = capsys.readouterr().out.splitlines()
    assert '  - CUSTOM_KVMTUNE_HUGEPAGES_1G' in lines
    assert '  - CUSTOM_KVMTUNE_VHOST_NET' in lines


def test_dry_run_writes_nothing(nova, capsys):
    nova.add_node('compute-intel-1', 'u-intel', FOREIGN)
    assert tag('--root', INTEL, '--dry-run') == 0
    out = capsys.readouterr().out
    assert nova.writes == []
    assert nova.provider_traits['u-intel'] == FOREIGN
    assert '  + CUSTOM_KVMTUNE_VHOST_NET' in out.splitlines()
    assert 'dry run: nothing written' in out


def test_hypervisor_names_the_node(nova, capsys):
    nova.add_node('compute-intel-1', 'u-intel', FOREIGN)
    nova.add_node('other', 'u-other', FOREIGN)
    assert tag('--root', INTEL, '--hypervisor', 'other') == 0
    assert nova.provider_traits['u-other'] == FOREIGN | INTEL_TRAITS
    assert nova.provider_traits['u-intel'] == FOREIGN
    capsys.readouterr()
    assert tag('--root', INTEL, '--hypervisor', 'nope') == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and "no compute node named 'nope'" in err
