"""kvmtune.boot.changes: what the booted host lacks of a plan, on the
facts of real captures."""

import copy
import os

import pytest

from kvmtune.boot import changes
from kvmtune.errors import InputError
from kvmtune import facts as host_facts
from tests import paths

INTEL = os.path.join(paths.HOSTS, 'intel-2s-smt-ept-1g')


@pytest.fixture(scope='module')
def intel():
    """RHEL 9 capture booted with default_hugepagesz=1G hugepagesz=1G
    hugepages=32 isolcpus=managed_irq,domain,1-19,... (see its cmdline)."""
    return host_facts.gather(INTEL)


def _booted(facts, line):
    facts = copy.deepcopy(facts)
    facts['kernel']['cmdline'] = line
    return facts


def test_arguments_the_booted_line_has_are_not_pending(intel):
    assert changes.cmdline_reasons(
        ['intel_iommu=on', 'iommu=pt', 'default_hugepagesz=1G',
         'hugepagesz=1G', 'hugepages=32'], intel, INTEL) == {}


def test_a_value_that_differs_is_pending_under_its_reason(intel):
    assert changes.cmdline_reasons(
        ['isolcpus=1-19,21-39,41-59,61-79', 'default_hugepagesz=2M',
         'hugepagesz=2M', 'hugepages=1024'], intel, INTEL) == {
        # the booted isolcpus=managed_irq,domain,<the same CPUs> isolates
        # them from the domains as the plan's does: booted; the pools
        # differ
        'hugepages': ['default_hugepagesz=2M', 'hugepagesz=2M',
                      'hugepages=1024']}
    assert changes.cmdline_reasons(['isolcpus=2-19'], intel, INTEL) == {
        'cmdline': ['isolcpus=2-19']}


@pytest.mark.parametrize('booted, pending', [
    ('isolcpus=2-7', False),
    ('isolcpus=domain,managed_irq,2-7', False),     # the operator's flags
    ('isolcpus=nohz,managed_irq,2-7', True),        # no domain isolation
    ('isolcpus=2-7 isolcpus=2-9', False),           # the second ignored
    ('isolcpus=2-9 isolcpus=2-7', True),            # the kernel keeps 2-9
    ('nohz_full=2-9 isolcpus=nohz,domain,2-7', True),   # ignored whole
])
def test_isolcpus_compares_as_the_kernel_keeps_it(intel, booted, pending):
    facts = _booted(intel, 'root=/dev/sda1 ' + booted)
    found = changes.cmdline_reasons(['isolcpus=2-7'], facts, 'x')
    assert bool(found) is pending


@pytest.mark.parametrize('booted, pending', [
    ('hugepagesz=2048k hugepages=512', False),     # spelling
    ('hugepagesz=2M hugepages=512 hugepagesz=1G hugepages=4', False),
    ('hugepagesz=1G hugepages=512', True),          # another size
    ('hugepages=512', False),                       # x86 default 2M
    ('hugepagesz=2M hugepages=256', True),          # short pool
    ('hugepagesz=2M hugepages=0:256,1:256', True),  # per node, not total
])
def test_pools_compare_as_the_kernel_reads_them(intel, booted, pending):
    facts = _booted(intel, 'root=/dev/sda1 ' + booted)
    found = changes.cmdline_reasons(['hugepagesz=2M', 'hugepages=512'],
                                    facts, 'x')
    assert bool(found) is pending


def test_an_unknown_booted_line_is_refused(intel):
    with pytest.raises(InputError, match='booted command line is unknown'):
        changes.cmdline_reasons(['isolcpus=2'], _booted(intel, None), 'x')
    # nothing to compare, nothing to refuse
    assert changes.cmdline_reasons([], _booted(intel, None), 'x') == {}


def test_a_booted_argument_the_kernel_could_not_parse_is_doubtful(intel):
    facts = host_facts.gather(INTEL)
    facts = _booted(facts, 'ro isolcpus=2-x')
    facts['kernel']['args']['invalid'] = ['isolcpus=2-x']
    with pytest.raises(InputError, match="'isolcpus=2-x'.*doubtful"):
        changes.cmdline_reasons(['isolcpus=2-5'], facts, 'x')


def test_dropped_arguments_still_booted_are_pending_with_a_minus(intel):
    assert changes.dropped_reasons(
        ['iommu=pt', 'hugepages=32', 'skew_tick=2'], ['hugepages=32'],
        intel) == {'cmdline': ['-iommu=pt']}


@pytest.mark.parametrize('loaded, pending', [
    ({'kvm_intel': {'nested': 'Y', 'ept': 'Y'}}, []),      # bool prints Y
    ({'kvm_intel': {'nested': 'N', 'ept': 'Y'}}, ['kvm_intel nested=1']),
    ({'kvm_intel': {'ept': 'Y'}}, ['kvm_intel nested=1']),  # no such param
    ({'kvm_intel': None}, []),                  # loads with the file's
    ({}, []),
])
def test_module_options_against_the_loaded_module(loaded, pending):
    found = changes.module_reasons(
        {'/etc/modprobe.d/kvm.conf': '# x\noptions kvm_intel nested=1 '
                                     'ept=1\n'}, loaded)
    assert found == ({'module': pending} if pending else {})
