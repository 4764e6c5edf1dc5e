"""The benchmark guest for real: image build (apt, mtools, syslinux),
QEMU guests under TCG on this host, the bare-host baseline.

Needs apt access (first build), qemu-system-x86, qemu-utils, dosfstools,
mtools, syslinux, genisoimage, fio. Uses $KVMTUNE_IMAGE_DIR (default
/var/lib/kvmtune/images); a build there is reused when current.
"""

import glob
import gzip
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from kvmtune.bench import baseline
from kvmtune.bench import qemu
from kvmtune import image
from kvmtune.image import build
from kvmtune.image import modules
from kvmtune.results import units
from kvmtune import workloads
from kvmtune.workloads import console
from kvmtune.workloads import guestjob
from kvmtune.workloads import parsers
from tests import accel

IMAGE_DIR = image.image_dir()
KVMTUNE = [sys.executable, '-m', 'kvmtune.cli']


def _build_as_before(directory, with_net=None):
    """Build (or find current) keeping the options of the image there,
    so the tests never flip an operator's image to another variant."""
    current = build._read_manifest(os.path.join(directory, image.MANIFEST))
    return build.build(
        directory, static_fio=current.get('static_fio', False),
        with_net=(current.get('with_net', False) if with_net is None
                  else with_net), log=lambda *a: None)


@pytest.fixture(scope='module')
def built():
    return _build_as_before(IMAGE_DIR)


def kvmtune(*args, timeout=600):
    return subprocess.run(KVMTUNE + list(args), capture_output=True,
                          text=True, timeout=timeout,
                          env=dict(os.environ, KVMTUNE_IMAGE_DIR=IMAGE_DIR))


def test_second_build_changes_nothing(built):
    before = {n: os.stat(os.path.join(IMAGE_DIR, n)).st_mtime_ns
              for n in (image.RAW, image.QCOW2, image.INITRD)}
    again = _build_as_before(IMAGE_DIR)
    assert again['changed'] is False
    assert again['fingerprint'] == built['fingerprint']
    assert before == {n: os.stat(os.path.join(IMAGE_DIR, n)).st_mtime_ns
                      for n in before}


def _cpio_entries(data):
    entries, pos = {}, 0
    while True:
        head = data[pos:pos + 110]
        assert head[:6] == b'070701'
        fields = [int(head[6 + 8 * i:14 + 8 * i], 16) for i in range(13)]
        size, namesize = fields[6], fields[11]
        name_end = pos + 110 + namesize
        name = data[pos + 110:name_end - 1].decode()
        body = name_end + (-name_end % 4)
        if name == 'TRAILER!!!':
            return entries
        entries[name] = data[body:body + size]
        pos = body + size + (-(body + size) % 4)


def test_initrd_loads_modules_after_their_dependencies(built, tmp_path):
    with open(os.path.join(IMAGE_DIR, image.INITRD), 'rb') as f:
        entries = _cpio_entries(gzip.decompress(f.read()))
    assert entries['init'].startswith(b'#!/bin/busybox sh\n')
    order = entries['lib/modules/load.order'].decode().split()
    assert 'virtio_blk.ko' in order and 'vfat.ko' in order
    loaded = set()
    for name in order:
        path = tmp_path / name
        path.write_bytes(entries[f'lib/modules/{name}'])
        deps = modules.modinfo(str(path)).get('depends', [''])[0]
        for dep in filter(None, deps.split(',')):
            assert dep.replace('-', '_') in loaded, f'{name} before {dep}'
        loaded.add(name[:-3].replace('-', '_'))
    assert 'etc/kvmtune/workloads/fio-randread-4k.client' in entries


def test_raw_disk_is_bios_bootable_vfat(built):
    raw = os.path.join(IMAGE_DIR, image.RAW)
    with open(raw, 'rb') as f:
        mbr = f.read(512)
    assert mbr[510:] == b'\x55\xaa' and mbr[446] == 0x80
    env = dict(os.environ, MTOOLS_SKIP_CHECK='1')
    listing = subprocess.run(
        ['mdir', '-a', '-b', '-i', f'{raw}@@1M', '::/', '::/kvmtune/bin'],
        capture_output=True, text=True, env=env, check=True).stdout
    for name in ('ldlinux.sys', 'vmlinuz', 'initrd.img', 'syslinux.cfg',
                 'fio'):
        assert name in listing
    info = subprocess.run(['qemu-img', 'info', '--output=json',
                           os.path.join(IMAGE_DIR, image.QCOW2)],
                          capture_output=True, text=True, check=True)
    assert json.loads(info.stdout)['format'] == 'qcow2'


def test_bench_local_one_guest_verified_and_labelled(built):
    # the job on the kernel command line, started on the signal (default)
    proc = kvmtune('bench', 'local', '--vms', '1', '--workload',
                   'fio-randread-4k', '--runtime', '2',
                   '--job-via', 'cmdline')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'start: signal (NMI) once all are ready' in proc.stdout
    rows = [line for line in proc.stdout.splitlines()
            if line.strip().startswith('0 ')]
    # auto: KVM where this host has it, else TCG (tests/accel.py)
    assert rows and ' ok ' in rows[0] and accel.label() in rows[0]


def kvm_refusal():
    """Why kvmtune must refuse --accel kvm on this host (tests/accel.py's
    own reading: no working /dev/kvm, or one without vmx/svm), or None
    where KVM runs stock guests."""
    if accel.host_accel() == 'kvm':
        return None
    if not accel.kvm_creates_vm():
        return 'KVM is not usable here'
    return 'without vmx/svm; stock guest kernels do not boot under it'


@pytest.mark.parametrize('forced', ['kvm', 'tcg'])
def test_bench_local_with_the_accelerator_forced(built, tmp_path, forced):
    """The guest tier with --accel forced each way. Where the host has
    both (KVM with vmx/svm), one guest runs under each, labelled by it;
    TCG always exists. Where KVM cannot run stock guests (this CI host:
    PVM's /dev/kvm, no vmx), forcing kvm is refused with the reason, one
    line, exit 2, before any guest starts: the test says so, no skip."""
    out = tmp_path / 'run.json'
    proc = kvmtune('bench', 'local', '--vms', '1', '--workload',
                   'fio-randread-4k', '--runtime', '2', '--accel', forced,
                   '-o', str(out))
    refusal = kvm_refusal() if forced == 'kvm' else None
    if refusal is not None:
        print(f'\nonly tcg on this host: --accel kvm refused: '
              f'{proc.stderr.strip()}')
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert proc.stderr.startswith('kvmtune: error: --accel: '), \
            proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert refusal in proc.stderr
        assert 'fix: use --accel tcg or auto' in proc.stderr
        assert 'Traceback' not in proc.stderr and not out.exists()
        return
    assert proc.returncode == 0, proc.stdout + proc.stderr
    label = accel.LABELS[forced]
    assert f'accelerator: {label} (asked for)' in proc.stdout
    (row,) = json.loads(out.read_text())['rows']
    assert row['status'] == 'ok' and row['accel'] == label, row
    assert row['emulated'] is (forced == 'tcg'), row


def test_bench_local_starts_guests_on_the_signal(built, tmp_path):
    """Two guests say ready, take their NMI through QMP and run: each
    started when it was signalled (its own uptime from ready to start
    matches the host's from ready seen to signal sent); the run's wall
    time is printed beside the old fixed start's boot allowance."""
    from kvmtune.bench import syncstart

    out = tmp_path / 'run.json'
    began = time.monotonic()
    proc = kvmtune('bench', 'local', '--vms', '2', '--workload',
                   'fio-randread-4k', '--runtime', '3', '--accel', 'tcg',
                   '-o', str(out))
    wall = time.monotonic() - began
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'start signal (NMI) to 2 client(s) within' in proc.stdout
    rows = json.loads(out.read_text())['rows']
    assert [r['status'] for r in rows] == ['ok', 'ok'], rows
    for row in rows:
        # the guest's times (uptime) and the host's (since its launch)
        assert 0 < row['ready_s'] <= row['start_s'], row
        assert 0 < row['seen_ready_s'] <= row['signal_s'], row
        waited_guest = row['start_s'] - row['ready_s']
        waited_host = row['signal_s'] - row['seen_ready_s']
        # ready seen within a 0.2 s poll, the NMI seen within the guest's
        # 0.2 s poll: without the signal it would have waited its
        # start_timeout (minutes)
        assert abs(waited_guest - waited_host) < 2.0, row
        assert row['iops'] > 0 and row['emulated']
    # the two signals went back to back
    assert abs(rows[0]['signal_s'] - rows[1]['signal_s']) < 1.0, rows
    # a figure, not an assertion (a shared 2-core host boots TCG guests
    # as slowly as it likes): the old mode idled start_delay before any
    # start; benchmarks/guest_boot.py times one guest's boot
    print(f'\nbench local, 2 guests, signal start: {wall:.1f} s (the old '
          f'fixed start idled {syncstart.start_delay("tcg", 2)} s first)')


def test_bench_local_reports_guests_not_ready_in_time(built, tmp_path):
    """No guest boots within a 2 s ready timeout: each is late with the
    reason, none averaged in, no start signal, and the run ends then."""
    from kvmtune.bench import syncstart

    out = tmp_path / 'run.json'
    began = time.monotonic()
    proc = kvmtune('bench', 'local', '--vms', '1', '--workload',
                   'fio-randread-4k', '--runtime', '2', '--accel', 'tcg',
                   '--ready-timeout', '2', '-o', str(out))
    wall = time.monotonic() - began
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert '1 guest(s) not ready within 2 s: left out' in proc.stdout
    (row,) = json.loads(out.read_text())['rows']
    assert row['status'] == 'late' and row['iops'] is None
    assert row['reason'].startswith('not ready within 2 s of launch: no '
                                    'start signal, not measured'), row
    assert row['signal_s'] is None
    assert '0 ok' in proc.stdout.split('\nall ', 1)[1].split('\n')[0]
    print(f'\nbench local, ready timeout 2 s, no guest ready: ended after '
          f'{wall:.1f} s')
    # hang bound: the run ends at its 2 s ready timeout, not at the
    # default one (180 s under TCG)
    assert wall < syncstart.ready_timeout('tcg', 1), wall


def test_bench_local_fixed_start_is_kept(built):
    """--start at: every job carries the common start_at, no signal."""
    proc = kvmtune('bench', 'local', '--vms', '1', '--workload',
                   'fio-randread-4k', '--runtime', '2', '--accel', 'tcg',
                   '--start', 'at')
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'start: at a common time in' in proc.stdout
    assert 'start signal' not in proc.stdout
    rows = [line for line in proc.stdout.splitlines()
            if line.strip().startswith('0 ')]
    assert rows and ' ok ' in rows[0]


def _refused_guest(workdir, hold):
    """A guest whose job names its own boot disk: it must refuse it."""
    guest = qemu.Guest(0, '0a0a0a0a-0000-4000-8000-000000000001', workdir)
    data = os.path.join(workdir, 'data.raw')
    qemu.data_disk(data, '64M', 'raw')
    the_job = guestjob.build(workloads.get('fio-randwrite-4k'),
                             target='/dev/vda', runtime=1, hold=hold)
    guest.start(guest.argv('tcg', 1, 256, IMAGE_DIR, data, 'raw',
                           'none', job_cmdline=guestjob.cmdline(the_job)))
    return guest


def test_guest_refuses_its_own_boot_disk_and_powers_off(built):
    workdir = tempfile.mkdtemp(prefix='kvmtune-test-', dir='/var/tmp')
    guest = _refused_guest(workdir, hold=False)
    try:
        guest.proc.wait(240)   # no hold: the guest powers off by itself
        text = guest.console_text()
        state, reason = console.status(text, guest.instance_id)
        assert state == 'error' and 'refusing /dev/vda' in reason
        # it said how it runs before it failed: TCG, as it was started
        said = console.guest(text, guest.instance_id)
        assert said['accel'] == 'tcg', text[-2000:]
        assert said['hypervisor'] == 'TCGTCGTCGTCG'
    finally:
        guest.stop()
        subprocess.run(['rm', '-rf', workdir])


def test_held_guest_stays_up_after_its_error(built):
    workdir = tempfile.mkdtemp(prefix='kvmtune-test-', dir='/var/tmp')
    guest = _refused_guest(workdir, hold=True)
    try:
        deadline = time.time() + 240
        while (time.time() < deadline and guest.proc.poll() is None and
               not console.status(guest.console_text(), guest.instance_id)):
            time.sleep(1)
        state, reason = console.status(guest.console_text(),
                                       guest.instance_id)
        assert state == 'error' and 'refusing /dev/vda' in reason
        # held: still running well after its verdict (Nova would still
        # serve its console log)
        with pytest.raises(subprocess.TimeoutExpired,
                           match='timed out after 20 seconds'):
            guest.proc.wait(20)
    finally:
        guest.stop()
        subprocess.run(['rm', '-rf', workdir])


def _qemu_children(pid):
    out = subprocess.run(['pgrep', '-P', str(pid), '-f', 'kvmtune-bench'],
                         capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def test_ctrl_c_removes_guests_and_scratch_files(built):
    before = set(glob.glob('/var/tmp/kvmtune-bench-*'))
    proc = subprocess.Popen(
        KVMTUNE + ['bench', 'local', '--vms', '2', '--workload',
                   'fio-randread-4k'],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=dict(os.environ, KVMTUNE_IMAGE_DIR=IMAGE_DIR))
    deadline = time.time() + 60
    children = []
    while time.time() < deadline and len(children) < 2:
        time.sleep(0.5)
        children = _qemu_children(proc.pid)
    assert len(children) == 2
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, out
    for pid in children:
        assert not os.path.exists(f'/proc/{pid}') or \
            open(f'/proc/{pid}/stat').read().split()[2] == 'Z'
    assert set(glob.glob('/var/tmp/kvmtune-bench-*')) == before


def test_baseline_on_a_scratch_file(tmp_path):
    out = tmp_path / 'baseline.json'
    proc = kvmtune('baseline', '--workload', 'fio-randread-4k',
                   '--runtime', '2', '--output', str(out))
    assert proc.returncode == 0, proc.stderr
    doc = baseline.load(str(out))
    assert doc['emulated'] is False and doc['scratch'] is True
    assert doc['result']['iops'] > 0
    assert not os.path.exists(doc['target'])   # scratch removed
    assert doc['facts'] is None or doc['facts']['schema'] == 1


def test_baseline_refuses_to_write_over_data(tmp_path):
    target = tmp_path / 'precious.img'
    target.write_bytes(b'x' * 4096)
    proc = kvmtune('baseline', '--workload', 'fio-randwrite-4k',
                   '--target', str(target), '--runtime', '1',
                   '--output', str(tmp_path / 'b.json'))
    assert proc.returncode == 2
    assert 'refusing to write to a file holding data' in proc.stderr
    assert target.read_bytes() == b'x' * 4096
    assert not (tmp_path / 'b.json').exists()


NET_IMAGE_DIR = os.environ.get('KVMTUNE_NET_IMAGE_DIR',
                               IMAGE_DIR.rstrip('/') + '-net')


@pytest.fixture(scope='module')
def net_built():
    return _build_as_before(NET_IMAGE_DIR, with_net=True)


def test_request_response_between_two_guests(net_built):
    proc = kvmtune('bench', 'local', '--vms', '2', '--workload',
                   'sockperf-tcp-rr', '--runtime', '3', '--image-dir',
                   NET_IMAGE_DIR)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    server = [x for x in lines if x.strip().startswith('0 ')][0]
    client = [x for x in lines if x.strip().startswith('1 ')][0]
    assert ' server ' in server
    assert ' ok ' in client and accel.label() in client
    # the column by its header, as the one renderer names it
    head = next(x for x in lines if x.split()[:2] == ['VM', 'status'])
    tps = client.split()[head.split().index(units.UNITS['tps'][0])]
    assert float(tps.replace(',', '')) > 0   # printed as 1,570


def test_iperf3_pair_addressed_by_network_data(net_built):
    """Two guests on a QEMU socket network, each told its address only by
    the config drive's network_data.json (Nova's shape for a subnet
    without DHCP): the client measures the server."""
    workdir = tempfile.mkdtemp(prefix='kvmtune-test-', dir='/var/tmp')
    workload = workloads.get('iperf3-tcp-stream')
    group = f'230.0.251.{os.getpid() % 250}:{30000 + os.getpid() % 20000}'
    addresses = ('10.233.7.1/24', '10.233.7.2/24')
    start_at = int(time.time()) + 45
    guests = []
    try:
        for index, role in enumerate(('server', 'client')):
            guest = qemu.Guest(index, f'0b0b0b0b-0000-4000-8000-00000000000'
                               f'{index}', os.path.join(workdir, role))
            os.makedirs(guest.workdir)
            mac = f'52:54:00:6b:07:{index:02x}'
            the_job = guestjob.build(workload, role=role, start_at=start_at,
                                     runtime=3,
                                     peer='10.233.7.1' if index else None)
            assert 'address' not in the_job
            cdrom = os.path.join(guest.workdir, 'config-2.iso')
            qemu.config_drive(cdrom, guest.workdir, guest.instance_id,
                              guestjob.encode(the_job),
                              network=qemu.network_data(
                                  guest.instance_id, mac, addresses[index],
                                  mtu=1400))
            guest.start(guest.argv('tcg', 1, 256, NET_IMAGE_DIR, None, 'raw',
                                   'none', cdrom=cdrom, nic=(group, mac)))
            guests.append(guest)
        server, client = guests
        client.proc.wait(start_at + 120 - time.time())
        for guest, address in zip(guests, addresses):
            said = console.net(guest.console_text(), guest.instance_id)
            assert said == {'device': 'eth0', 'address': address,
                            'from': 'network_data', 'mtu': '1400'}, \
                guest.console_text()[-2000:]
        text = client.console_text()
        # the ok line carries the guest's times (design.md 6): the verdict
        assert console.status(text, client.instance_id)[0] == 'ok', \
            text[-2000:]
        (payload,) = console.extract(text, client.instance_id)
        result = parsers.parse('iperf3', payload['raw'],
                               emulated=console.emulated(
                                   text, client.instance_id, False))
        assert result['gbit_s'] > 0 and result['emulated'] is True
    finally:
        for guest in guests:
            guest.stop()
        subprocess.run(['rm', '-rf', workdir])
