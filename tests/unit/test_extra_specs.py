"""kvmtune's extra-spec rules against Nova 34's (nova/api/validation/...)."""

import pytest

from kvmtune import extra_specs
from kvmtune.errors import InputError

VALID = [
    ('hw:cpu_policy', 'dedicated'),
    ('hw:cpu_policy', 'mixed'),
    ('hw:cpu_thread_policy', 'isolate'),
    ('hw:emulator_threads_policy', 'share'),
    ('hw:mem_page_size', 'large'),
    ('hw:mem_page_size', 'small'),
    ('hw:mem_page_size', 'any'),
    ('hw:mem_page_size', '1GB'),
    ('hw:mem_page_size', '2MB'),
    ('hw:mem_page_size', '2048'),
    ('hw:mem_page_size', '1GiB'),
    ('hw:numa_nodes', '2'),
    ('hw:vif_multiqueue_enabled', 'true'),
    ('hw:vif_multiqueue_enabled', 'No'),
    ('trait:CUSTOM_KVMTUNE_EPT', 'required'),
    ('trait:CUSTOM_KVMTUNE_NESTED', 'forbidden'),
    ('trait1:CUSTOM_X', 'required'),
    ('trait:HW_CPU_X86_VMX', 'required'),
    ('trait_grp-1:HW_CPU_X86_SVM', 'required'),
    ('resources:VCPU', '2'),
    ('resources:CUSTOM_KVMTUNE_SLOT', '1'),
]

INVALID = [
    ('hw:cpu_policy', 'pinned', 'dedicated, shared, mixed'),
    ('hw:cpu_thread_policy', 'avoid', 'prefer, isolate, require'),
    ('hw:emulator_threads_policy', 'shared', 'isolate'),
    ('hw:mem_page_size', '3Q', 'small, large, any'),
    ('hw:mem_page_size', 'huge', 'small, large, any'),
    ('hw:numa_nodes', '0', 'an integer >= 1'),
    ('hw:numa_nodes', 'two', 'an integer >= 1'),
    ('hw:vif_multiqueue_enabled', 'maybe', 'true or false'),
    ('trait:CUSTOM_KVMTUNE_EPT', 'yes', 'required, forbidden'),
    ('trait:CUSTOM_lower', 'required', '[A-Z0-9_]+'),
    ('trait:CUSTOM_', 'required', '[A-Z0-9_]+'),
    ('trait:HW_CPU_X86_EPT', 'required', 'CUSTOM_'),
    ('resources:WIDGETS', '1', 'CUSTOM_'),
    ('resources:VCPU', 'x', 'an integer'),
    ('hw:cpu_pinning', 'dedicated', "'hw' namespace"),
    ('quota:cpu_shares', '10', 'not an extra spec kvmtune sets'),
]


@pytest.mark.parametrize('name,value', VALID)
def test_valid(name, value):
    extra_specs.validate(name, value, source='p.yaml')


@pytest.mark.parametrize('name,value,hint', INVALID)
def test_invalid_is_one_line_naming_file_key_and_values(name, value, hint):
    with pytest.raises(InputError) as err:
        extra_specs.validate(name, value, source='p.yaml')
    line = err.value.line()
    assert line.startswith(f'p.yaml: {name}: ')
    assert hint in line
    assert '\n' not in line


def test_profile_key_is_named_when_given():
    with pytest.raises(InputError) as err:
        extra_specs.validate('hw:mem_page_size', '3M3', source='x.yaml',
                             key='hugepages.params.page_size')
    assert err.value.key == 'hugepages.params.page_size'
    assert 'hw:mem_page_size' in err.value.line()


def test_names_with_groups_follow_nova_pattern():
    spec = extra_specs.CUSTOM_TRAIT
    assert spec.problem('required') is None
    assert extra_specs.find('trait' + 'g' * 65 + ':CUSTOM_A')[0] is None
