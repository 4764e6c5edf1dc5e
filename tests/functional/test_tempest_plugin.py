"""kvmtune's Tempest plugin, run for real against the test cloud.

Set up the way a DevStack job does it: the DevStack plugin's extra and
test-config phases (under tests/devstack_shim) make the tuned flavors, tag
the host, upload the benchmark image when one is built and write the
[kvmtune] options; the rest of tempest.conf comes from clouds.yaml. The
compute host is tuned as an operator would: ``kvmtune nova-conf apply
--profile pinned-hugepages`` on its own nova.conf (dedicated CPUs, so
PCPU inventory), 2 MB pages on this host in libvirt mode, compute
restarted; nova.conf comes back from its ``.kvmtune.bak`` afterwards. Then
``tempest init`` + ``tempest run --regex kvmtune``. Every test must pass;
a skip is accepted only when its reason names a missing capability.
"""

import io
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time
import uuid

import pytest
import yaml

from tests.devstack_shim.run import Stack
from tests.functional.conftest import ADMIN
from tests.functional.conftest import CLOUD_PYTHON
from tests.functional.conftest import kvmtune
from tests.functional.conftest import PREFIX
from tests.functional.conftest import REPO

# pinned-hugepages needs no trait: its flavor boots on this EPT-less host.
TUNED_PROFILE = 'pinned-hugepages'
PROFILES = [TUNED_PROFILE, 'pinned-hugepages-ept', 'cpu-pinning',
            'nested-host']
PCPU_TIMEOUT = 120
TEMPEST = pathlib.Path(sys.executable).parent / 'tempest'
# What a skip may say: the capability the cloud lacks.
CAPABILITY_SKIPS = [
    r'compute has no PCPU inventory',
    r'no compute node has (a CUSTOM_KVMTUNE_\* trait|CUSTOM_KVMTUNE_\w+)',
    r'the compute driver cannot run guests \(hypervisor type \w+\)',
    r'every kvmtune trait is on some compute node',
    r'benchmark image \S+ is not in Glance',
]


def tempest_conf(clouds_yaml, image_id, flavor_id, lock_path):
    """tempest.conf text for the admin cloud in clouds.yaml."""
    with open(clouds_yaml) as handle:
        cloud = yaml.safe_load(handle)['clouds'][ADMIN]
    auth = cloud['auth']
    sections = {
        'DEFAULT': {'log_file': 'tempest.log'},
        'oslo_concurrency': {'lock_path': lock_path},
        'auth': {'admin_username': auth['username'],
                 'admin_password': auth['password'],
                 'admin_project_name': auth['project_name'],
                 'admin_domain_name': auth.get('user_domain_name',
                                               'Default'),
                 'use_dynamic_credentials': 'True',
                 'create_isolated_networks': 'False'},
        'identity': {'uri_v3': auth['auth_url'], 'auth_version': 'v3',
                     'region': cloud.get('region_name', 'RegionOne')},
        'identity-feature-enabled': {'api_v2': 'False'},
        'service_available': {'nova': 'True', 'glance': 'True',
                              'neutron': 'False', 'cinder': 'False',
                              'swift': 'False'},
        'compute': {'image_ref': image_id, 'flavor_ref': flavor_id,
                    'min_microversion': '2.1', 'max_microversion': 'latest',
                    'build_timeout': '300'},
        'compute-feature-enabled': {'console_output': 'True'},
        'placement': {'min_microversion': '1.0',
                      'max_microversion': 'latest'},
        'validation': {'run_validation': 'False'},
    }
    return ''.join(
        f'[{name}]\n' + ''.join(f'{k} = {v}\n' for k, v in opts.items())
        + '\n' for name, opts in sections.items())


def parse_results(workspace):
    """{test id: (status, skip reason)} from the run's subunit stream."""
    import subunit
    import testtools

    stream = subprocess.run(
        [str(TEMPEST.parent / 'stestr'), 'last', '--subunit'],
        cwd=workspace, capture_output=True, check=True).stdout
    results = {}

    def on_test(test):
        reason = test['details'].get('reason')
        results[test['id']] = (test['status'],
                               reason.as_text() if reason else None)

    case = subunit.ByteStreamToStreamResult(
        io.BytesIO(stream), non_subunit_name='stdout')
    collector = testtools.StreamToDict(on_test)
    collector.startTestRun()
    case.run(collector)
    collector.stopTestRun()
    return results


@pytest.fixture
def public_image(admin, tmp_path):
    """compute.image_ref: public, so Tempest's own projects can boot it.

    One MiB of zeros: enough for the fake driver, and for QEMU to start a
    domain (the trait tests need an ACTIVE server, not a booted OS).
    """
    blank = tmp_path / 'blank.raw'
    blank.write_bytes(b'\0' * (1024 * 1024))
    image = admin.image.create_image(
        name=f'{PREFIX}tempest-{uuid.uuid4().hex[:6]}', filename=str(blank),
        disk_format='raw', container_format='bare', visibility='public',
        wait=True)
    yield image
    admin.image.delete_image(image.id, ignore_missing=True)


def pcpu_total(conn, provider):
    inventories = conn.placement.get(
        f'/resource_providers/{provider}/inventories',
        microversion='1.6').json()['inventories']
    return inventories.get('PCPU', {}).get('total', 0)


def wait_for_pcpu(conn, provider):
    deadline = time.monotonic() + PCPU_TIMEOUT
    while not pcpu_total(conn, provider):
        # hang bound: PCPU_TIMEOUT is far above a restart's usual time
        assert time.monotonic() < deadline, \
            f'no PCPU inventory {PCPU_TIMEOUT} s after the restart'
        time.sleep(2)


@pytest.fixture
def tuned_compute(request, test_cloud, admin, compute_node):
    """The compute's nova.conf with the pinned-hugepages options, compute
    restarted with PCPU inventory; nova.conf comes back byte for byte
    from the backup kvmtune wrote, and compute restarts again."""
    if test_cloud.compute_mode == 'libvirt':
        request.getfixturevalue('host_hugepages')
    nova_conf = pathlib.Path(test_cloud.nova_conf)
    assert nova_conf.is_file(), f'KVMTUNE_NOVA_CONF: {nova_conf}'
    backup = nova_conf.with_name(nova_conf.name + '.kvmtune.bak')
    had_backup = backup.exists()
    original = nova_conf.read_bytes()
    # The facts that shape the fake compute; else this host's, as the
    # libvirt compute (and the default fake shape) reports it.
    source = (('--facts', test_cloud.host_facts)
              if test_cloud.host_facts else ())
    if os.path.exists(CLOUD_PYTHON):
        source += ('--nova-python', CLOUD_PYTHON)
    applied = kvmtune('nova-conf', 'apply', '--profile', TUNED_PROFILE,
                      '--config', nova_conf, *source)
    try:
        assert applied.rc == 0, applied.err
        print(f'\nnova-conf apply: {applied.out.strip()}')
        if nova_conf.read_bytes() != original:
            assert backup.read_bytes() == original, f'{backup} differs'
        test_cloud.restart_compute()
        wait_for_pcpu(admin, compute_node[1])
        yield nova_conf
    finally:
        if nova_conf.read_bytes() != original:
            shutil.copy2(backup, nova_conf)
            if not had_backup:
                backup.unlink()
            test_cloud.restart_compute()
        assert nova_conf.read_bytes() == original


@pytest.fixture
def devstack(tmp_path, test_cloud, base_flavor):
    workspace = tmp_path / 'tempest'
    env = {
        'PATH': f'{pathlib.Path(sys.executable).parent}:'
                f'{os.environ["PATH"]}',
        'HOME': os.environ.get('HOME', '/root'),
        'OS_CLIENT_CONFIG_FILE': os.environ['OS_CLIENT_CONFIG_FILE'],
        'SHIM_PYTHON': sys.executable, 'PYTHON': sys.executable,
        # how unstack.sh and clean.sh find it (no PYTHON there)
        'GLOBAL_VENV': 'True',
        'DEVSTACK_VENV': str(pathlib.Path(sys.executable).parent.parent),
        'DEST': str(tmp_path), 'KVMTUNE_DIR': str(REPO),
        # a single node: n-api makes it the controller (flavors, traits,
        # Tempest options), as in test_devstack_plugin
        'ENABLED_SERVICES': 'n-api,n-cpu,tempest',
        'TEMPEST_CONFIG': str(workspace / 'etc' / 'tempest.conf'),
        'KVMTUNE_PROFILES': ' '.join(PROFILES),
        'KVMTUNE_BASE_FLAVOR': base_flavor.name,
        'KVMTUNE_OS_CLOUD': ADMIN,
    }
    stack = Stack(env)
    stack.workspace = workspace
    yield stack
    try:
        stack('unstack')
    finally:
        stack('clean')


# Both rounds: on the fake driver the placement and pinning checks, on
# libvirt the same tests with real guests on this host's 2 MB pages.
@pytest.mark.compute('fake', 'libvirt')
def test_tempest_run_kvmtune(devstack, test_cloud, base_flavor,
                             public_image, tuned_compute):
    workspace = devstack.workspace
    # A workspace registry of its own: ~/.tempest is not this test's.
    subprocess.run([str(TEMPEST), 'init', '--name', 'kvmtune-functional',
                    '--workspace-path', str(workspace.parent / 'ws.yaml'),
                    str(workspace)], check=True, capture_output=True)
    conf = workspace / 'etc' / 'tempest.conf'
    conf.write_text(tempest_conf(os.environ['OS_CLIENT_CONFIG_FILE'],
                                 public_image.id, base_flavor.id,
                                 str(workspace / 'lock')))
    conf.chmod(0o600)
    devstack('stack', 'extra')
    devstack('stack', 'test-config')

    run = subprocess.run(
        [str(TEMPEST), 'run', '--regex', 'kvmtune', '--concurrency', '1'],
        cwd=workspace, capture_output=True, text=True, timeout=1800)
    (workspace / 'tempest-run.txt').write_text(run.stdout + run.stderr)
    print(run.stdout[-6000:])
    results = parse_results(workspace)
    ran = {tid: r for tid, r in results.items() if r[0] != 'exists'}
    assert ran, 'tempest ran no kvmtune test'
    failed = {t: r for t, r in ran.items() if r[0] not in ('success', 'skip')}
    assert not failed, f'failed: {failed}\n{run.stdout[-4000:]}'
    assert run.returncode == 0, run.stderr[-2000:]
    assert any(r[0] == 'success' for r in ran.values())
    for tid, (status, reason) in ran.items():
        if status == 'skip':
            assert any(re.search(p, reason or '') for p in CAPABILITY_SKIPS), \
                f'{tid} skipped without naming a missing capability: ' \
                f'{reason!r}'
