"""The multi-host test cloud (``kvmtune cloud up --computes N``):
every nova-compute of the cloud's state is a hypervisor in Nova and a
resource provider in Placement whose PCPU and VCPU inventories are the
``[compute]`` CPU sets its file configures.

CI's fake round brings the cloud up with ``--computes 3``
(tools/run-functional); the libvirt round with one compute checks the
same for that one.
"""

import configparser
import json
import subprocess

import pytest

from kvmtune.facts import cpulist
from kvmtune.testcloud import api
from kvmtune.testcloud import procs

LAYOUT = api.layout()


@pytest.fixture
def computes(test_cloud):
    return procs.computes_of(procs.load_state(LAYOUT), LAYOUT)


def _inventories(admin, provider):
    return admin.placement.get(
        f'/resource_providers/{provider}/inventories',
        microversion='1.6').json()['inventories']


def _configured_sets(conf_path):
    conf = configparser.RawConfigParser()
    conf.read(conf_path)

    def count(option):
        value = conf.get('compute', option, fallback='')
        return len(cpulist.parse_cpu_spec(value)) if value else 0
    return count('cpu_dedicated_set'), count('cpu_shared_set')


def test_every_compute_is_a_hypervisor_and_a_provider(admin, computes):
    hypervisors = {h.name: h for h in admin.compute.hypervisors()}
    assert sorted(hypervisors) == sorted(c['host'] for c in computes)
    providers = {p['name']: p['uuid'] for p in admin.placement.get(
        '/resource_providers', microversion='1.14').json()[
            'resource_providers']}
    assert providers == {c['host']: c['provider'] for c in computes}
    for entry in computes:
        # Nova's hypervisor id is its compute node's (= provider) UUID
        assert hypervisors[entry['host']].id == entry['provider']
        assert hypervisors[entry['host']].state == 'up', entry['host']
        services = list(admin.compute.services(host=entry['host'],
                                               binary='nova-compute'))
        assert [s.status for s in services] == ['enabled'], entry['host']


def test_extra_computes_report_their_configured_cpu_sets(admin, computes):
    for entry in computes[1:]:
        dedicated, shared = _configured_sets(entry['conf'])
        assert dedicated and shared, entry['conf']
        inventory = _inventories(admin, entry['provider'])
        print(f"\n{entry['host']}: shared {entry['cpu_shared_set']}, "
              f"dedicated {entry['cpu_dedicated_set']}, inventory "
              f"{ {rc: inv['total'] for rc, inv in inventory.items()} }")
        assert inventory['PCPU']['total'] == dedicated
        assert inventory['PCPU']['allocation_ratio'] == 1.0
        assert inventory['VCPU']['total'] == shared


@pytest.mark.compute('fake')
def test_ci_fake_cloud_has_three_computes_of_different_shapes(admin,
                                                              computes):
    """CI's fake round runs ``--computes 3``: the default compute and two
    fake hosts shaped like different machines (NUMA cells, page sizes)."""
    assert [c['host'] for c in computes[1:]] == ['kvmtune-compute-2',
                                                 'kvmtune-compute-3']
    assert len(list(admin.compute.hypervisors())) == 3
    shapes = {}
    for entry in computes[1:]:
        hypervisor = admin.compute.get(
            f"/os-hypervisors/{entry['provider']}",
            microversion='2.53').json()['hypervisor']
        assert hypervisor['hypervisor_hostname'] == entry['host']
        shapes[entry['host']] = _numa_shape(entry['host'])
    print(f'\nNUMA shapes Nova recorded: {shapes}')
    # the shipped shapes: a 2-socket Intel with 1 GiB pages on 2 nodes, an
    # AMD EPYC in NPS4 with 2 MiB pages on 4 nodes
    assert shapes == {'kvmtune-compute-2': (2, {1048576}),
                      'kvmtune-compute-3': (4, {2048})}


def _numa_shape(host):
    """(cells, huge page sizes with pages) of the host's NUMA topology as
    the compute node record in Nova's database holds it."""
    out = subprocess.check_output([
        'mariadb', '-uroot', '-N', '-B', '-e',
        "SELECT numa_topology FROM `%s`.compute_nodes WHERE deleted = 0 "
        "AND hypervisor_hostname = '%s'" % (
            api.layout().databases['nova'], host)],
        text=True, timeout=60)
    cells = json.loads(out)['nova_object.data']['cells']
    sizes = set()
    for cell in cells:
        for pages in cell['nova_object.data']['mempages']:
            data = pages['nova_object.data']
            if data['size_kb'] > 4 and data['total']:
                sizes.add(data['size_kb'])
    return len(cells), sizes


def test_restart_compute_by_host_keeps_its_provider(admin, test_cloud,
                                                    computes):
    """``restart-compute --host`` restarts that compute alone (the last
    one: an extra compute when there are several) and it keeps its
    resource provider and inventory."""
    entry = computes[-1]
    pids = procs.load_state(LAYOUT)['services']
    others = {c['service']: pids[c['service']] for c in computes[:-1]}
    before = _inventories(admin, entry['provider'])
    done = test_cloud.run('restart-compute', '--host', entry['host'])
    assert done.returncode == 0, done.stdout + done.stderr
    print(f'\n{done.stdout.strip()}')
    assert f"nova-compute of {entry['host']} restarted" in done.stdout
    after = procs.load_state(LAYOUT)['services']
    assert after[entry['service']] != pids[entry['service']]
    assert {s: after[s] for s in others} == others
    assert _inventories(admin, entry['provider']) == before
    hypervisors = [h.name for h in admin.compute.hypervisors()]
    assert sorted(hypervisors) == sorted(c['host'] for c in computes)
