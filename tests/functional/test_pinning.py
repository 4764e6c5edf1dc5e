"""Pinned, hugepage-backed guests after kvmtune configured the compute host.

``kvmtune nova-conf apply`` writes the profile's [compute]
cpu_dedicated_set / cpu_shared_set, the NUMA filters and the PCPU
workaround into the compute host's nova.conf; after ``cloud
restart-compute`` Nova reports PCPU inventory and a dedicated-CPU,
large-page flavor boots pinned. In fake compute mode that is seen through
Nova's server topology API and Placement; in libvirt mode also in the
QEMU guest's domain XML.
"""

import os
import pathlib
import re
import shutil
import subprocess

import pytest
import yaml

from tests.functional.conftest import ADMIN
from tests.functional.conftest import CLOUD_PYTHON
from tests.functional.conftest import kvmtune

PROFILE = {
    'name': 'kvmtune-ft-pinned',
    'description': 'functional test: pinned vCPUs on large pages',
    'source': 'tests/functional/test_pinning.py',
    'tuners': [{'name': 'cpu_pinning', 'params': {'thread_policy': 'prefer',
                                                  'isolcpus': False}},
               {'name': 'hugepages', 'params': {'page_size': 'large'}}],
}


@pytest.fixture
def pinned_profile(tmp_path):
    path = tmp_path / 'kvmtune-ft-pinned.yaml'
    path.write_text(yaml.safe_dump(PROFILE))
    return path


@pytest.fixture
def tuned_compute(test_cloud, pinned_profile, tmp_path):
    """The compute host's nova.conf tuned by kvmtune, compute restarted;
    the original nova.conf and compute service come back afterwards."""
    nova_conf = pathlib.Path(test_cloud.nova_conf)
    assert nova_conf.is_file(), f'KVMTUNE_NOVA_CONF: {nova_conf}'
    saved = tmp_path / 'nova.conf.orig'
    shutil.copy2(nova_conf, saved)
    backup = nova_conf.with_name(nova_conf.name + '.kvmtune.bak')
    had_backup = backup.exists()
    try:
        # Plan for the host the compute reports: the fake driver's facts
        # when the cloud was given some, else this host.
        source = (('--facts', test_cloud.host_facts)
                  if test_cloud.host_facts else ())
        # Check the values with the cloud's own Nova.
        nova_python = os.environ.get('KVMTUNE_NOVA_PYTHON', CLOUD_PYTHON)
        if os.path.exists(nova_python):
            source += ('--nova-python', nova_python)
        result = kvmtune('nova-conf', 'apply', '--config', nova_conf,
                         '--profile', pinned_profile, *source)
        assert result.rc == 0, result.err
        print(f'\nnova-conf apply: {result.out.strip()}')
        test_cloud.restart_compute()
        yield nova_conf
    finally:
        shutil.copy2(saved, nova_conf)
        if not had_backup:
            backup.unlink(missing_ok=True)
        test_cloud.restart_compute()


@pytest.fixture
def pinned_flavor(admin, base_flavor, pinned_profile, unique,
                  flavor_cleanup):
    flavor_cleanup.append(unique)
    made = kvmtune('flavor', 'apply', '--os-cloud', ADMIN, '--profile',
                   pinned_profile, '--from', base_flavor.name, '--name',
                   unique)
    assert made.rc == 0, made.err
    flavor = admin.compute.find_flavor(unique)
    specs = admin.compute.fetch_flavor_extra_specs(flavor.id).extra_specs
    assert specs['hw:cpu_policy'] == 'dedicated'
    assert specs['hw:mem_page_size'] == 'large'
    return flavor


def topology(admin, server_id):
    return admin.compute.get(f'/servers/{server_id}/topology',
                             microversion='2.78').json()


def allocations(admin, server_id):
    body = admin.placement.get(f'/allocations/{server_id}',
                               microversion='1.6').json()
    resources = {}
    for provider in body['allocations'].values():
        for rc, amount in provider['resources'].items():
            resources[rc] = resources.get(rc, 0) + amount
    return resources


def boot_pinned(admin, servers, flavor, image, name):
    server = servers.boot(name, flavor.id, image.id)
    assert server.status == 'ACTIVE', server.fault
    topo = topology(admin, server.id)
    print(f'\nserver {server.id}: topology {topo}, allocations '
          f'{allocations(admin, server.id)}')
    assert topo['nodes'], topo
    pinning = {int(v): host for node in topo['nodes']
               for v, host in node['cpu_pinning'].items()}
    assert sorted(pinning) == list(range(flavor.vcpus))
    assert topo['pagesize_kb'] and topo['pagesize_kb'] > 4
    resources = allocations(admin, server.id)
    assert resources.get('PCPU') == flavor.vcpus, resources
    assert 'VCPU' not in resources, resources
    return server, pinning, topo['pagesize_kb']


@pytest.mark.compute('fake')
def test_pinned_large_page_flavor_boots_pinned(
        admin, tuned_compute, pinned_flavor, image, servers, unique):
    boot_pinned(admin, servers, pinned_flavor, image, unique)


@pytest.mark.compute('libvirt')
def test_libvirt_guest_is_pinned_on_hugepages(
        admin, host_hugepages, tuned_compute, pinned_flavor, image,
        servers, unique):
    server, pinning, page_kb = boot_pinned(admin, servers, pinned_flavor,
                                           image, unique)
    domain = admin.compute.get_server(server.id).instance_name
    xml = subprocess.run(['virsh', 'dumpxml', domain], capture_output=True,
                         text=True, check=True, timeout=60).stdout
    vcpupins = dict(re.findall(
        r"<vcpupin vcpu='(\d+)' cpuset='([\d,-]+)'/>", xml))
    print(f'domain {domain}: vcpupin {vcpupins}; pages '
          f'{re.findall(r"<page [^>]*>", xml)}')
    assert {int(v): int(c) for v, c in vcpupins.items()} == pinning
    assert re.search(rf"<page size='{page_kb}' unit='KiB'", xml), xml
