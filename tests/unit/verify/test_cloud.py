"""The cloud layer's comparisons: Placement inventories and traits, and the
profiles' flavors, on the bodies Nova and Placement return. The calls
themselves run against the test cloud in tests/functional/test_verify.py."""

import pytest

from kvmtune.errors import CloudError
from kvmtune.errors import InputError
from kvmtune.openstack import flavors as cloud_flavors
from kvmtune.tuning import plan as plans
from kvmtune import verify
from kvmtune.verify import cloud
from tests import paths

TUNED = f'{paths.HOSTS}/intel-2s-smt-ept-1g'


@pytest.fixture(scope='module')
def built():
    return plans.for_host(['pinned-hugepages-ept'], root=TUNED)


def dedicated(built):
    from kvmtune.facts.cpulist import parse_cpu_spec
    return len(parse_cpu_spec(
        built[0].nova_conf['compute']['cpu_dedicated_set']))


def by_name(found):
    return {check.name: check for check in found}


def test_inventory_as_planned_passes_and_vcpu_left_is_drift(built):
    want = dedicated(built)
    found = cloud.inventory_checks(
        built, {'PCPU': {'total': want, 'allocation_ratio': 1.0}},
        {'host': 'c1'}, 'restart')
    checks = by_name(found)
    assert checks['PCPU total'].status == verify.PASS
    assert checks['PCPU total'].live == str(want)
    if 'cpu_shared_set' in built[0].nova_conf['compute']:
        assert checks['VCPU total'].status == verify.DRIFT
        assert checks['VCPU total'].live == 'no inventory'


def test_pcpu_missing_after_a_missed_restart_is_drift_with_the_fix(built):
    # nova-compute not restarted: it still reports every CPU as VCPU.
    found = by_name(cloud.inventory_checks(
        built, {'VCPU': {'total': 48, 'allocation_ratio': 16.0}},
        {'host': 'c1'}, 'restart nova-compute on c1'))
    pcpu = found['PCPU total']
    assert pcpu.status == verify.DRIFT and pcpu.live == 'no inventory'
    assert pcpu.fix == 'restart nova-compute on c1'
    assert pcpu.expected.startswith(f'{dedicated(built)} (cpu_dedicated_set')


def test_required_traits_come_from_the_plans_extra_specs(built):
    wanted = cloud.required_traits(built)
    assert wanted == ['CUSTOM_KVMTUNE_EPT'], built[0].extra_specs
    ok = cloud.trait_check(built, {'CUSTOM_KVMTUNE_EPT', 'HW_CPU_X86_VMX'},
                           {}, 'tag it')
    assert ok.status == verify.PASS and ok.fix is None
    gone = cloud.trait_check(built, {'HW_CPU_X86_VMX'}, {}, 'tag it')
    assert gone.status == verify.DRIFT and gone.fix == 'tag it'
    assert 'missing: CUSTOM_KVMTUNE_EPT' in gone.live


def test_no_required_trait_no_row():
    built = plans.for_host(['cpu-pinning'], root=TUNED)
    assert cloud.trait_check(built, set(), {}, 'tag') is None


def flavor(name, specs, profile='pinned-hugepages-ept', base='m1.small'):
    return {'name': name, 'extra_specs': specs,
            'description': cloud_flavors.description(profile, base)}


def test_a_kvmtune_flavor_as_planned_passes_and_an_edit_is_drift(built):
    specs = dict(built[0].extra_specs)
    edited = dict(specs, **{'hw:mem_page_size': 'small'})
    found = by_name(cloud.flavor_checks(built, [
        flavor('a', specs), flavor('b', edited),
        {'name': 'by-hand', 'extra_specs': {'hw:cpu_policy': 'shared'}},
    ], 'admin'))
    assert found['flavor a'].status == verify.PASS
    drift = found['flavor b']
    assert drift.status == verify.DRIFT
    assert 'hw:mem_page_size: small -> ' in drift.live
    assert drift.fix == ('kvmtune flavor apply --os-cloud admin --profile '
                         'pinned-hugepages-ept --from m1.small --name b')
    # a flavor kvmtune did not make is none of its business
    assert 'flavor by-hand' not in found


def test_no_flavor_of_the_profile_is_unknown_never_pass(built):
    found = cloud.flavor_checks(built, [flavor('x', {}, profile='other')],
                                'admin')
    assert [c.status for c in found] == [verify.UNKNOWN]
    assert 'no flavor carries kvmtune\'s mark' in found[0].reason


class _Cloud:
    """A cloud whose every call fails as a 5xx would (the real 5xx is in
    tests/functional/test_verify.py)."""
    name = 'broken'

    def compute(self, *args, **kwargs):
        raise CloudError('HTTP 503: Service Unavailable',
                         source='cloud broken')

    placement = compute


def test_a_cloud_that_fails_is_unknown_with_its_line(built):
    ctx = verify.Context(cloud=_Cloud(), host='c1')
    found = cloud.checks(built, ctx)
    assert [c.status for c in found] == [verify.UNKNOWN]
    assert 'HTTP 503' in found[0].reason
    fleet = cloud.fleet(lambda host: built, _Cloud())
    assert [c.status for c in fleet] == [verify.UNKNOWN]


def test_no_cloud_is_unknown():
    found = cloud.checks([], verify.Context())
    assert found[0].status == verify.UNKNOWN
    assert '--os-cloud' in found[0].reason


def test_the_fleet_front_door_plans_each_node_from_its_facts(
        tmp_path, monkeypatch):
    import shutil

    # a facts directory that is no directory is refused before any cloud
    # is connected (the name below is in no clouds.yaml)
    with pytest.raises(InputError) as exc:
        cloud.for_fleet('no-such-cloud', profiles=['cpu-pinning'],
                        facts_dir=str(tmp_path / 'none'))
    assert 'not a directory' in str(exc.value)
    # each compute node gets the plan of its own facts file, a node
    # without one an UNKNOWN row, then the flavors once
    shutil.copy(f'{paths.FIXTURES}/capacity/vm.json', tmp_path / 'c1.json')
    monkeypatch.setattr(cloud, '_compute_nodes',
                        lambda c: [('c1', 'u1'), ('c2', 'u2')])
    asked = {}
    monkeypatch.setattr(cloud, 'provider_checks',
                        lambda plans, c, host, uuid: asked.setdefault(
                            host, [p.profile for p in plans]) and [])
    found = cloud.for_fleet(_Cloud(), profiles=['cpu-pinning'],
                            facts_dir=str(tmp_path))
    assert asked == {'c1': ['cpu-pinning']}
    assert [(c.host, c.name, c.status) for c in found][:1] == [
        ('c2', 'plan', verify.UNKNOWN)]
