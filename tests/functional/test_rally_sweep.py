"""The Rally disk sweep against the test cloud, with real guests.

Needs: the test cloud up with libvirt compute (tests/functional/cloud/cloud
up --compute libvirt) and the benchmark image built (kvmtune image build);
the image is uploaded as kvmtune-bench and the flavor m1.bench.baseline
made the way tools/main-job does it, when they are missing (a fresh cloud).
Under QEMU TCG one 2-VM sweep takes about two minutes.
"""

import json
import os
import subprocess

import pytest

from kvmtune import mainjob
from kvmtune.report import rally_results
from kvmtune.report import vmtable

CLOUD = os.environ.get('KVMTUNE_TEST_CLOUD', 'kvmtune-admin')
FLAVOR = os.environ.get('KVMTUNE_TEST_FLAVOR', 'm1.bench.baseline')


def _cloud_up():
    proc = subprocess.run([mainjob.CLOUD_CTL, 'status'],
                          capture_output=True, text=True)
    return proc.returncode == 0 and 'libvirt compute' in proc.stdout


pytestmark = pytest.mark.skipif(
    not _cloud_up(), reason='needs the test cloud up with libvirt compute')


@pytest.fixture(scope='module')
def conn():
    import openstack

    os.environ.setdefault('OS_CLIENT_CONFIG_FILE',
                          os.path.join(mainjob.CLOUD_DIR, 'clouds.yaml'))
    return openstack.connect(cloud=CLOUD)


@pytest.fixture(scope='module')
def bench_flavor_and_image(conn):
    """kvmtune-bench in Glance and the baseline flavor, as the main job
    makes them; what this module created is removed afterwards."""
    from kvmtune import cli

    made_image = not list(conn.image.images(name=mainjob.IMAGE_NAME))
    made_base = not conn.compute.find_flavor(mainjob.BASE_FLAVOR['name'])
    made_flavor = not conn.compute.find_flavor(FLAVOR)
    mainjob.upload_image(conn)
    mainjob.base_flavor(conn)
    if made_flavor:
        assert cli.main(['flavor', 'apply', '--os-cloud', CLOUD,
                         '--profile', 'baseline', '--from',
                         mainjob.BASE_FLAVOR['name'], '--name', FLAVOR]) == 0
    yield
    for name, made in ((FLAVOR, made_flavor),
                       (mainjob.BASE_FLAVOR['name'], made_base)):
        flavor = conn.compute.find_flavor(name)
        if made and flavor:
            conn.compute.delete_flavor(flavor)
    if made_image:
        for image in conn.image.images(name=mainjob.IMAGE_NAME):
            conn.image.delete_image(image)


@pytest.fixture(scope='module')
def rally(conn, bench_flavor_and_image, tmp_path_factory):
    r = mainjob.Rally(str(tmp_path_factory.mktemp('rally')))
    r.use_cloud('kvmtune-functional', mainjob.rally_spec(conn.config))
    return r


def sweep(rally, tmp_path, **args):
    out = str(tmp_path / 'results.json')
    uuid, sla_ok = rally.sweep(
        mainjob.TASK, dict(mainjob.task_args(
            args.pop('max_vms'), args.pop('workload', 'fio-randread-4k'),
            [FLAVOR], mainjob.IMAGE_NAME,
            emulated=mainjob.local_cloud_emulated()), **args),
        out, str(tmp_path / 'rally.html'))
    with open(out) as f:
        return json.load(f), sla_ok, tmp_path / 'rally.html'


def leftover_servers(conn):
    return [s.id for s in conn.compute.servers(all_projects=True)]


def test_every_guest_gives_a_fio_result(rally, conn, tmp_path):
    doc, sla_ok, page = sweep(rally, tmp_path, max_vms=2)
    sweep_, = rally_results.sweeps_from(doc)
    assert sorted(sweep_.points) == [1, 2]
    rows = [r for its in sweep_.points.values() for rows in its
            for r in rows]
    assert len(rows) == 3
    for r in rows:
        assert r['status'] == vmtable.OK, r
        assert r['tool'] == 'fio' and r['iops'] > 0 and r['emulated']
    assert sla_ok
    html = page.read_text()
    assert vmtable.TITLE in html and 'IOPS by VM count' in html
    assert leftover_servers(conn) == []


def test_a_bad_job_fails_the_sla_and_leaves_nothing(rally, conn, tmp_path):
    # the guest refuses a target that is no block device and says why
    doc, sla_ok, _ = sweep(rally, tmp_path, max_vms=1, target='/dev/vdz')
    assert not sla_ok
    (_, _, data, sla), = rally_results.workloads(doc)
    detail = next(s['detail'] for s in sla
                  if s['criterion'] == 'kvmtune_scaling')
    rows = vmtable.rows_as_dicts(data[0]['output'])
    assert rows and rows[0]['status'] != vmtable.OK
    assert rows[0]['instance'] in detail and rows[0]['status'] in detail
    assert '/dev/vdz' in detail
    assert leftover_servers(conn) == []
