"""The seven tuners: declarations valid, host-derived values and checks."""

import os

import pytest
from stevedore import extension

from kvmtune.errors import InputError
from kvmtune import facts as host_facts
from kvmtune import nova_releases
from kvmtune.tuning import extra_specs
from kvmtune.tuning import tuners
from kvmtune.tuning.tuners import base
from kvmtune.tuning.tuners import cpu_pinning
from kvmtune.tuning.tuners import hugepages
from kvmtune.tuning.tuners import nested
from tests import paths

HOSTS = os.path.join(paths.FIXTURES, 'hosts')
FIXTURES = ('intel-2s-smt-ept-1g', 'amd-epyc-npt', 'pvm-guest-2cpu')
# Params a choice cannot go without.
COMPANIONS = {('images_type', 'lvm'): {'images_volume_group': 'nova-vg'},
              ('policy', 'mixed'): {'dedicated_mask': '^0'}}
SEVEN = ['cpu_pinning', 'disk_io', 'ept', 'hugepages', 'nested', 'numa',
         'vhost_net']


@pytest.fixture(scope='module', params=FIXTURES)
def fixture_facts(request):
    return host_facts.gather(os.path.join(HOSTS, request.param))


def all_tuners():
    return [tuners.get(name) for name in SEVEN]


def test_stevedore_namespace_lists_all_seven():
    manager = extension.ExtensionManager('kvmtune.tuners')
    assert sorted(manager.names()) == SEVEN
    for ext in manager:
        assert issubclass(ext.plugin, base.Tuner)
        assert ext.plugin.name == ext.name


def test_unknown_tuner_lists_known_ones():
    with pytest.raises(InputError) as err:
        tuners.get('cpu_pining', source='p.yaml')
    assert 'unknown tuner' in err.value.line()
    assert 'cpu_pinning, disk_io, ept' in err.value.line()


@pytest.mark.parametrize('tuner', all_tuners(), ids=SEVEN)
def test_declarations_are_valid_extra_specs(tuner):
    for name in tuner.OWNED_EXTRA_SPECS:
        spec, problem = extra_specs.find(name)
        assert problem is None, (name, problem)
    for name in tuner.EXTRA_SPECS:
        assert name in tuner.OWNED_EXTRA_SPECS
    for param in tuner.PARAMS:
        assert param.help, param.name
        param.convert(param.default)
        for choice in param.choices:
            param.convert(choice)
            if param.spec:
                extra_specs.validate(param.spec, choice)
        if param.spec and param.default is not None:
            extra_specs.validate(param.spec, base.render(param.default))
        if param.spec:
            for choice in extra_specs.SPECS[param.spec].enum:
                param.convert(choice)


@pytest.mark.parametrize('tuner', all_tuners(), ids=SEVEN)
def test_every_choice_renders_valid_extra_specs(tuner, fixture_facts):
    variants = [{}]
    for param in tuner.PARAMS:
        choices = param.choices
        if param.spec:
            choices = extra_specs.SPECS[param.spec].enum or choices
        variants += [dict({param.name: choice},
                          **COMPANIONS.get((param.name, choice), {}))
                     for choice in choices]
    for params in variants:
        instance = tuner(params, fixture_facts)
        specs = instance.extra_specs()
        extra_specs.validate_all(specs, source=tuner.name)
        assert set(specs) <= set(tuner.OWNED_EXTRA_SPECS)
        for check in instance.checks():
            assert check.status in (base.PASS, base.WARN, base.FAIL)
            assert check.message and '\n' not in check.message
            if check.status != base.PASS:
                assert check.fix and '\n' not in check.fix


# -- cpu_pinning -----------------------------------------------------------

def smt_host():
    """2 nodes x 2 cores x 2 threads: siblings (0,4) (1,5) (2,6) (3,7)."""
    return {
        'cpu': {'online': list(range(8)), 'threads_per_core': 2,
                'thread_siblings': [[0, 4], [1, 5], [2, 6], [3, 7]],
                'flags': ['vmx', 'ept', 'pdpe1gb'], 'pdpe1gb': True,
                'vendor': 'GenuineIntel'},
        'numa': {'nodes': [
            {'id': 0, 'cpus': [0, 1, 4, 5], 'memory_mb': 8192,
             'hugepages': [{'size_kb': 1048576, 'total': 0, 'free': 0}]},
            {'id': 1, 'cpus': [2, 3, 6, 7], 'memory_mb': 8192,
             'hugepages': [{'size_kb': 1048576, 'total': 0, 'free': 0}]}]},
        'memory': {'total_mb': 16384},
        # the booted line, and what the facts read of it
        'kernel': {'cmdline': 'ro isolcpus=1,3,5,7',
                   'args': {'isolcpus': [1, 3, 5, 7]}},
        'virt': {'mechanism': 'vmx', 'ept': True, 'nested': False,
                 'nested_mechanism': None},
    }


def test_host_keeps_first_core_siblings_of_each_node():
    tuner = cpu_pinning.CpuPinning({}, smt_host())
    conf = tuner.nova_conf()
    assert conf[('compute', 'cpu_shared_set')] == '0,2,4,6'
    assert conf[('compute', 'cpu_dedicated_set')] == '1,3,5,7'
    assert conf[('workarounds', 'disable_fallback_pcpu_query')] == 'true'
    filters = conf[('filter_scheduler', 'enabled_filters')].split(',')
    assert filters[:5] == nova_releases.get().default_filters()
    assert filters[-1] == 'NUMATopologyFilter'
    assert tuner.kernel_args() == ['isolcpus=1,3,5,7']
    checks = {c.name: c for c in tuner.checks()}
    assert checks['isolcpus'].status == base.PASS


def test_isolcpus_differs_warns_with_kernel_fix():
    host = smt_host()
    host['kernel']['cmdline'] = 'ro isolcpus=managed_irq,2-3'
    host['kernel']['args']['isolcpus'] = [2, 3]
    checks = {c.name: c for c in cpu_pinning.CpuPinning({}, host).checks()}
    assert checks['isolcpus'].status == base.WARN
    assert 'isolates 2-3' in checks['isolcpus'].message
    # one is there: replaced, the operator's flag kept
    assert checks['isolcpus'].fix.startswith(
        'replace isolcpus=managed_irq,2-3 with '
        'isolcpus=managed_irq,domain,1,3,5,7 on the kernel command line')
    host['kernel']['cmdline'] = 'ro'
    host['kernel']['args']['isolcpus'] = []
    checks = {c.name: c for c in cpu_pinning.CpuPinning({}, host).checks()}
    assert checks['isolcpus'].fix.startswith('add isolcpus=1,3,5,7 ')
    no_iso = cpu_pinning.CpuPinning({'isolcpus': False}, host)
    assert no_iso.kernel_args() == []
    assert 'isolcpus' not in {c.name for c in no_iso.checks()}


def test_one_cpu_host_has_nothing_to_dedicate():
    host = {'cpu': {'online': [0], 'thread_siblings': [[0]]},
            'numa': {'nodes': [{'id': 0, 'cpus': [0]}]}}
    tuner = cpu_pinning.CpuPinning({}, host)
    assert ('compute', 'cpu_dedicated_set') not in tuner.nova_conf()
    checks = {c.name: c for c in tuner.checks()}
    assert checks['dedicated-cpus'].status == base.FAIL


def test_mixed_policy_needs_a_dedicated_mask():
    mixed = cpu_pinning.CpuPinning({'policy': 'mixed',
                                    'dedicated_mask': '^0'}, smt_host())
    assert mixed.extra_specs()['hw:cpu_dedicated_mask'] == '^0'
    for params in ({'policy': 'mixed'}, {'dedicated_mask': '^0'}):
        with pytest.raises(InputError) as err:
            cpu_pinning.CpuPinning.parse_params(params, 'p.yaml')
        assert err.value.key == 'cpu_pinning.params.dedicated_mask'
    with pytest.raises(InputError) as err:
        cpu_pinning.CpuPinning.parse_params(
            {'policy': 'mixed', 'dedicated_mask': '0-x'}, 'p.yaml')
    assert 'a guest CPU list' in err.value.line()


def test_require_thread_policy_fails_without_smt():
    host = {'cpu': {'online': [0, 1], 'threads_per_core': 1},
            'numa': {'nodes': [{'id': 0, 'cpus': [0, 1]}]}}
    checks = {c.name: c for c in cpu_pinning.CpuPinning(
        {'thread_policy': 'require'}, host).checks()}
    assert checks['smt-thread-policy'].status == base.FAIL


# -- hugepages -------------------------------------------------------------

def test_hugepages_sizing_rule():
    tuner = hugepages.Hugepages({}, smt_host())
    # 16 GB host: reserve 16384 / 8 = 2048 MB; 50% of the rest in 1G pages.
    assert tuner.host_memory_mb() == 2048
    assert tuner.kernel_args() == ['default_hugepagesz=1G', 'hugepagesz=1G',
                                   'hugepages=7']
    conf = tuner.nova_conf()
    assert conf[('DEFAULT', 'reserved_host_memory_mb')] == '2048'
    assert conf[('DEFAULT', 'reserved_huge_pages')] == [
        'node:0,size:1GB,count:1', 'node:1,size:1GB,count:1']
    big = {'memory': {'total_mb': 400000}}
    assert hugepages.Hugepages({}, big).host_memory_mb() == 4096
    tiny = {'memory': {'total_mb': 2048}}
    assert hugepages.Hugepages({}, tiny).host_memory_mb() == 512
    assert hugepages.Hugepages({'reserved_host_memory_mb': 1000},
                               big).host_memory_mb() == 1000


def test_no_pool_fails_with_kernel_args_fix():
    checks = {c.name: c for c in hugepages.Hugepages({}, smt_host()).checks()}
    pool = checks['hugepage-pool']
    assert pool.status == base.FAIL
    assert 'default_hugepagesz=1G hugepagesz=1G hugepages=7' in pool.fix


def test_no_pdpe1gb_means_2m_or_a_failure():
    host = smt_host()
    host['cpu']['pdpe1gb'] = False
    auto = hugepages.Hugepages({}, host)
    assert auto.pool_size() == '2M'
    assert 'hugepagesz=2M' in auto.kernel_args()
    forced = hugepages.Hugepages({'host_page_size': '1G'}, host)
    checks = {c.name: c for c in forced.checks()}
    assert checks['pdpe1gb'].status == base.FAIL
    assert '2M' in checks['pdpe1gb'].fix


def test_guest_page_size_must_match_pool():
    checks = {c.name: c for c in hugepages.Hugepages(
        {'page_size': '2MB'}, smt_host()).checks()}
    assert checks['guest-page-size'].status == base.FAIL
    assert hugepages.page_size_kb('1GB') == 1048576
    assert hugepages.page_size_kb('2048') == 2048
    assert hugepages.page_size_kb('large') is None


def test_existing_pool_keeps_its_size_and_reserves():
    host = smt_host()
    for node in host['numa']['nodes']:
        node['hugepages'][0]['total'] = 1
    tuner = hugepages.Hugepages({}, host)
    assert 'hugepages=2' in tuner.kernel_args()
    checks = {c.name: c for c in tuner.checks()}
    assert checks['hugepage-pool'].status == base.PASS
    assert checks['host-reserved-pages'].status == base.WARN
    assert hugepages.Hugepages({'host_reserved_pages': 0},
                               host).reserved_pages() is None


# -- nested ----------------------------------------------------------------


def test_nested_off_on_intel_gives_the_reload_line():
    tuner = nested.Nested({}, smt_host())
    assert tuner.modprobe() == {'kvm_intel': {'nested': '1'}}
    assert tuner.nova_conf() == {('libvirt', 'cpu_mode'): 'host-passthrough'}
    (check,) = tuner.checks()
    assert check.status == base.FAIL
    assert check.fix == ('echo "options kvm_intel nested=1" >> '
                         '/etc/modprobe.d/kvm.conf && modprobe -r '
                         'kvm_intel && modprobe kvm_intel')


def pvm_host():
    return {'cpu': {'flags': ['hypervisor', 'pdpe1gb'], 'online': [0, 1]},
            'virt': {'mechanism': 'pvm', 'nested': True,
                     'nested_mechanism': 'pvm', 'ept': False}}


def test_pvm_is_nested_capable_without_vmx():
    # virt_type kvm on PVM (auto picks qemu there: stock guests do not boot)
    tuner = nested.Nested({'virt_type': 'kvm'}, pvm_host())
    assert tuner.modprobe() == {}
    (check,) = tuner.checks()
    assert check.status == base.WARN
    assert 'without VMX' in check.message
    vmx = nested.Nested({'trait': 'HW_CPU_X86_VMX', 'virt_type': 'kvm'},
                        pvm_host())
    assert vmx.extra_specs() == {'trait:HW_CPU_X86_VMX': 'required'}
    checks = {c.name: c for c in vmx.checks()}
    assert checks['nested-trait'].status == base.FAIL
