"""kvmtune.facts.arch on the real captures of each architecture, and every
shipped profile planned on every real non-x86 capture: right for that
architecture, or refused with the reason.

The non-x86 captures (tests/fixtures/hosts/README.md): arm64
128arm-2pa2n8cluster4co (4k granule: 64K, 2M, 32M and 1G pools) and
nvidia-dgx-gb10 (no pool directory captured); ppc64 nvidiagpunumanodes
(POWER9: 2M and 1G pools), 256ppc-8n8s4t (POWER7) and 2ps3-2t (Cell), both
without a pool directory; s390x 20s390-2g6s4c (1M pages only).
"""

import os

import pytest

from kvmtune import facts as host_facts
from kvmtune.facts import arch
from kvmtune.tuning import plan as plans
from kvmtune.tuning import profiles
from kvmtune.tuning.tuners.hugepages import Hugepages
from tests import paths

REAL = os.path.join(paths.HOSTS, 'real')
ARCHES = {
    '128arm-2pa2n8cluster4co': arch.ARM64,
    'nvidia-dgx-gb10': arch.ARM64,
    '256ppc-8n8s4t': arch.PPC64,
    'nvidiagpunumanodes': arch.PPC64,
    '2ps3-2t': arch.PPC64,
    '20s390-2g6s4c': arch.S390X,
    'rv64-milkvpioneer': arch.RISCV64,
    '128ia64-17n4s2c': arch.IA64,
    '256ia64-64n2s2c': arch.IA64,
}
NON_X86 = [name for name, found in ARCHES.items()
           if found in (arch.ARM64, arch.PPC64, arch.S390X)]
PROFILES = sorted(name[:-len('.yaml')] for name in os.listdir(
    os.path.join(paths.REPO, 'kvmtune', 'data', 'profiles')))
GIB_KB = 1024 * 1024


def gather(name):
    return host_facts.gather(os.path.join(REAL, name), probe_kvm=False)


def build(profile, facts):
    return plans.build_plan(
        profiles.load(profile, profiles.search_dirs()), facts)


@pytest.mark.parametrize('name', sorted(
    n for n in os.listdir(REAL) if os.path.isdir(os.path.join(REAL, n))))
def test_each_real_capture_names_its_architecture(name):
    assert gather(name)['cpu']['arch'] == ARCHES.get(name, arch.X86)


def test_unreadable_cpuinfo_is_no_architecture():
    assert arch.detect({}, '') is None
    assert arch.of({'cpu': {'arch': 'm68k'}}) is None
    assert arch.of({'cpu': {}}) is None         # an older facts document


@pytest.mark.parametrize('name, sizes', [
    ('128arm-2pa2n8cluster4co', [64, 2048, 32 * 1024, GIB_KB]),
    ('20s390-2g6s4c', [1024]),
    ('nvidiagpunumanodes', [2048, GIB_KB]),
    ('nvidia-dgx-gb10', None),      # no pool directory: cannot be told
    ('256ppc-8n8s4t', None),
    # x86 without a pool directory: 2M always, 1G with pdpe1gb
    ('16amd64-8n2c', [2048]),
    ('x86_64-epyc_7451', [2048, GIB_KB]),
])
def test_page_sizes_are_the_kernels(name, sizes):
    assert arch.page_sizes_kb(gather(name)) == sizes


def test_the_arm64_1g_pool_is_1g_without_an_x86_flag():
    facts = gather('128arm-2pa2n8cluster4co')
    assert facts['cpu']['pdpe1gb'] is False     # x86's flag, not arm64's
    assert arch.offers_size(facts, GIB_KB) is True
    plan = build('hugepages', facts)
    assert plan.withheld == []
    assert plan.kernel_args == ['default_hugepagesz=1G', 'hugepagesz=1G',
                                'hugepages=249']
    assert {r['size_kb'] for r in plan.hugepages} == {GIB_KB}
    sizes = next(c for c in plan.checks if c.name == 'page-sizes')
    assert sizes.status == 'pass' and '64k, 2M, 32M, 1G' in sizes.message
    assert not any(c.name == 'pdpe1gb' for c in plan.checks)


def test_a_size_the_arm64_kernel_lacks_is_refused():
    facts = gather('128arm-2pa2n8cluster4co')
    facts['memory']['hugepages'] = [
        p for p in facts['memory']['hugepages'] if p['size_kb'] != GIB_KB]
    # auto: the largest of 1G and 2M the kernel offers
    assert Hugepages({}, facts).pool_size() == '2M'
    assert Hugepages({}, facts).withheld() == []
    asked = Hugepages({'host_page_size': '1G'}, facts)
    assert asked.withheld() == [
        'the huge page pool is withheld: the aarch64 kernel offers 64k, '
        '2M, 32M pages, not 1G']
    assert asked.pool_args() is None and asked.hugepage_pools() == []


def _all_text(plan):
    """Every value the plan would write, as one string."""
    parts = [str(plan.nova_conf), ' '.join(plan.kernel_args),
             str(plan.modprobe), str(plan.extra_specs)]
    return ' '.join(parts)


@pytest.mark.parametrize('profile', PROFILES)
@pytest.mark.parametrize('name', NON_X86)
def test_every_profile_is_right_or_refused_on_non_x86(name, profile):
    facts = gather(name)
    found = facts['cpu']['arch']
    plan = build(profile, facts)
    text = _all_text(plan)
    # x86 only, whatever the profile and whether refused or not
    for x86 in ('EPYC', 'svm', 'npt', 'vmx', 'kvm_intel', 'kvm_amd',
                'HW_CPU_X86', 'CUSTOM_KVMTUNE_EPT'):
        assert x86 not in text, (x86, text)
    sizes = arch.page_sizes_kb(facts)
    for arg in plan.kernel_args:
        if arg.startswith(('hugepagesz=', 'default_hugepagesz=')):
            size = arg.partition('=')[2]
            assert sizes and {'2M': 2048, '1G': GIB_KB}[size] in sizes, arg
    for request in plan.hugepages:
        assert request['size_kb'] in sizes
    reasons = ' '.join(item['reason'] for item in plan.withheld)
    tuners = {t.name for t in profiles.load(
        profile, profiles.search_dirs()).tuners(facts)}
    if found == arch.S390X:
        written = ' '.join(plan.kernel_args) + str(plan.nova_conf)
        assert '2M' not in written and 'hugepagesz' not in written
        assert plan.hugepages == []
        for refused in ({'cpu_pinning', 'hugepages', 'nested', 'ept'}
                        & tuners):
            assert refused in {item['tuner'] for item in plan.withheld}
        if tuners & {'cpu_pinning', 'hugepages'}:
            assert 'reports no NUMA topology' in reasons
    if 'nested' in tuners:
        assert f'nested virtualization is refused on {found}' in reasons
        assert 'libvirt' not in plan.nova_conf or not {
            'cpu_mode', 'cpu_models', 'cpu_model_extra_flags'} & set(
                plan.nova_conf['libvirt'])
    if 'ept' in tuners:
        assert f'EPT/NPT is refused on {found}' in reasons
    if 'hugepages' in tuners and sizes is None:
        assert 'offers are unknown' in reasons
    if not plan.withheld:
        # the plan stands: what it asks for is this architecture's
        assert not tuners & {'nested', 'ept'}
        if 'hugepages' in tuners:
            assert plan.hugepages and plan.kernel_args
        split = [c for c in plan.checks if c.name == 'dedicated-cpus']
        if split and split[0].status == 'pass':     # PS3: one core, none
            assert plan.nova_conf['compute']['cpu_dedicated_set']


def test_ppc64_power9_gets_its_1g_pool():
    plan = build('hugepages', gather('nvidiagpunumanodes'))
    assert plan.withheld == []
    assert plan.kernel_args[:2] == ['default_hugepagesz=1G', 'hugepagesz=1G']


def test_s390x_hugepages_is_refused_with_nova_s_reason():
    plan = build('hugepages', gather('20s390-2g6s4c'))
    assert plan.kernel_args == [] and plan.hugepages == []
    assert 'reserved_huge_pages' not in plan.nova_conf.get('DEFAULT', {})
    reason, = [item['reason'] for item in plan.withheld]
    assert reason.startswith('hw:mem_page_size (huge pages) is refused on '
                             's390x')
    check = next(c for c in plan.checks if c.name == 'page-sizes')
    assert check.status == 'fail' and '2M' not in (check.fix or '')


def test_x86_keeps_its_rules():
    """The refusals are for other architectures: x86 plans as before."""
    facts = host_facts.gather(os.path.join(paths.HOSTS, 'amd-epyc-npt'),
                              probe_kvm=False)
    assert facts['cpu']['arch'] == arch.X86
    plan = build('nested-host', facts)
    assert plan.withheld == []
    assert plan.modprobe and 'kvm_amd' in str(plan.modprobe)
    assert arch.nested_refusal(facts) is None
    assert arch.ept_refusal(facts) is None
    assert arch.nova_numa_refusal(facts, 'x') is None
