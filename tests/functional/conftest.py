"""Fixtures for the functional tier: a real single-host cloud.

The cloud is ``kvmtune cloud up [--compute fake|libvirt]``, run here as a
user runs it (``kvmtune cloud status|env|restart-compute`` as a process of
this Python). Its ``env`` says where clouds.yaml and the compute host's
nova.conf are. Without a cloud the tier is skipped, except in CI
(``KVMTUNE_FUNCTIONAL=1``), where a missing cloud is a failure.

Tests marked ``@pytest.mark.compute('libvirt')`` need the cloud in that
compute mode and are skipped in the other; ``compute('fake', 'libvirt')``
runs in both. CI runs the tier once per mode and sets
``KVMTUNE_FUNCTIONAL_COMPUTE`` to the mode it started, so that a cloud in
the wrong mode fails instead of skipping, and each round collects only
its own tests: an unmarked test does not depend on the compute driver (it
talks to the APIs, or boots a server only for the scheduler's answer) and
runs once, in the fake round, where a server costs no emulated guest.
A test marked ``extended`` repeats what another test shows with another
workload or shape; it runs with ``KVMTUNE_FUNCTIONAL_EXTENDED=1``, which
tools/run-tests (and so CI) sets; a run by hand may leave it out
(doc/source/contributor/testing.md).

kvmtune runs in-process (``kvmtune.cli.main``) so that ``http_requests``
can count the HTTP requests it really sends, by method, at the transport
adapter of requests (the layer below keystoneauth and openstacksdk).
"""

import contextlib
import dataclasses
import io
import json
import os
import pathlib
import subprocess
import sys
import time
import urllib.parse
import uuid

import pytest
import requests.adapters

from kvmtune.testcloud import api as testcloud
from tests import chromium
from tests import paths

REPO = pathlib.Path(paths.REPO)
# the `kvmtune cloud` command of the kvmtune under test
CLOUD = (sys.executable, '-m', 'kvmtune.cli', 'cloud')
FIXTURES = pathlib.Path(paths.HOSTS)
INTEL_HOST = FIXTURES / 'intel-2s-smt-ept-1g'
BENCH_IMAGE = pathlib.Path(os.environ.get(
    'KVMTUNE_IMAGE_DIR', '/var/lib/kvmtune/images')) / 'kvmtune-bench.raw'
ADMIN = 'kvmtune-admin'
BOOT_TIMEOUT = 300
# Names this tier creates start with it, so a leftover is easy to spot.
PREFIX = 'kvmtune-ft-'
# The test cloud's Python, whose Nova checks nova.conf values.
CLOUD_PYTHON = testcloud.python()
NR_HUGEPAGES = pathlib.Path('/proc/sys/vm/nr_hugepages')
HUGETLBFS = pathlib.Path('/dev/hugepages')
GUEST_PAGES = 128   # 2 MB pages: 256 MB, room for one 128 MB guest


def pytest_configure(config):
    config.addinivalue_line(
        'markers', 'compute(*modes): needs the test cloud in one of those '
                   'compute modes (fake, libvirt)')
    config.addinivalue_line(
        'markers', 'extended(why): a second case of what another test '
                   'shows; runs with KVMTUNE_FUNCTIONAL_EXTENDED=1 '
                   '(tools/run-tests sets it)')


def _in_ci():
    return os.environ.get('KVMTUNE_FUNCTIONAL') == '1'


def _unavailable(reason):
    if _in_ci():
        pytest.fail(f'KVMTUNE_FUNCTIONAL=1 but {reason}', pytrace=False)
    pytest.skip(reason)


def parse_env(text):
    """KEY=VALUE lines (optionally with ``export``) into a dict."""
    env = {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith('export '):
            line = line[len('export '):]
        key, sep, value = line.partition('=')
        if sep and key.isidentifier():
            env[key] = value.strip().strip('\'"')
    return env


@dataclasses.dataclass
class TestCloud:
    env: dict
    state: dict

    @property
    def compute_mode(self):
        return self.env.get('KVMTUNE_CLOUD_MODE') or \
            self.state.get('mode') or 'unknown'

    @property
    def nova_conf(self):
        """The compute host's own nova.conf (read after nova.conf)."""
        return self.env.get('KVMTUNE_NOVA_CONF', '')

    @property
    def host_facts(self):
        """The facts file that shapes the fake compute, or None."""
        return self.state.get('facts')

    def run(self, *args, timeout=600):
        return subprocess.run([*CLOUD, *args], capture_output=True,
                              text=True, timeout=timeout)

    def restart_compute(self):
        done = self.run('restart-compute')
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope='session')
def test_cloud():
    status = subprocess.run([*CLOUD, 'status'], capture_output=True,
                            text=True, timeout=120)
    if status.returncode != 0:
        _unavailable('the test cloud is not up (`kvmtune cloud status` '
                     'said: '
                     f'{(status.stdout + status.stderr).strip()[-300:]})')
    env_run = subprocess.run([*CLOUD, 'env'], capture_output=True,
                             text=True, timeout=60)
    env = parse_env(env_run.stdout)
    if env_run.returncode != 0 or 'OS_CLIENT_CONFIG_FILE' not in env:
        _unavailable('`kvmtune cloud env` failed: '
                     f'{env_run.stderr.strip()}')
    state_file = pathlib.Path(env.get('KVMTUNE_CLOUD_DIR', '')) / 'run' / \
        'state.json'
    try:
        state = json.loads(state_file.read_text())
    except (OSError, ValueError):
        state = {}
    # kvmtune runs in this process and reads clouds.yaml from here.
    os.environ['OS_CLIENT_CONFIG_FILE'] = env['OS_CLIENT_CONFIG_FILE']
    os.environ.pop('OS_CLOUD', None)
    cloud = TestCloud(env, state)
    wanted = os.environ.get('KVMTUNE_FUNCTIONAL_COMPUTE')
    if wanted and wanted != cloud.compute_mode:
        pytest.fail(f'CI asked for compute mode {wanted}, the cloud runs '
                    f'{cloud.compute_mode}', pytrace=False)
    return cloud


# The round an unmarked test runs in when CI runs one round per mode.
UNMARKED_ROUND = 'fake'


def _modes(item):
    marker = item.get_closest_marker('compute')
    return tuple(marker.args) if marker is not None else None


def _extended_off(item):
    """An ``extended`` test outside a run that asked for them."""
    return item.get_closest_marker('extended') is not None and \
        os.environ.get('KVMTUNE_FUNCTIONAL_EXTENDED') != '1'


def pytest_collection_modifyitems(config, items):
    """In a CI round (KVMTUNE_FUNCTIONAL_COMPUTE) keep only its tests;
    the ``extended`` ones only with KVMTUNE_FUNCTIONAL_EXTENDED=1."""
    round_ = os.environ.get('KVMTUNE_FUNCTIONAL_COMPUTE')
    if not round_:
        return
    keep, drop = [], []
    for item in items:
        modes = _modes(item) or (UNMARKED_ROUND,)
        wanted = round_ in modes and not _extended_off(item)
        (keep if wanted else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(autouse=True)
def _compute_mode_marker(request):
    modes = _modes(request.node)
    if modes is None:
        return
    cloud = request.getfixturevalue('test_cloud')
    if cloud.compute_mode not in modes:
        pytest.skip(f'needs the cloud in {" or ".join(modes)} compute mode '
                    f'(it runs {cloud.compute_mode})')


@pytest.fixture(scope='session')
def admin(test_cloud):
    """openstacksdk connection of the test itself (not kvmtune's)."""
    import openstack

    conn = openstack.connect(cloud=ADMIN)
    yield conn
    conn.close()


@pytest.fixture
def unique():
    return PREFIX + uuid.uuid4().hex[:8]


# -- kvmtune itself -------------------------------------------------------

@dataclasses.dataclass
class Result:
    rc: int
    out: str
    err: str


def kvmtune(*argv):
    """Run the kvmtune CLI in this process; returns its exit code and
    output."""
    from kvmtune import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli.main([str(a) for a in argv])
        except SystemExit as exc:     # argparse usage errors
            rc = exc.code
    return Result(rc, out.getvalue(), err.getvalue())


def kvmtune_process(*argv, env=None):
    """Run the kvmtune CLI as its own process (what an operator sees)."""
    done = subprocess.run(
        [sys.executable, '-m', 'kvmtune.cli', *map(str, argv)],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, **(env or {})})
    return Result(done.returncode, done.stdout, done.stderr)


class HttpRequests:
    """Every HTTP request sent in this process, as (METHOD, path)."""

    def __init__(self):
        self.sent = []

    def clear(self):
        self.sent.clear()

    def by_method(self):
        counts = {}
        for method, _ in self.sent:
            counts[method] = counts.get(method, 0) + 1
        return counts

    def writes(self):
        """Requests that change the cloud: not GET/HEAD, and not the
        POST that asks Keystone for a token."""
        return [(m, p) for m, p in self.sent
                if m not in ('GET', 'HEAD') and
                not (m == 'POST' and p.rstrip('/').endswith('/auth/tokens'))]


@pytest.fixture
def http_requests(monkeypatch):
    """Count requests where requests hands them to the transport."""
    log = HttpRequests()
    real_send = requests.adapters.HTTPAdapter.send

    def send(adapter, request, *args, **kwargs):
        path = urllib.parse.urlsplit(request.url).path
        log.sent.append((request.method.upper(), path))
        return real_send(adapter, request, *args, **kwargs)

    monkeypatch.setattr(requests.adapters.HTTPAdapter, 'send', send)
    return log


# -- cloud resources the tests make, always cleaned up --------------------

def find_flavor(conn, name):
    for flavor in conn.compute.flavors(is_public=None):
        if flavor.name == name:
            return flavor
    return None


@contextlib.contextmanager
def main_job_objects_kept(admin, names):
    """Around a main job: yields the flavors of ``names`` the cloud has
    before it; afterwards removes those of ``names`` and the benchmark
    image that the cloud did not have (what it had, the job made again)."""
    from kvmtune import image as bench_image

    had = {n for n in names if admin.compute.find_flavor(n)}
    had_image = bool(list(admin.image.images(name=bench_image.GLANCE_NAME)))
    yield had
    for name in names:
        flavor = admin.compute.find_flavor(name)
        if flavor and name not in had:
            admin.compute.delete_flavor(flavor)
    if not had_image:
        for image in admin.image.images(name=bench_image.GLANCE_NAME):
            admin.image.delete_image(image)


@pytest.fixture
def flavor_cleanup(admin):
    """Names of flavors to delete at teardown, whatever happened."""
    names = []
    yield names
    for name in names:
        flavor = find_flavor(admin, name)
        if flavor is not None:
            admin.compute.delete_flavor(flavor.id, ignore_missing=True)


@pytest.fixture(scope='session')
def base_flavor(admin):
    """A small public flavor to copy: 128 MB, 1 vCPU, 1 GB disk."""
    name = PREFIX + 'base-' + uuid.uuid4().hex[:6]
    flavor = admin.compute.create_flavor(name=name, ram=128, vcpus=1,
                                         disk=1, is_public=True)
    yield flavor
    admin.compute.delete_flavor(flavor.id, ignore_missing=True)


@pytest.fixture(scope='session')
def image(admin, tmp_path_factory):
    """The benchmark image if built, else a small raw file (enough for
    the fake driver and for QEMU to start a domain)."""
    if BENCH_IMAGE.exists():
        path = BENCH_IMAGE
    else:
        path = tmp_path_factory.mktemp('image') / 'blank.raw'
        path.write_bytes(b'\0' * (1024 * 1024))
    image = admin.image.create_image(
        name=PREFIX + 'image-' + uuid.uuid4().hex[:6], filename=str(path),
        disk_format='raw', container_format='bare', wait=True,
        validate_checksum=False)
    yield image
    admin.image.delete_image(image.id, ignore_missing=True)


def first_compute_host(test_cloud):
    """Host name of the cloud's first compute (the one KVMTUNE_NOVA_CONF
    configures) when it has more than one (``cloud up --computes N``),
    else None."""
    if not test_cloud.state.get('computes'):
        return None
    return test_cloud.state.get('compute_host')


class Servers:
    """Boots servers without networks and deletes them at teardown.

    With ``host`` (the first compute of a multi-compute cloud) each boot
    asks for that host (compute API 2.74: the scheduler still checks it),
    so a test that tunes the first compute gets its servers there. A test
    that wants the scheduler to choose among every compute sets
    ``servers.host = None`` first.
    """

    def __init__(self, conn, host=None):
        self.conn = conn
        self.host = host
        self.made = []

    def boot(self, name, flavor_id, image_id):
        where = {'host': self.host} if self.host else {}
        server = self.conn.compute.create_server(
            name=name, flavor_id=flavor_id, image_id=image_id,
            networks='none', **where)
        self.made.append(server.id)
        return self.wait(server.id)

    def wait(self, server_id):
        """Wait until the server is ACTIVE or ERROR; return it."""
        deadline = time.monotonic() + BOOT_TIMEOUT
        while True:
            server = self.conn.compute.get_server(server_id)
            if server.status in ('ACTIVE', 'ERROR'):
                return server
            if time.monotonic() > deadline:
                raise AssertionError(f'server {server_id} still '
                                     f'{server.status} after '
                                     f'{BOOT_TIMEOUT} s')
            time.sleep(1)

    def delete_all(self):
        for server_id in self.made:
            self.conn.compute.delete_server(server_id, ignore_missing=True)
        for server_id in self.made:
            server = self.conn.compute.find_server(server_id,
                                                   ignore_missing=True)
            if server is not None:
                self.conn.compute.wait_for_delete(server, wait=120)


@pytest.fixture
def servers(admin, test_cloud):
    made = Servers(admin, first_compute_host(test_cloud))
    yield made
    made.delete_all()


@pytest.fixture
def compute_node(admin, test_cloud):
    """(hypervisor hostname, resource provider uuid) of the first compute:
    the one node, or with ``cloud up --computes N`` the one the cloud's
    state names ``compute_host`` (configured by KVMTUNE_NOVA_CONF)."""
    hypervisors = list(admin.compute.hypervisors())
    first = first_compute_host(test_cloud)
    if first is None:
        assert len(hypervisors) == 1, [h.name for h in hypervisors]
        return hypervisors[0].name, hypervisors[0].id
    named = [h for h in hypervisors if h.name == first]
    assert len(named) == 1, (first, [h.name for h in hypervisors])
    return named[0].name, named[0].id


def provider_traits(conn, uuid_):
    body = conn.placement.get(f'/resource_providers/{uuid_}/traits',
                              microversion='1.6').json()
    return set(body['traits']), body['resource_provider_generation']


def put_provider_traits(conn, uuid_, traits):
    """Set a provider's traits as they were (retrying a generation race)."""
    for _ in range(10):
        _, generation = provider_traits(conn, uuid_)
        response = conn.placement.put(
            f'/resource_providers/{uuid_}/traits', microversion='1.6',
            json={'traits': sorted(traits),
                  'resource_provider_generation': generation})
        if response.status_code != 409:
            assert response.status_code == 200, response.text
            return
    raise AssertionError('provider generation kept changing')


@pytest.fixture
def restore_traits(admin, compute_node):
    """Put the compute node's traits back as they were before the test."""
    before, _ = provider_traits(admin, compute_node[1])
    yield before
    put_provider_traits(admin, compute_node[1], before)


# -- this host as a libvirt compute ---------------------------------------

def _hugetlbfs_mounted():
    with open('/proc/mounts') as f:
        return any(line.split()[1:3] == [str(HUGETLBFS), 'hugetlbfs']
                   for line in f)


@pytest.fixture
def host_hugepages():
    """2 MB pages for guests on this host, on a hugetlbfs QEMU can map;
    the old page count (and mount state) come back."""
    mounted_here = False
    if not _hugetlbfs_mounted():
        HUGETLBFS.mkdir(exist_ok=True)
        subprocess.run(['mount', '-t', 'hugetlbfs', 'hugetlbfs',
                        str(HUGETLBFS)], check=True, timeout=30)
        mounted_here = True
    before = int(NR_HUGEPAGES.read_text())
    NR_HUGEPAGES.write_text(str(max(before, GUEST_PAGES)))
    assert int(NR_HUGEPAGES.read_text()) >= GUEST_PAGES, 'no hugepages'
    yield
    NR_HUGEPAGES.write_text(str(before))
    if mounted_here:
        subprocess.run(['umount', str(HUGETLBFS)], timeout=30)


# -- a compute node without kvmtune's traits (test_traits, test_faults) ---

FOREIGN = 'CUSTOM_KVMTUNE_FT_RACK_A1'   # not one of kvmtune's traits


@pytest.fixture
def untagged_node(admin, compute_node, restore_traits):
    """The compute node without kvmtune's traits, with one foreign trait;
    restored afterwards."""
    from kvmtune.tuning import traits

    response = admin.placement.put(f'/traits/{FOREIGN}', microversion='1.6')
    assert response.status_code in (201, 204), response.text
    put_provider_traits(admin, compute_node[1],
                        (restore_traits - traits.KVMTUNE_TRAITS) |
                        {FOREIGN})
    yield compute_node
    put_provider_traits(admin, compute_node[1], restore_traits)
    admin.placement.delete(f'/traits/{FOREIGN}', microversion='1.6')


# the report pages' tests (test_report_html.py, test_canary_report_html.py):
# one headless Chromium per module; without it they skip, or fail where
# the functional tier was asked for
@pytest.fixture(scope='module')
def browser():
    path = chromium.binary()
    if path is None:
        reason = 'no chromium on PATH (apt-get install chromium)'
        if os.environ.get('KVMTUNE_FUNCTIONAL') == '1':
            pytest.fail(f'KVMTUNE_FUNCTIONAL=1 but {reason}', pytrace=False)
        pytest.skip(reason)
    with chromium.browser(path) as port:
        yield port
