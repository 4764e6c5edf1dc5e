"""The main job against an operator's cloud: `kvmtune main-job --os-cloud
kvmtune-admin` (the command of the kvmtune under test), the test cloud
standing in for it.

As an operator would, the test first tunes the compute (this host) the way
the job's printed steps say: huge pages, `kvmtune nova-conf apply
--profile pinned-hugepages`, a compute restart. Then the job runs as its
own process and must: start no cloud and leave this host alone (the
compute's nova.conf byte for byte, the page pools), print no password,
say what the operator does on the computes, tag the compute (this host is
one of the cloud's compute nodes, so its facts describe it), leave the
image and both flavors in the cloud (its documented choice; this test
removes what it made), run the sweep and print the report for both
flavors, exit 0 with the SLA verdict. Quiet: one line per step, the
details in the log it names, well under 80 lines.

One VM per flavor and 5 s of fio keep it near 3-4 minutes under QEMU TCG
on 2 cores: figures are emulated, and labelled so.
"""

import hashlib
import os
import subprocess
import sys
import time

import pytest
import yaml

from kvmtune import facts
from kvmtune import image as bench_image
from kvmtune import mainjob
from kvmtune.mainjob import compute
from kvmtune.mainjob import hugepages
from kvmtune.tuning import traits
from tests import accel
from tests.functional.conftest import ADMIN
from tests.functional.conftest import CLOUD_PYTHON
from tests.functional.conftest import kvmtune
from tests.functional.conftest import main_job_objects_kept
from tests.functional.conftest import NR_HUGEPAGES
from tests.functional.conftest import provider_traits

pytestmark = pytest.mark.compute('libvirt')

TUNED = 'pinned-hugepages'
FLAVORS = [f'{mainjob.BASE_FLAVOR["name"]}.{p}'
           for p in (mainjob.BASE_PROFILE, TUNED)]
JOB_TIMEOUT = 900
PCPU_TIMEOUT = 120
POOLS = '/sys/kernel/mm/hugepages'


def sha1(path):
    return hashlib.sha1(open(path, 'rb').read()).hexdigest()


def page_pools():
    """{pool directory: nr_hugepages} of this host."""
    return {name: open(os.path.join(POOLS, name, 'nr_hugepages')).read()
            for name in sorted(os.listdir(POOLS))}


def passwords(clouds_yaml):
    with open(clouds_yaml) as f:
        clouds = yaml.safe_load(f)['clouds']
    return [str(c['auth']['password']) for c in clouds.values()
            if c.get('auth', {}).get('password')]


@pytest.fixture
def operator_tuned_compute(test_cloud, admin, host_hugepages):
    """The compute as the job's steps leave it: pages for one tuned
    guest, pinned-hugepages in nova.conf, PCPU in Placement; all back
    afterwards."""
    here = facts.gather()
    need = hugepages.guest_pages(compute.load_profile(TUNED), here, 1,
                                 mainjob.BASE_FLAVOR['ram'])
    assert need.size_kb == 2048, need
    before_pages = int(NR_HUGEPAGES.read_text())
    NR_HUGEPAGES.write_text(str(max(before_pages, need.count)))
    assert int(NR_HUGEPAGES.read_text()) >= need.count, 'no hugepages'
    nova_conf = test_cloud.nova_conf
    original = open(nova_conf, 'rb').read()
    backup = nova_conf + '.kvmtune.bak'
    had_backup = os.path.exists(backup)
    source = ('--nova-python', CLOUD_PYTHON) if os.path.exists(
        CLOUD_PYTHON) else ()
    try:
        applied = kvmtune('nova-conf', 'apply', '--profile', TUNED,
                          '--config', nova_conf, *source)
        assert applied.rc == 0, applied.err
        test_cloud.restart_compute()
        deadline = time.monotonic() + PCPU_TIMEOUT
        while not compute.pcpu_total(admin):
            # hang bound: PCPU_TIMEOUT is far above a restart's usual time
            assert time.monotonic() < deadline, 'no PCPU after restart'
            time.sleep(2)
        yield nova_conf
    finally:
        if open(nova_conf, 'rb').read() != original:
            with open(nova_conf, 'wb') as f:
                f.write(original)
            if not had_backup and os.path.exists(backup):
                os.unlink(backup)
            test_cloud.restart_compute()
        NR_HUGEPAGES.write_text(str(before_pages))


@pytest.fixture
def job_leftovers(admin):
    """What the job leaves in the cloud, removed after the assertions
    when the cloud did not have it before."""
    with main_job_objects_kept(admin,
                               [mainjob.BASE_FLAVOR['name']] + FLAVORS):
        yield


def report_table(out):
    """(title, the runs' columns, {row name: figures}) of the report the
    summary prints (indented under "main-job:   "): one VM count, so the
    runs are columns (kvmtune.report.render's step table)."""
    lines = [line[len('main-job:   '):] for line in out.splitlines()
             if line.startswith('main-job:   ')]
    title = next(line for line in lines if line.startswith('comparison of'))
    header = next(line.split() for line in lines if line.split() and all(
        word.startswith('disk-scaling:') and not word.endswith(':')
        for word in line.split()))
    rows = {name: line[len(name):].split() for line in lines
            for name in ('per-VM IOPS', 'valid guests')
            if line.startswith(name)}
    return title, header, rows


def test_mainjob_os_cloud(test_cloud, admin, operator_tuned_compute,
                          compute_node, restore_traits, job_leftovers,
                          tmp_path):
    nova_conf = operator_tuned_compute
    conf_sha1, pools = sha1(nova_conf), page_pools()
    env = dict(os.environ,
               OS_CLIENT_CONFIG_FILE=test_cloud.env['OS_CLIENT_CONFIG_FILE'])
    env.setdefault('KVMTUNE_IMAGE_CACHE', '/var/lib/kvmtune/build-cache')
    env.pop('OS_CLOUD', None)
    # the cloud's guests are emulated where this host has no working KVM
    # (tests/accel.py); an operator says so with --emulated
    emulated = test_cloud.state.get('virt_type') != 'kvm'
    assert test_cloud.state.get('virt_type') == \
        accel.VIRT_TYPES[accel.host_accel()]
    started = time.monotonic()
    job = subprocess.run(
        [sys.executable, '-m', 'kvmtune.cli', 'main-job', '--os-cloud',
         ADMIN,
         '--max-vms', '1', '--runtime', '5',
         *(['--emulated'] if emulated else []),
         '--state-dir', str(tmp_path / 'state')],
        capture_output=True, text=True, timeout=JOB_TIMEOUT, env=env)
    wall = time.monotonic() - started
    out = job.stdout + job.stderr
    print(f'\nmain job: exit {job.returncode} after {wall:.0f} s\n{out}')
    assert job.returncode == 0, job.stderr[-2000:]

    # Nothing on this host changed, no cloud was started, no password.
    assert sha1(nova_conf) == conf_sha1
    assert page_pools() == pools
    assert 'kvmtune cloud' not in out
    for secret in passwords(test_cloud.env['OS_CLIENT_CONFIG_FILE']):
        assert secret not in out

    # The operator is told what to do; this host is the compute, so the
    # job tagged it from this host's facts.
    assert f'on each compute host of cloud {ADMIN}' in out
    assert f'kvmtune nova-conf apply --profile {TUNED}' in out
    hostname, provider = compute_node
    assert f'compute node {hostname} of the cloud' in out
    wanted = traits.from_facts(facts.gather())
    have, _ = provider_traits(admin, provider)
    assert have & traits.KVMTUNE_TRAITS == wanted

    # Image and flavors stay; the tuned one carries the profile's specs.
    assert list(admin.image.images(name=bench_image.GLANCE_NAME))
    for name in FLAVORS:
        assert admin.compute.find_flavor(name), name
    tuned = admin.compute.find_flavor(FLAVORS[1])
    specs = admin.compute.fetch_flavor_extra_specs(tuned.id).extra_specs
    assert specs['hw:cpu_policy'] == 'dedicated'
    assert specs['hw:mem_page_size'] == '2MB'

    # The report: one row at 1 VM per flavor, its guest valid, labelled
    # emulated exactly when it was.
    title, columns, rows = report_table(job.stdout)
    assert ('emulated' in title) is emulated, title
    assert columns == [f'disk-scaling:{flavor}' for flavor in FLAVORS]
    assert rows['valid guests'] == ['1/1'] * len(FLAVORS), rows
    assert all(float(v.replace(',', '')) > 0 for v in rows['per-VM IOPS'])
    lines = job.stdout.splitlines()
    assert 'main-job: SLA: met' in lines
    assert len(lines) < 80, job.stdout
    assert all(line.startswith('main-job: ') for line in lines)
    log = tmp_path / 'state' / 'main-job.log'
    assert f'main-job: log: {log}' in lines[0]
    assert 'ITER: 1 START' in log.read_text()     # Rally's output: the log
    assert 'ITER: 1 START' not in job.stdout
