"""gather() on the three host trees in tests/fixtures/hosts/."""

import os

import pytest

from kvmtune import facts as host_facts
from kvmtune.facts import schema
from tests import paths

HOSTS = os.path.join(paths.FIXTURES, 'hosts')
PVM = os.path.join(HOSTS, 'pvm-guest-2cpu')
INTEL = os.path.join(HOSTS, 'intel-2s-smt-ept-1g')
AMD = os.path.join(HOSTS, 'amd-epyc-npt')
DESIGN_KEYS = ['schema', 'source', 'hostname', 'cpu', 'virt', 'memory',
               'numa', 'vhost_net', 'kernel', 'versions']
G = 1024 * 1024


def pools(node):
    return {p['size_kb']: (p['total'], p['free']) for p in node['hugepages']}


@pytest.fixture(scope='module', params=[PVM, INTEL, AMD],
                ids=['pvm', 'intel', 'amd'])
def any_host(request):
    return host_facts.gather(request.param)


@pytest.fixture(scope='module')
def pvm():
    return host_facts.gather(PVM)


@pytest.fixture(scope='module')
def intel():
    return host_facts.gather(INTEL)


@pytest.fixture(scope='module')
def amd():
    return host_facts.gather(AMD)


def test_design_keys_and_shape(any_host):
    assert list(any_host)[:len(DESIGN_KEYS)] == DESIGN_KEYS
    assert list(schema.problems(any_host)) == []
    assert any_host['schema'] == 1
    assert any_host['versions'] == {'libvirt': None, 'qemu': None}


def test_numa_nodes_cover_online_cpus(any_host):
    in_nodes = sorted(c for n in any_host['numa']['nodes'] for c in n['cpus'])
    assert in_nodes == any_host['cpu']['online']
    siblings = sorted(c for g in any_host['cpu']['thread_siblings']
                      for c in g)
    assert siblings == any_host['cpu']['online']


def test_pvm_capture_of_this_machine(pvm):
    virt = pvm['virt']
    assert pvm['source'] == PVM
    assert virt['kvm_device'] is True
    assert virt['kvm_usable'] is True      # recorded by host capture
    assert virt['kvm_error'] is None
    assert virt['nested'] is True
    assert virt['nested_mechanism'] == 'pvm'
    assert virt['mechanism'] == 'pvm'
    assert virt['modules']['kvm_pvm'] is not None
    assert virt['modules']['kvm_intel'] is None
    assert virt['modules']['kvm_amd'] is None
    assert virt['ept'] is False            # no EPT/NPT flag, no module
    assert virt['is_guest'] is True
    assert virt['hypervisor_vendor'] == 'KVM'
    assert 'vmx' not in pvm['cpu']['flags']
    assert 'svm' not in pvm['cpu']['flags']
    assert pvm['cpu']['online'] == [0, 1]
    assert pvm['cpu']['thread_siblings'] == [[0], [1]]
    assert pvm['cpu']['threads_per_core'] == 1
    assert pvm['vhost_net'] == {'available': False, 'device': False,
                                'module': 'absent'}
    [node] = pvm['numa']['nodes']
    assert node['cpus'] == [0, 1]
    assert pools(node) == {2048: (0, 0), G: (0, 0)}
    assert pvm['memory']['hugepage_default_kb'] == 2048


def test_intel_topology(intel):
    cpu = intel['cpu']
    assert cpu['vendor'] == 'GenuineIntel'
    assert cpu['online'] == list(range(80))
    assert (cpu['sockets'], cpu['cores_per_socket'],
            cpu['threads_per_core']) == (2, 20, 2)
    assert cpu['thread_siblings'] == [[n, n + 40] for n in range(40)]
    assert {'vmx', 'ept', 'pdpe1gb'} <= set(cpu['flags'])
    assert cpu['pdpe1gb'] is True
    nodes = intel['numa']['nodes']
    assert [n['id'] for n in nodes] == [0, 1]
    assert nodes[0]['cpus'] == list(range(20)) + list(range(40, 60))
    assert nodes[1]['cpus'] == list(range(20, 40)) + list(range(60, 80))
    assert nodes[0]['memory_mb'] == 196294012 // 1024


def test_intel_virt_and_pages(intel):
    virt = intel['virt']
    assert virt['mechanism'] == 'vmx'
    assert (virt['nested'], virt['nested_mechanism']) == (True, 'vmx')
    assert virt['ept'] is True
    assert virt['is_guest'] is False
    assert virt['hypervisor_vendor'] is None
    assert virt['kvm_usable'] is None     # constructed: nothing probed
    assert [pools(n)[G] for n in intel['numa']['nodes']] == [(16, 10),
                                                             (16, 14)]
    assert intel['memory']['hugepage_default_kb'] == G
    assert intel['vhost_net'] == {'available': True, 'device': True,
                                  'module': 'loaded'}
    args = intel['kernel']['args']
    assert args['default_hugepagesz'] == '1G'
    assert args['hugepages'] == [{'size': '1G', 'count': 32,
                                  'size_kb': G}]
    assert args['iommu'] == {'intel_iommu': 'on', 'iommu': 'pt'}
    assert args['isolcpus_flags'] == ['managed_irq', 'domain']
    assert not {0, 40, 20, 60} & set(args['isolcpus'])
    assert len(args['isolcpus']) == 76


def test_amd_npt_is_ept(amd):
    virt = amd['virt']
    assert amd['cpu']['vendor'] == 'AuthenticAMD'
    assert {'svm', 'npt', 'pdpe1gb'} <= set(amd['cpu']['flags'])
    assert virt['mechanism'] == 'svm'
    assert virt['modules']['kvm_amd']['npt'] == 'Y'
    assert virt['modules']['kvm_amd']['nested'] == '1'
    assert virt['ept'] is True
    assert (virt['nested'], virt['nested_mechanism']) == (True, 'svm')


def test_amd_nps4(amd):
    nodes = amd['numa']['nodes']
    assert len(nodes) == 4
    assert nodes[1]['cpus'] == list(range(16, 32)) + list(range(80, 96))
    assert amd['cpu']['thread_siblings'][5] == [5, 69]
    assert (amd['cpu']['sockets'], amd['cpu']['cores_per_socket']) == (1, 64)
    assert [pools(n)[2048][0] for n in nodes] == [2048] * 4
    assert all(pools(n)[G] == (0, 0) for n in nodes)
    assert amd['kernel']['args']['hugepages'][0]['per_node'] == {
        '0': 2048, '1': 2048, '2': 2048, '3': 2048}
    assert amd['vhost_net']['module'] == 'absent'
