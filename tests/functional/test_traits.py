"""kvmtune host tag against a real Placement, and what the scheduler makes
of the traits: NoValidHost before tagging, ACTIVE after."""

import json

import yaml

from kvmtune import facts as host_facts
from kvmtune.tuning import traits
from tests.functional.conftest import ADMIN
from tests.functional.conftest import FOREIGN
from tests.functional.conftest import INTEL_HOST
from tests.functional.conftest import kvmtune
from tests.functional.conftest import provider_traits


def tag(node, *extra):
    """kvmtune host tag of the compute node named ``node`` (the facts name
    another host, and a multi-compute cloud has several nodes)."""
    return kvmtune('host', 'tag', '--os-cloud', ADMIN, '--hypervisor', node,
                   *extra)


def test_tag_adds_only_kvmtune_traits_then_writes_nothing(
        admin, untagged_node, http_requests):
    name, uuid = untagged_node
    before, _ = provider_traits(admin, uuid)
    wanted = traits.from_facts(host_facts.resolve(root=str(INTEL_HOST)))
    assert traits.EPT in wanted

    dry = tag(name, '--root', INTEL_HOST, '--dry-run')
    assert dry.rc == 0, dry.err
    assert f'+ {traits.EPT}' in dry.out
    assert http_requests.writes() == []
    assert provider_traits(admin, uuid)[0] == before

    first = tag(name, '--root', INTEL_HOST)
    assert first.rc == 0, first.err
    after, _ = provider_traits(admin, uuid)
    assert after == before | wanted
    assert FOREIGN in after

    http_requests.clear()
    second = tag(name, '--root', INTEL_HOST)
    assert second.rc == 0, second.err
    assert 'nothing to change' in second.out
    assert http_requests.writes() == []
    print(f'\nsecond host tag sent {http_requests.by_method()}; kvmtune '
          f'said: {second.out.strip().splitlines()[-1]}')


def test_lost_capability_removes_only_its_trait(admin, untagged_node,
                                                tmp_path):
    name, uuid = untagged_node
    facts = host_facts.resolve(root=str(INTEL_HOST))
    assert tag(name, '--root', INTEL_HOST).rc == 0
    tagged, _ = provider_traits(admin, uuid)

    facts['virt']['ept'] = False
    facts['source'] = 'intel host with EPT turned off'
    facts_file = tmp_path / 'no-ept.json'
    facts_file.write_text(json.dumps(facts))
    result = tag(name, '--facts', facts_file)
    assert result.rc == 0, result.err
    assert f'- {traits.EPT}' in result.out
    assert provider_traits(admin, uuid)[0] == tagged - {traits.EPT}


def test_ept_flavor_no_valid_host_until_the_host_is_tagged(
        admin, untagged_node, base_flavor, image, servers, flavor_cleanup,
        unique, tmp_path):
    # A profile with the EPT tuner alone: the flavor only needs the trait.
    profile = tmp_path / 'kvmtune-ft-ept.yaml'
    profile.write_text(yaml.safe_dump({
        'name': 'kvmtune-ft-ept', 'description': 'functional test',
        'source': 'tests/functional/test_traits.py', 'tuners': ['ept']}))
    flavor_cleanup.append(unique)
    made = kvmtune('flavor', 'apply', '--os-cloud', ADMIN, '--profile',
                   profile, '--from', base_flavor.name, '--name', unique,
                   '--root', INTEL_HOST)
    assert made.rc == 0, made.err
    flavor = admin.compute.find_flavor(unique)
    assert admin.compute.fetch_flavor_extra_specs(flavor.id).extra_specs \
        == {'trait:CUSTOM_KVMTUNE_EPT': 'required'}

    before = servers.boot(unique + '-before', flavor.id, image.id)
    assert before.status == 'ERROR'
    assert 'No valid host' in before.fault['message'], before.fault
    print(f'\nbefore host tag: server {before.id} {before.status}, fault: '
          f'{before.fault["message"]}')

    tagged = tag(untagged_node[0], '--root', INTEL_HOST)
    assert tagged.rc == 0, tagged.err
    after = servers.boot(unique + '-after', flavor.id, image.id)
    assert after.status == 'ACTIVE', after.fault
    print(f'after host tag: server {after.id} {after.status} on '
          f'{after.hypervisor_hostname}')
