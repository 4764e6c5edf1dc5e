"""A Nova guest that runs its own KVM guest (seed 000).

On the libvirt test cloud the compute is tuned with the nested-host
profile (``kvmtune nova-conf apply``): under QEMU TCG (virt_type qemu, the
CI machine) cpu_mode custom, cpu_models EPYC, cpu_model_extra_flags
svm,npt, which Nova's start-up check must accept for the compute to come
back; on a host with hardware KVM (tests/accel.py) cpu_mode
host-passthrough, and L1 is not emulated. ``kvmtune host
tag`` gives it CUSTOM_KVMTUNE_NESTED, and ``kvmtune flavor apply`` makes
the nested flavor (trait:CUSTOM_KVMTUNE_NESTED=required). A guest of that
flavor booted from the nested image (``kvmtune image build --nested``)
sees svm, loads kvm_amd with nested=1, runs the benchmark image as its own
guest on /dev/kvm and frames L2's result on its console, which kvmtune
reads as a verdict like any other guest's. The same flavor on the compute
without the trait is refused by the scheduler (NoValidHost).

The host watches L1 (tests/guestwatch.py): its console (Nova's console
API) and its CPU time (virsh domstats). An L1 that says nothing new and
idles for STALL_S (QEMU's emulated SVM has hung L1 after
``l2=starting``, beyond its own watchdog's reach) is destroyed by the host
and the run retried once with the same image; the test's output says
which happened.

Run the file under the test cloud's lock (``kvmtune cloud env``'s
KVMTUNE_CLOUD_LOCK, doc/design.md 9.7); the compute's nova.conf and
traits are put back after it.
"""

import base64
import os
import pathlib
import re
import shutil
import subprocess
import time
import uuid

import pytest

from kvmtune.bench import nested
from kvmtune.results import verdict
from kvmtune import workloads
from kvmtune.workloads import guestjob as jobs
from tests import accel
from tests.functional.conftest import ADMIN
from tests.functional.conftest import BENCH_IMAGE
from tests.functional.conftest import CLOUD_PYTHON
from tests.functional.conftest import first_compute_host
from tests.functional.conftest import kvmtune
from tests.functional.conftest import PREFIX
from tests.functional.conftest import provider_traits
from tests.functional.conftest import put_provider_traits
from tests import guestwatch

pytestmark = pytest.mark.compute('libvirt')

NESTED_TRAIT = 'CUSTOM_KVMTUNE_NESTED'
NESTED_IMAGE = BENCH_IMAGE.parent / 'nested' / 'kvmtune-bench.raw'
WORKLOAD = 'sysbench-cpu'
RUNTIME = 5
# L1 boots in ~40 s under TCG, L2 inside it in ~130 s on an idle 2-core
# host (both more when the host is busy); the guest's own L2 timeout is
# RUNTIME + 600 s (kvmtune/image/nested.sh).
VERDICT_TIMEOUT = RUNTIME + 900
# L1 quiet on its console and idle (under guestwatch.MIN_CPU_SHARE of a
# CPU) this long is stuck: a working L1 computes while it says nothing.
STALL_S = 240
# this host's accelerator: what the compute's virt_type and L1 are
ACCEL = accel.host_accel()
MODULES = {'svm': 'kvm_amd', 'vmx': 'kvm_intel'}


@pytest.fixture(scope='module')
def nested_image(admin):
    """The nested image in Glance (built first when it is not there)."""
    if not NESTED_IMAGE.exists():
        built = kvmtune('image', 'build', '--nested', '--output',
                        BENCH_IMAGE.parent)
        assert built.rc == 0, built.err
        print(f'\n{built.out.strip()}')
    image = admin.image.create_image(
        name=PREFIX + 'nested-' + uuid.uuid4().hex[:6],
        filename=str(NESTED_IMAGE), disk_format='raw',
        container_format='bare', wait=True, validate_checksum=False)
    yield image
    admin.image.delete_image(image.id, ignore_missing=True)


@pytest.fixture(scope='module')
def nested_compute(test_cloud):
    """The compute's nova.conf tuned with nested-host, compute restarted
    (Nova's _check_cpu_compatibility runs at its start); put back after."""
    nova_conf = pathlib.Path(test_cloud.nova_conf)
    saved = nova_conf.with_name(nova_conf.name + '.kvmtune-ft-nested')
    shutil.copy2(nova_conf, saved)
    backup = nova_conf.with_name(nova_conf.name + '.kvmtune.bak')
    had_backup = backup.exists()
    try:
        extra = (('--nova-python', CLOUD_PYTHON)
                 if os.path.exists(CLOUD_PYTHON) else ())
        applied = kvmtune('nova-conf', 'apply', '--config', nova_conf,
                          '--profile', 'nested-host', *extra)
        assert applied.rc == 0, applied.err
        print(f'\nnova-conf apply: {applied.out.strip()}')
        text = nova_conf.read_text()
        if ACCEL == 'tcg':
            assert re.search(r'^cpu_mode = custom$', text, re.M), text
            assert re.search(r'^cpu_models = EPYC$', text, re.M), text
            assert re.search(r'^cpu_model_extra_flags = svm,npt$', text,
                             re.M), text
        else:
            assert re.search(r'^cpu_mode = host-passthrough$', text,
                             re.M), text
        test_cloud.restart_compute()
        yield nova_conf
    finally:
        shutil.copy2(saved, nova_conf)
        saved.unlink()
        if not had_backup:
            backup.unlink(missing_ok=True)
        test_cloud.restart_compute()


@pytest.fixture(scope='module')
def nested_traits(admin, test_cloud, nested_compute):
    """The (first) compute node tagged by kvmtune host tag; its traits
    as they were come back after the file."""
    first = first_compute_host(test_cloud)
    (node,) = [h for h in admin.compute.hypervisors()
               if first is None or h.name == first]
    before, _ = provider_traits(admin, node.id)
    tagged = kvmtune('host', 'tag', '--os-cloud', ADMIN, '--hypervisor',
                     node.name)
    assert tagged.rc == 0, tagged.err
    traits, _ = provider_traits(admin, node.id)
    assert NESTED_TRAIT in traits, (tagged.out, traits)
    yield node
    put_provider_traits(admin, node.id, before)


@pytest.fixture(scope='module')
def nested_flavor(admin, nested_compute):
    """1 vCPU, 1 GiB (L2 gets half), 1 GB disk, made nested by the
    profile."""
    base = admin.compute.create_flavor(
        name=PREFIX + 'l1-base-' + uuid.uuid4().hex[:6], ram=1024, vcpus=1,
        disk=1, is_public=True)
    name = PREFIX + 'nested-' + uuid.uuid4().hex[:6]
    try:
        made = kvmtune('flavor', 'apply', '--os-cloud', ADMIN, '--profile',
                       'nested-host', '--from', base.name, '--name', name)
        assert made.rc == 0, made.err
        flavor = admin.compute.find_flavor(name)
        specs = admin.compute.fetch_flavor_extra_specs(flavor.id)
        assert specs.extra_specs.get(f'trait:{NESTED_TRAIT}') == \
            'required', specs.extra_specs
        yield flavor
    finally:
        found = admin.compute.find_flavor(name)
        if found is not None:
            admin.compute.delete_flavor(found.id, ignore_missing=True)
        admin.compute.delete_flavor(base.id, ignore_missing=True)


def _boot(admin, servers, flavor, image):
    the_job = jobs.build(workloads.get(WORKLOAD), runtime=RUNTIME)
    server = admin.compute.create_server(
        name=PREFIX + 'nested-' + uuid.uuid4().hex[:6], flavor_id=flavor.id,
        image_id=image.id, networks='none', config_drive=True,
        user_data=base64.b64encode(jobs.encode(the_job).encode()).decode())
    servers.made.append(server.id)
    return servers.wait(server.id)


def _l1_flag():
    """The virtualization flag L1 sees: svm under TCG (QEMU emulates SVM,
    not VMX), else the host's own (host-passthrough)."""
    if ACCEL == 'tcg':
        return 'svm'
    with open('/proc/cpuinfo') as f:
        return 'vmx' if 'vmx' in accel.cpu_flags(f.read()) else 'svm'


def _watched_verdict(admin, server):
    """L1's console once it printed its final status, watched from the
    host: (console text, verdict row, guestwatch.Outcome)."""
    domain = admin.compute.get_server(server.id).instance_name

    def console():
        return admin.compute.get_server_console_output(server)['output']

    def done(text):
        return verdict.console_row(text, server.id, 'client', WORKLOAD,
                                   emulated=accel.emulated(ACCEL)
                                   ).status != 'no-result'

    outcome = guestwatch.watch(console, guestwatch.virsh_cpu_seconds(domain),
                               guestwatch.virsh_destroy(domain), done,
                               stall_s=STALL_S, timeout=VERDICT_TIMEOUT,
                               interval=10)
    row = verdict.console_row(outcome.console, server.id, 'client',
                              WORKLOAD, emulated=accel.emulated(ACCEL))
    return outcome.console, row, outcome


def _check_cpu(admin, server):
    domain = admin.compute.get_server(server.id).instance_name
    xml = subprocess.run(['virsh', 'dumpxml', domain], capture_output=True,
                         text=True, check=True, timeout=60).stdout
    cpu = re.search(r'<cpu .*?</cpu>', xml, re.S).group(0)
    print(f'\ndomain {domain}: {" ".join(cpu.split())}')
    if ACCEL == 'tcg':
        assert "mode='custom'" in cpu and '>EPYC</model>' in cpu, cpu
        assert re.search(r"<feature policy='require' name='svm'/>",
                         cpu), cpu
    else:
        assert "mode='host-passthrough'" in cpu, cpu


def test_nested_guest_runs_its_own_guest(admin, nested_traits,
                                         nested_flavor, nested_image,
                                         servers):
    started = time.monotonic()
    tries = []
    for attempt in (1, 2):
        server = _boot(admin, servers, nested_flavor, nested_image)
        assert server.status == 'ACTIVE', server.fault
        _check_cpu(admin, server)
        text, row, outcome = _watched_verdict(admin, server)
        tries.append(outcome.report(f'L1 (try {attempt})'))
        print(tries[-1])
        if outcome.state != 'stalled':
            break
        # a stuck L1 (the host destroyed it): once more, same image
        admin.compute.delete_server(server.id, ignore_missing=True)
        admin.compute.wait_for_delete(server, wait=120)
    said = nested.nested_said(text, server.id)
    happened = ('first try' if len(tries) == 1 else
                'retried once after a stuck L1')
    print(f'verdict after {time.monotonic() - started:.0f} s '
          f'({accel.label(ACCEL)}, {happened}): {row.status} {row.reason} '
          f'events/s {row.events_s}; L1 said {said}')
    assert outcome.state == 'done', '; '.join(tries)
    assert row.ok, (row, text[-3000:])
    assert row.events_s > 0 and row.emulated is accel.emulated(ACCEL)
    flag = _l1_flag()
    assert said[flag] == 'present', said
    assert said['module'] == MODULES[flag] and said['loaded'] == 'yes', said
    assert said['kvm'] == '/dev/kvm', said
    assert said['l2'] == 'ok' and said['l2_accel'] == 'kvm', said


def test_nested_flavor_refused_without_the_trait(admin, nested_traits,
                                                 nested_flavor,
                                                 nested_image, servers):
    node = nested_traits
    traits, _ = provider_traits(admin, node.id)
    put_provider_traits(admin, node.id, traits - {NESTED_TRAIT})
    try:
        server = _boot(admin, servers, nested_flavor, nested_image)
    finally:
        put_provider_traits(admin, node.id, traits)
    assert server.status == 'ERROR', server.status
    assert 'No valid host' in (server.fault or {}).get('message', ''), \
        server.fault
