import os

import pytest

from kvmtune import facts as host_facts
from kvmtune.tuning import traits
from tests import paths

HOSTS = os.path.join(paths.FIXTURES, 'hosts')


@pytest.mark.parametrize('host, expected', [
    ('pvm-guest-2cpu', {traits.NESTED}),
    ('intel-2s-smt-ept-1g', {traits.EPT, traits.NESTED, traits.HUGEPAGES_1G,
                             traits.VHOST_NET}),
    # pdpe1gb but no 1G page reserved: no 1G trait; no /dev/vhost-net.
    ('amd-epyc-npt', {traits.EPT, traits.NESTED}),
])
def test_fixtures(host, expected):
    facts = host_facts.gather(os.path.join(HOSTS, host))
    assert traits.from_facts(facts) == expected


def test_owned_set():
    assert traits.KVMTUNE_TRAITS == {
        'CUSTOM_KVMTUNE_EPT', 'CUSTOM_KVMTUNE_NESTED',
        'CUSTOM_KVMTUNE_HUGEPAGES_1G', 'CUSTOM_KVMTUNE_VHOST_NET'}
    assert all(t.startswith('CUSTOM_') for t in traits.KVMTUNE_TRAITS)


def test_1g_pool_needs_pdpe1gb_and_pages():
    facts = host_facts.gather(os.path.join(HOSTS, 'intel-2s-smt-ept-1g'))
    facts['cpu']['pdpe1gb'] = False
    assert traits.HUGEPAGES_1G not in traits.from_facts(facts)
    facts['cpu']['pdpe1gb'] = True
    for node in facts['numa']['nodes']:
        for pool in node['hugepages']:
            pool['total'] = 0
    assert traits.HUGEPAGES_1G not in traits.from_facts(facts)


def test_unknown_is_not_present():
    facts = host_facts.gather(os.path.join(HOSTS, 'intel-2s-smt-ept-1g'))
    facts['virt']['ept'] = None
    facts['virt']['nested'] = None
    assert not {traits.EPT, traits.NESTED} & traits.from_facts(facts)


def test_an_arm64_1g_pool_with_pages_is_tagged_without_pdpe1gb():
    facts = host_facts.gather(os.path.join(HOSTS, 'real',
                                           '128arm-2pa2n8cluster4co'))
    assert facts['cpu']['pdpe1gb'] is False
    assert traits.HUGEPAGES_1G not in traits.from_facts(facts)  # 0 pages
    for node in facts['numa']['nodes']:
        for pool in node['hugepages']:
            if pool['size_kb'] == traits.PAGE_1G_KB:
                pool['total'] = 8
    assert traits.HUGEPAGES_1G in traits.from_facts(facts)
