"""``kvmtune capacity`` predicts what the scheduler then places.

On the test cloud, for each flavor kind (pinned on huge pages, pinned
on small pages, shared), capacity's count per compute node is checked by
booting servers of that flavor one at a time until Nova answers
NoValidHost (the server goes to ERROR): the servers that went ACTIVE, by
host, must be exactly the prediction. Guests are QEMU TCG here (emulated);
the counts are the scheduler's, not the guests' speed.

With ``KVMTUNE_SAVE_CAPACITY_RECORDING=FILE`` the GET responses capacity
read are saved for the unit tier (tests/fixtures/capacity/).
"""

import json
import os
import shutil
import time

import pytest
import yaml

from kvmtune.openstack import connection
from tests.functional.conftest import ADMIN
from tests.functional.conftest import kvmtune
from tests.functional import test_pinning

tuned_compute = test_pinning.tuned_compute

PROFILE = {
    'name': 'kvmtune-ft-capacity',
    'description': 'functional test: kvmtune capacity',
    'source': 'tests/functional/test_capacity.py',
    'tuners': [{'name': 'cpu_pinning', 'params': {'thread_policy': 'prefer',
                                                  'isolcpus': False}},
               {'name': 'hugepages', 'params': {
                   'page_size': 'large', 'host_page_size': '2M',
                   'memory_percent': 1}}],
}
# Most servers any prediction here can ask for (a bound, not a guess).
MAX_BOOTS = 12
MAX_FLEET_BOOTS = 24


@pytest.fixture
def pinned_profile(tmp_path):
    path = tmp_path / 'kvmtune-ft-capacity.yaml'
    path.write_text(yaml.safe_dump(PROFILE))
    return path


@pytest.fixture
def facts_dir(compute_node, tmp_path, tuned_compute):
    """This host's facts, named as Nova names the (first) compute node:
    the libvirt compute is this host."""
    directory = tmp_path / 'facts'
    directory.mkdir()
    inspect = kvmtune('host', 'inspect', '--format', 'json')
    assert inspect.rc == 0, inspect.err
    (directory / f'{compute_node[0]}.json').write_text(inspect.out)
    return directory


@pytest.fixture
def recording(monkeypatch):
    """Every GET capacity sends, with its answer."""
    seen = {}
    real = connection.Cloud._request

    def record(self, service, microversion, method, path, body=None):
        answer = real(self, service, microversion, method, path, body)
        if method == 'GET':
            seen[f'{service} {path}'] = answer
        return answer
    monkeypatch.setattr(connection.Cloud, '_request', record)
    yield seen
    keep = os.environ.get('KVMTUNE_SAVE_CAPACITY_RECORDING')
    if keep and seen:
        with open(keep, 'w') as f:
            json.dump(seen, f, indent=1, sort_keys=True)


def make_flavor(admin, base_flavor, name, specs, flavor_cleanup):
    flavor_cleanup.append(name)
    flavor = admin.compute.create_flavor(
        name=name, ram=base_flavor.ram, vcpus=base_flavor.vcpus,
        disk=base_flavor.disk, is_public=True)
    if specs:
        admin.compute.create_flavor_extra_specs(flavor.id, specs)
    return flavor


def predict(flavor, facts_dir, profile, host):
    result = kvmtune('capacity', '--os-cloud', ADMIN, '--flavor',
                     flavor.name, '--facts-dir', facts_dir, '--profile',
                     profile, '--host', host, '-f', 'json')
    assert result.rc == 0, result.err
    doc = json.loads(result.out)
    print(f'\ncapacity {flavor.name}: {doc["fits"]}, '
          f'{doc["api_calls"]} API calls')
    assert not doc['partial'], doc['fits']
    return {fit['host']: fit for fit in doc['fits']}


def fill(admin, servers, flavor, image, unique, bound=MAX_BOOTS):
    """Boot until NoValidHost; {hypervisor: ACTIVE servers}."""
    placed = {}
    for i in range(bound + 1):
        server = servers.boot(f'{unique}-{i}', flavor.id, image.id)
        if server.status == 'ERROR':
            assert 'No valid host' in str(server.fault), server.fault
            return placed
        host = admin.compute.get_server(server.id).hypervisor_hostname
        placed[host] = placed.get(host, 0) + 1
    raise AssertionError(f'still placing after {bound + 1} servers')


@pytest.mark.compute('libvirt')
@pytest.mark.parametrize('kind, specs', [
    ('pinned-pages', {'hw:cpu_policy': 'dedicated',
                      'hw:mem_page_size': 'large'}),
    ('pinned', {'hw:cpu_policy': 'dedicated'}),
])
def test_the_prediction_is_what_the_scheduler_places(
        admin, host_hugepages, tuned_compute, pinned_profile, facts_dir,
        compute_node, base_flavor, image, servers, unique, flavor_cleanup,
        recording, kind, specs):
    flavor = make_flavor(admin, base_flavor, f'{unique}-{kind}', specs,
                         flavor_cleanup)
    # this host (the first compute): servers asks the scheduler for it
    fits = predict(flavor, facts_dir, pinned_profile, compute_node[0])
    placed = fill(admin, servers, flavor, image, unique)
    assert {h: f['count'] for h, f in fits.items() if f['count']} == placed
    assert all(f['limit'] for f in fits.values())


# -- several computes of different shapes (CI's fake round: --computes 3) --

@pytest.fixture
def computes(test_cloud):
    from kvmtune.testcloud import api
    from kvmtune.testcloud import procs

    layout = api.layout()
    found = procs.computes_of(procs.load_state(layout), layout)
    assert len(found) >= 3, f'needs --computes 3, the cloud has {found}'
    return found


@pytest.fixture
def first_disabled(admin, computes):
    """The first compute's service disabled (Nova puts
    COMPUTE_STATUS_DISABLED on its provider): the scheduler places on the
    extra computes only, and capacity must say 0 there, and why."""
    host = computes[0]['host']
    service = next(admin.compute.services(host=host, binary='nova-compute'))
    admin.compute.disable_service(service, host, 'nova-compute',
                                  disabled_reason='kvmtune capacity test')
    provider = computes[0]['provider']
    for _ in range(120):
        traits = admin.placement.get(
            f'/resource_providers/{provider}/traits',
            microversion='1.6').json()['traits']
        if 'COMPUTE_STATUS_DISABLED' in traits:
            break
        time.sleep(0.5)     # hang bound: 60 s for Nova's trait sync
    else:
        raise AssertionError('no COMPUTE_STATUS_DISABLED on the provider')
    yield host
    admin.compute.enable_service(service, host, 'nova-compute')


@pytest.fixture
def fleet_facts(computes, tmp_path):
    """Each extra compute's facts and nova.conf, named by its host."""
    directory = tmp_path / 'fleet'
    directory.mkdir()
    for entry in computes[1:]:
        shutil.copy(entry['facts'], directory / f'{entry["host"]}.json')
        shutil.copy(entry['conf'], directory / f'{entry["host"]}.conf')
    return directory


@pytest.fixture
def hyperthreading(admin, computes):
    """HW_CPU_HYPERTHREADING on the extra computes' providers, as the
    libvirt driver reports it on a host with SMT (their shapes have two
    threads per core; the fake driver reports no CPU traits); removed at
    the end."""
    def traits(provider):
        return admin.placement.get(f'/resource_providers/{provider}/traits',
                                   microversion='1.6').json()

    def put(provider, names, generation):
        answer = admin.placement.put(
            f'/resource_providers/{provider}/traits', json={
                'traits': sorted(names),
                'resource_provider_generation': generation},
            microversion='1.6')
        assert answer.status_code == 200, answer.text

    added = []
    for entry in computes[1:]:
        now = traits(entry['provider'])
        if 'HW_CPU_HYPERTHREADING' not in now['traits']:
            put(entry['provider'],
                set(now['traits']) | {'HW_CPU_HYPERTHREADING'},
                now['resource_provider_generation'])
            added.append(entry['provider'])
    yield
    for provider in added:
        now = traits(provider)
        put(provider, set(now['traits']) - {'HW_CPU_HYPERTHREADING'},
            now['resource_provider_generation'])


@pytest.mark.compute('fake')
@pytest.mark.parametrize('kind, vcpus, ram, disk, specs', [
    # 8 GB on pages: the 1 GiB pools of compute 2 hold it, compute 3's
    # 4 GB of 2 MiB pages per node do not (PCPUs free, pages too few)
    ('pinned-pages', 16, 8192, 1, {'hw:cpu_policy': 'dedicated',
                                   'hw:mem_page_size': 'large'}),
    ('pinned', 16, 2048, 1, {'hw:cpu_policy': 'dedicated'}),
    # VCPU's max_unit is the shared set's size (2): 2 vCPUs, and a disk
    # large enough that DISK_GB, not VCPU x 16, runs out first
    ('shared', 2, 1024, 60, {}),
    # no compute has the trait: 0 everywhere, the trait named
    ('trait', 2, 1024, 1, {'hw:cpu_policy': 'dedicated',
                           'trait:CUSTOM_KVMTUNE_NESTED': 'required'}),
    # Nova's own fit: shared vCPUs with a NUMA topology only go to a node with
    # shared CPUs (node 0 on the extra computes), and their memory is
    # that node's x ram_allocation_ratio: 48 GB guests, fewer than
    # Placement's MEMORY_MB alone allows
    ('shared-numa', 2, 49152, 1, {'hw:numa_nodes': '1'}),
    # only cores with two free threads
    ('require', 16, 2048, 1, {'hw:cpu_policy': 'dedicated',
                              'hw:cpu_thread_policy': 'require'}),
    # the emulator threads' CPU once, on the host node of guest node 0
    ('emulator-isolate-2-nodes', 16, 4096, 1, {
        'hw:cpu_policy': 'dedicated', 'hw:numa_nodes': '2',
        'hw:emulator_threads_policy': 'isolate'}),
])
def test_the_fleets_prediction_is_what_the_scheduler_places(
        admin, computes, first_disabled, fleet_facts, image, servers,
        unique, flavor_cleanup, kind, vcpus, ram, disk, specs, request):
    if kind == 'require':
        request.getfixturevalue('hyperthreading')
    # Some guests already run: a pinned 12-vCPU one on 1 GiB pages, which
    # takes CPUs and pages of one node of the host it lands on.
    running = f'{unique}-running'
    flavor_cleanup.append(running)
    small = admin.compute.create_flavor(name=running, ram=4096, vcpus=12,
                                        disk=1, is_public=True)
    admin.compute.create_flavor_extra_specs(small.id, {
        'hw:cpu_policy': 'dedicated', 'hw:mem_page_size': '1GB'})
    servers.host = None
    first = servers.boot(f'{unique}-running', small.id, image.id)
    assert first.status == 'ACTIVE', first.fault
    name = f'{unique}-{kind}'
    flavor_cleanup.append(name)
    flavor = admin.compute.create_flavor(name=name, ram=ram, vcpus=vcpus,
                                         disk=disk, is_public=True)
    if specs:
        admin.compute.create_flavor_extra_specs(flavor.id, specs)
    result = kvmtune('capacity', '--os-cloud', ADMIN, '--flavor', name,
                     '--facts-dir', fleet_facts, '-f', 'json')
    assert result.rc == 0, result.err
    doc = json.loads(result.out)
    fits = {fit['host']: fit for fit in doc['fits']}
    print(f'\ncapacity {kind}: '
          f'{ {h: (f["count"], f["limit"]) for h, f in fits.items()} }, '
          f'{doc["api_calls"]} API calls')
    assert not doc['partial'], doc['fits']
    assert (fits[first_disabled]['count'], fits[first_disabled]['limit']) \
        == (0, '!trait:COMPUTE_STATUS_DISABLED')
    predicted = {h: f['count'] for h, f in fits.items() if f['count']}
    assert sum(predicted.values()) <= MAX_FLEET_BOOTS, predicted
    servers.host = None          # the scheduler chooses among them all
    placed = fill(admin, servers, flavor, image, unique,
                  bound=MAX_FLEET_BOOTS)
    print(f'placed {placed}')
    assert placed == predicted
    if kind == 'pinned-pages':
        assert fits['kvmtune-compute-3']['limit'].startswith('pages:')
    if kind == 'require':
        assert placed, 'require placed nothing: the trait is missing'
    if kind == 'trait':
        assert {f['limit'] for h, f in fits.items()
                if h != first_disabled} == {
            'trait:CUSTOM_KVMTUNE_NESTED'}


@pytest.mark.compute('fake')
@pytest.mark.parametrize('specs, rule', [
    ({'hw:emulator_threads_policy': 'isolate'},
     'BadRequirementEmulatorThreadsPolicy'),
    ({'hw:cpu_policy': 'mixed', 'hw:cpu_dedicated_mask': '0-1'},
     'InvalidMixedInstanceDedicatedMask'),
])
def test_a_flavor_nova_refuses_is_refused_by_its_rule(
        admin, computes, fleet_facts, image, unique, flavor_cleanup, specs,
        rule):
    """Nova's API takes the flavor but refuses to boot it (400); capacity
    exits 2 naming the rule, and counts nothing."""
    from openstack import exceptions

    name = f'{unique}-refused'
    flavor_cleanup.append(name)
    flavor = admin.compute.create_flavor(name=name, ram=1024, vcpus=2,
                                         disk=1, is_public=True)
    admin.compute.create_flavor_extra_specs(flavor.id, specs)
    with pytest.raises(exceptions.BadRequestException):
        admin.compute.create_server(name=name, flavor_id=flavor.id,
                                    image_id=image.id, networks='none')
    result = kvmtune('capacity', '--os-cloud', ADMIN, '--flavor', name,
                     '--facts-dir', fleet_facts, '-f', 'json')
    assert result.rc == 2, (result.out, result.err)
    assert rule in result.err
    assert result.out == ''
