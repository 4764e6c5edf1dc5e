"""``kvmtune capacity`` predicts what the scheduler then places (issue 21).

On the embedded cloud, for each flavor kind (pinned on huge pages, pinned
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

import pytest
import yaml

from kvmtune.cloud import connection
from tests.functional import test_pinning
from tests.functional.conftest import ADMIN
from tests.functional.conftest import kvmtune

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


@pytest.fixture
def pinned_profile(tmp_path):
    path = tmp_path / 'kvmtune-ft-capacity.yaml'
    path.write_text(yaml.safe_dump(PROFILE))
    return path


@pytest.fixture
def facts_dir(admin, tmp_path, tuned_compute):
    """This host's facts, named as Nova names the compute node."""
    directory = tmp_path / 'facts'
    directory.mkdir()
    inspect = kvmtune('host', 'inspect', '--format', 'json')
    assert inspect.rc == 0, inspect.err
    nodes = [h.name for h in admin.compute.hypervisors()]
    # the libvirt compute is this host; fake computes bring their own
    (directory / f'{nodes[0]}.json').write_text(inspect.out)
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


def predict(flavor, facts_dir, profile):
    result = kvmtune('capacity', '--os-cloud', ADMIN, '--flavor',
                     flavor.name, '--facts-dir', facts_dir, '--profile',
                     profile, '-f', 'json')
    assert result.rc == 0, result.err
    doc = json.loads(result.out)
    print(f'\ncapacity {flavor.name}: {doc["fits"]}, '
          f'{doc["api_calls"]} API calls')
    assert not doc['partial'], doc['fits']
    return {fit['host']: fit for fit in doc['fits']}


def fill(admin, servers, flavor, image, unique):
    """Boot until NoValidHost; {hypervisor: ACTIVE servers}."""
    placed = {}
    for i in range(MAX_BOOTS):
        server = servers.boot(f'{unique}-{i}', flavor.id, image.id)
        if server.status == 'ERROR':
            assert 'No valid host' in str(server.fault), server.fault
            return placed
        host = admin.compute.get_server(server.id).hypervisor_hostname
        placed[host] = placed.get(host, 0) + 1
    raise AssertionError(f'still placing after {MAX_BOOTS} servers')


@pytest.mark.compute('libvirt')
@pytest.mark.parametrize('kind, specs', [
    ('pinned-pages', {'hw:cpu_policy': 'dedicated',
                      'hw:mem_page_size': 'large'}),
    ('pinned', {'hw:cpu_policy': 'dedicated'}),
])
def test_the_prediction_is_what_the_scheduler_places(
        admin, host_hugepages, tuned_compute, pinned_profile, facts_dir,
        base_flavor, image, servers, unique, flavor_cleanup, recording,
        kind, specs):
    flavor = make_flavor(admin, base_flavor, f'{unique}-{kind}', specs,
                         flavor_cleanup)
    fits = predict(flavor, facts_dir, pinned_profile)
    placed = fill(admin, servers, flavor, image, unique)
    assert {h: f['count'] for h, f in fits.items() if f['count']} == placed
    assert all(f['limit'] for f in fits.values())
