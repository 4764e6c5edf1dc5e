import pytest

from kvmtune.facts import kernel


def test_isolcpus_flags_and_cpus():
    args = kernel.parse_args('isolcpus=managed_irq,domain,2-5,8')
    assert args['isolcpus'] == [2, 3, 4, 5, 8]
    assert args['isolcpus_flags'] == ['managed_irq', 'domain']


def test_isolcpus_plain_and_nohz_full():
    args = kernel.parse_args('isolcpus=1,3 nohz_full=1-3')
    assert args['isolcpus'] == [1, 3]
    assert args['isolcpus_flags'] == []
    assert args['nohz_full'] == [1, 2, 3]


def test_the_first_isolcpus_counts_as_the_kernel_keeps_it():
    """kernel/sched/isolation.c housekeeping_setup ignores a second
    isolcpus= whose CPUs differ for the same housekeeping type."""
    assert kernel.parse_args('isolcpus=1 isolcpus=2')['isolcpus'] == [1]


def test_hugepages_pairs_in_order():
    args = kernel.parse_args('default_hugepagesz=1G hugepagesz=1G '
                             'hugepages=16 hugepagesz=2M hugepages=512')
    assert args['default_hugepagesz'] == '1G'
    assert args['hugepagesz'] == ['1G', '2M']
    assert args['hugepages'] == [
        {'size': '1G', 'count': 16, 'size_kb': 1048576},
        {'size': '2M', 'count': 512, 'size_kb': 2048}]


def test_hugepages_before_any_size_is_the_default_size():
    args = kernel.parse_args('hugepages=64 default_hugepagesz=1GB')
    assert args['hugepages'] == [
        {'size': '1GB', 'count': 64, 'size_kb': 1048576}]
    args = kernel.parse_args('hugepages=64')
    assert args['hugepages'] == [{'size': '2M', 'count': 64,
                                  'size_kb': 2048}]


def test_hugepages_per_node():
    args = kernel.parse_args('hugepagesz=2M hugepages=0:100,1:28')
    assert args['hugepages'] == [{'size': '2M', 'count': 128,
                                  'size_kb': 2048,
                                  'per_node': {'0': 100, '1': 28}}]


def test_iommu_flags():
    args = kernel.parse_args('intel_iommu=on,sm_on iommu=pt '
                             'iommu.passthrough=1 iommu.strict=0 amd_iommu=off'
                             ' iommu_foo=1')
    assert args['iommu'] == {'intel_iommu': 'on,sm_on', 'iommu': 'pt',
                             'iommu.passthrough': '1', 'iommu.strict': '0',
                             'amd_iommu': 'off'}


def test_invalid_values_are_listed_not_fatal():
    args = kernel.parse_args('isolcpus=domain,x-y nohz_full=3 hugepages=lots')
    assert args['invalid'] == ['isolcpus=domain,x-y', 'hugepages=lots']
    assert args['nohz_full'] == [3]
    assert args['isolcpus'] == []


def test_bare_words_and_empty():
    args = kernel.parse_args('')
    assert args['isolcpus'] == [] and args['hugepages'] == []
    assert kernel.parse_args('isolcpus nohz_full')['isolcpus'] == []


@pytest.mark.parametrize('arg', ['isolcpus=2-4294967295',
                                 'nohz_full=0-99999999',
                                 'isolcpus=domain,0-'])
def test_cpu_lists_beyond_nr_cpus_are_invalid_not_built(arg):
    """isolcpus=2-4294967295 once built a set of 4 billion CPUs."""
    args = kernel.parse_args(f'ro {arg} quiet')
    assert args['invalid'] == [arg]
    assert args['isolcpus'] == [] and args['nohz_full'] == []
