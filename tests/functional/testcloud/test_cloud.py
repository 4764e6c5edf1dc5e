"""The test cloud really schedules, pins and claims dedicated CPUs.

Needs a cloud from ``kvmtune cloud up``; each test is marked with the
compute mode it needs (``tests/functional/conftest.py`` skips or, in CI,
fails when the cloud is missing or in the other mode).

The compute's nova.conf is edited the way ``kvmtune nova-conf apply``
does it (``[compute] cpu_dedicated_set``), nova-compute is restarted with
``kvmtune cloud restart-compute``, and the file is restored afterwards.
"""

import configparser
import json
import os
import shutil
import subprocess
import tempfile
import uuid

import pytest

from kvmtune.testcloud import api
from kvmtune.testcloud import procs
from kvmtune.testcloud import rest

LAYOUT = api.layout()
BENCH_IMAGE = os.path.join(os.environ.get('KVMTUNE_IMAGE_DIR',
                                          '/var/lib/kvmtune/images'),
                           'kvmtune-bench.raw')


@pytest.fixture
def state(test_cloud):
    return procs.load_state(LAYOUT)


@pytest.fixture
def conn(test_cloud):
    os.environ['OS_CLIENT_CONFIG_FILE'] = LAYOUT.clouds_yaml
    import openstack
    connection = openstack.connect(cloud='kvmtune-admin')
    connection.compute.default_microversion = '2.74'
    yield connection
    connection.close()


@pytest.fixture
def cpu_sets(test_cloud):
    """Set [compute] cpu sets on the compute, restart it; restore after."""
    backup = LAYOUT.compute_conf + '.test-backup'
    shutil.copy(LAYOUT.compute_conf, backup)

    def apply(dedicated, shared):
        conf = configparser.RawConfigParser()
        conf.optionxform = str
        conf.read(LAYOUT.compute_conf)
        if not conf.has_section('compute'):
            conf.add_section('compute')
        conf.set('compute', 'cpu_dedicated_set', dedicated)
        conf.set('compute', 'cpu_shared_set', shared)
        with open(LAYOUT.compute_conf, 'w') as f:
            conf.write(f)
        test_cloud.restart_compute()
    yield apply
    os.replace(backup, LAYOUT.compute_conf)
    test_cloud.restart_compute()


@pytest.fixture
def resources(conn):
    """Created servers, flavors and images, deleted after the test."""
    made = {'servers': [], 'flavors': [], 'images': []}
    yield made
    for server in made['servers']:
        conn.compute.delete_server(server, ignore_missing=True)
    for server in made['servers']:
        conn.compute.wait_for_delete(server, wait=120)
    for flavor in made['flavors']:
        conn.compute.delete_flavor(flavor, ignore_missing=True)
    for image in made['images']:
        conn.image.delete_image(image, ignore_missing=True)


def _admin_token():
    with open(LAYOUT.secrets) as f:
        password = json.load(f)['admin']
    return rest.Keystone(LAYOUT.url('keystone', '/v3'), password).token


def _placement(path):
    return rest.call('GET', LAYOUT.url('placement', path),
                     token=_admin_token(),
                     headers={'OpenStack-API-Version': 'placement 1.14'})[2]


def _flavor(conn, resources, vcpus, ram, **specs):
    flavor = conn.compute.create_flavor(
        name='kvmtune-test-%s' % uuid.uuid4().hex[:8], vcpus=vcpus, ram=ram,
        disk=1)
    resources['flavors'].append(flavor)
    if specs:
        conn.compute.create_flavor_extra_specs(flavor, specs)
    return flavor


def _image(conn, resources, path=None):
    if path is None:
        tmp = tempfile.NamedTemporaryFile(suffix='.raw', delete=False)
        tmp.write(b'\0' * (1 << 20))
        tmp.close()
        path = tmp.name
    image = conn.image.create_image(
        name='kvmtune-test-%s' % uuid.uuid4().hex[:8], filename=path,
        disk_format='raw', container_format='bare', wait=True)
    resources['images'].append(image)
    return image


def _boot(conn, resources, flavor, image, expect='ACTIVE'):
    # On the compute the test configures, also with --computes N (2.74).
    state = procs.load_state(LAYOUT)
    where = {'host': state['compute_host']} if state.get('computes') else {}
    server = conn.compute.create_server(
        name='kvmtune-test-%s' % uuid.uuid4().hex[:8], flavor_id=flavor.id,
        image_id=image.id, networks='none', **where)
    resources['servers'].append(server)
    return conn.compute.wait_for_server(server, status=expect,
                                        failures=['ERROR'] if expect ==
                                        'ACTIVE' else [], wait=300)


def _pinning(server_id):
    """Host CPUs and page size Nova's claim recorded for the instance."""
    out = subprocess.check_output([
        'mariadb', '-uroot', '-N', '-B', '-e',
        "SELECT numa_topology FROM `%s`.instance_extra "
        "WHERE instance_uuid = '%s'" % (LAYOUT.databases['nova'],
                                        server_id)], text=True)
    cells = json.loads(out)['nova_object.data']['cells']
    cpus, pagesizes = set(), set()
    for cell in cells:
        data = cell['nova_object.data']
        cpus |= set((data.get('cpu_pinning_raw') or {}).values())
        pagesizes.add(data.get('pagesize'))
    return cpus, pagesizes


@pytest.mark.compute('fake')
def test_fake_compute_pins_and_claims_pcpus(state, conn, cpu_sets,
                                            resources):
    cpu_sets('2-3,6-7', '0-1,4-5')
    inventory = _placement('/resource_providers/%s/inventories'
                           % state['provider'])['inventories']
    assert inventory['PCPU']['total'] == 4
    assert inventory['PCPU']['allocation_ratio'] == 1.0
    assert inventory['VCPU']['total'] == 4

    pinned = _flavor(conn, resources, 2, 512,
                     **{'hw:cpu_policy': 'dedicated',
                        'hw:mem_page_size': '2MB'})
    image = _image(conn, resources)
    first = _boot(conn, resources, pinned, image)
    second = _boot(conn, resources, pinned, image)

    allocations = _placement('/allocations/%s' % first.id)['allocations']
    assert allocations[state['provider']]['resources']['PCPU'] == 2
    assert 'VCPU' not in allocations[state['provider']]['resources']
    cpus_first, pages = _pinning(first.id)
    cpus_second, _ = _pinning(second.id)
    assert pages == {2048}
    assert cpus_first | cpus_second == {2, 3, 6, 7}
    assert not cpus_first & cpus_second

    # Four PCPUs are taken: a third pinned server finds no host.
    third = _boot(conn, resources, pinned, image, expect='ERROR')
    assert 'No valid host' in third.fault['message']


@pytest.mark.compute('libvirt')
def test_libvirt_guest_is_pinned(conn, cpu_sets, resources):
    if not os.path.exists(BENCH_IMAGE):
        pytest.fail('%s missing (build it: kvmtune image build)'
                    % BENCH_IMAGE)
    cpu_sets('1', '0')
    pinned = _flavor(conn, resources, 1, 256,
                     **{'hw:cpu_policy': 'dedicated'})
    server = _boot(conn, resources, pinned, _image(conn, resources,
                                                   BENCH_IMAGE))
    xml = subprocess.check_output(['virsh', '-c', 'qemu:///system',
                                   'dumpxml', server.id], text=True)
    assert "<vcpupin vcpu='0' cpuset='1'/>" in xml
