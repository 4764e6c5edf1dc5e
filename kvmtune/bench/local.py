"""``kvmtune bench local``: N guests booted at once with QEMU on this host.

Disk workloads: every guest gets its own preallocated scratch data disk
(vdb). Network workloads: guests pair up as server and client with static
addresses on a QEMU socket (multicast) network private to the run. Jobs go
on a config drive (or the kernel command line), all with one common
``start_at``; the addresses go in the config drive's network_data.json as
Nova writes it for a subnet without DHCP (or in the job, on the command
line). Results come back on the serial consoles, are verified (byte count,
sha256) and parsed. A guest that fails or times out is reported as such and
kept out of the aggregate.
"""

import contextlib
import os
import shutil
import signal
import tempfile
import time
import uuid

from kvmtune.errors import InputError
from kvmtune.errors import KvmtuneError
from kvmtune import image
from kvmtune.bench import qemu
from kvmtune.workloads import console
from kvmtune.workloads import job as jobs
from kvmtune.workloads import parsers

SCRATCH_DIR = '/var/tmp'   # O_DIRECT (cache=none) fails on tmpfs
# Seconds from launch to start_at: boot (kernel reaches /init in ~5 s
# under TCG, ~17 s to a result) plus the cost of booting guests at once.
# A 2-core host busy with other work booted one TCG guest in up to 45 s
# (guests then reported `late`): the allowance leaves room for that.
BOOT_ALLOWANCE = {'tcg': (60, 20), 'kvm': (10, 2)}
FINISH_MARGIN = 30


def start_delay(accel, vms):
    base, per_vm = BOOT_ALLOWANCE[accel]
    return base + per_vm * (vms - 1)


@contextlib.contextmanager
def _unwind_on_sigterm_or_sigint():
    """SIGTERM unwinds like Ctrl-C, so guests and scratch files go too.

    Ctrl-C is made to work even where the parent ignored SIGINT (a job a
    non-interactive shell put in the background inherits SIG_IGN, and
    Python then never raises KeyboardInterrupt).
    """
    def handler(signum, frame):
        raise KeyboardInterrupt
    previous = {sig: signal.signal(sig, handler)
                for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _check_image(image_dir):
    missing = [n for n in (image.RAW, image.KERNEL, image.INITRD)
               if not os.path.exists(os.path.join(image_dir, n))]
    if missing:
        raise InputError(f'{missing[0]} missing', source=image_dir,
                         fix='run kvmtune image build')
    if not shutil.which(qemu.QEMU):
        raise KvmtuneError(f'{qemu.QEMU} not found',
                           fix='apt-get install qemu-system-x86')


def _verdict(guest, workload, accel):
    """Per-VM row: status, reason, result (only when verified and parsed)."""
    text = guest.console_text()
    row = {'vm': guest.index, 'role': getattr(guest, 'role', 'client'),
           'instance_id': guest.instance_id,
           'accel': qemu.accel_label(accel), 'result': None,
           'seconds': (round(guest.ended - guest.started, 1)
                       if guest.ended else None)}
    # The guest's own word (accel=tcg) labels its figures emulated too.
    emulated = console.emulated(text, guest.instance_id, accel == 'tcg')
    reported = console.status(text, guest.instance_id)
    if reported is None:
        why = ('timed out' if guest.ended is None else
               f'QEMU exited {guest.proc.returncode} without a status'
               + (f': {guest.qemu_error()}' if guest.qemu_error() else ''))
        last = [line for line in text.replace('\r', '').splitlines()
                if line.strip()][-1:]
        if last:
            why += f'; console ends: {last[0][-120:]}'
        return dict(row, status='no-result', reason=why)
    state, why = reported
    if row['role'] == 'server' and state in ('serving', 'ok'):
        return dict(row, status='server', reason='')
    if state != 'ok':
        return dict(row, status=state, reason=why)
    try:
        payloads = console.extract(text, guest.instance_id)
        mine = [p for p in payloads if p['workload'] == workload.name]
        if not mine:
            raise KvmtuneError(f'no {workload.name} result frame')
        result = parsers.parse(mine[-1]['tool'], mine[-1]['raw'],
                               workload.name, emulated=emulated)
    except KvmtuneError as exc:
        return dict(row, status='invalid', reason=exc.line())
    return dict(row, status='ok', reason='', result=result,
                sha256=mine[-1]['sha256'])


def _done(guest):
    if guest.poll() is not None:
        return True
    reported = console.status(guest.console_text(), guest.instance_id)
    return reported is not None and reported[0] in ('ok', 'late', 'error')


def aggregate(rows):
    """Sums of throughput, means of latency, over the ok guests only."""
    ok = [r['result'] for r in rows if r['status'] == 'ok']
    servers = sum(1 for r in rows if r['status'] == 'server')
    total = {'vms_ok': len(ok),
             'vms_failed': len(rows) - len(ok) - servers}
    for key in ('iops', 'bw_bytes_s', 'gbit_s', 'tps', 'events_s'):
        values = [r.get(key) for r in ok if r.get(key) is not None]
        total[key] = sum(values) if values else None
    # Latency is never summed: the mean of the guests' means, and the
    # highest of their p99s (the worst guest's tail).
    values = [r['lat_ns']['mean'] for r in ok
              if r['lat_ns']['mean'] is not None]
    total['lat_mean_ns'] = sum(values) / len(values) if values else None
    values = [r['lat_ns']['p99'] for r in ok
              if r['lat_ns']['p99'] is not None]
    total['lat_p99_ns'] = max(values) if values else None
    cpu = [r['cpu_pct'] for r in ok if r['cpu_pct'] is not None]
    total['cpu_pct'] = sum(cpu) / len(cpu) if cpu else None
    return total


def _plan(workload, vms):
    """[(role, address, peer)] per guest: disk guests alone; network
    guests in pairs, server then client, on 10.233.0.0/24."""
    if workload.target in ('disk', 'none'):
        return [('client', None, None)] * vms
    if vms < 2 or vms % 2:
        raise InputError('a network workload needs an even number of '
                         'guests (server, client pairs)', key='--vms')
    plan = []
    for pair in range(vms // 2):
        server = f'10.233.0.{2 * pair + 1}'
        plan += [('server', f'{server}/24', None),
                 ('client', f'10.233.0.{2 * pair + 2}/24', server)]
    return plan


def _check_net_image(image_dir, workload):
    """The image has the workload's tool (network tools: --with-net)."""
    import json

    try:
        with open(os.path.join(image_dir, image.MANIFEST)) as f:
            tools = json.load(f).get('tools', [])
    except (OSError, ValueError):
        tools = []
    if workload.tool not in tools:
        raise InputError(f'the image has no {workload.tool}',
                         source=image_dir,
                         fix='kvmtune image build' + (
                             ' --with-net' if workload.target == 'peer'
                             else ' (rebuild: an older image)'))


def pinned_cpus(index, vcpus, host_cpus):
    """The host CPUs guest ``index`` is pinned to: the next ``vcpus`` of
    ``host_cpus`` after the previous guests' (as Nova hands out dedicated
    CPUs); None when they run out (guests would share CPUs)."""
    first = index * vcpus
    if first + vcpus > len(host_cpus):
        return None
    return host_cpus[first:first + vcpus]


def run(workload, vms, vcpus=1, ram_mb=256, disk_size='256M',
        cache='none', fmt='raw', accel='tcg', job_via='config-drive',
        runtime=None, params=None, image_dir=None, delay=None,
        boot='kernel', log=print, bus='virtio-blk', iothread=True,
        hugepages=None, pin=False):
    """Boot ``vms`` guests at once, wait, and return the per-VM rows.

    :param bus: the data disk's bus (``qemu.BUSES``)
    :param iothread: the data disk on its own I/O thread
    :param hugepages: a hugetlbfs mount to back guest RAM, or None
    :param pin: pin each guest to its own host CPUs (InputError when the
        host has fewer than ``vms * vcpus``)
    """
    image_dir = image.image_dir(image_dir)
    _check_image(image_dir)
    plan = _plan(workload, vms)
    if workload.target != 'disk':
        _check_net_image(image_dir, workload)
    host_cpus = sorted(os.sched_getaffinity(0))
    if pin and vms * vcpus > len(host_cpus):
        raise InputError(f'pinning {vms} guest(s) of {vcpus} vCPU needs '
                         f'{vms * vcpus} host CPUs, this host has '
                         f'{len(host_cpus)}', key='pinning',
                         fix='fewer guests or vCPUs, or pinning off')
    runtime = int(runtime or workload.settings(params).get('runtime', 10))
    delay = start_delay(accel, vms) if delay is None else delay
    workdir = tempfile.mkdtemp(prefix='kvmtune-bench-', dir=SCRATCH_DIR)
    # One multicast group per run: guests of other runs never meet.
    group = f'230.0.{os.getpid() % 250}.{int(time.time()) % 250}:' \
            f'{20000 + os.getpid() % 20000}'
    guests = []
    try:
        with _unwind_on_sigterm_or_sigint():
            start_at = int(time.time()) + delay
            for index, (role, address, peer) in enumerate(plan):
                guest = qemu.Guest(index, str(uuid.uuid4()),
                                   os.path.join(workdir, f'vm{index}'))
                guest.role = role
                os.makedirs(guest.workdir)
                data = nic = None
                if workload.target == 'disk':
                    data = os.path.join(guest.workdir, f'data.{fmt}')
                    qemu.data_disk(data, disk_size, fmt)
                elif workload.target == 'peer':
                    nic = (group, f'52:54:00:6b:00:{index:02x}')
                on_cmdline = job_via == 'cmdline'
                the_job = jobs.build(
                    workload, role=role,
                    target=qemu.DATA_DISKS[bus] if data else None, peer=peer,
                    start_at=start_at, runtime=runtime, params=params,
                    address=address if on_cmdline else None)
                cdrom = cmdline = None
                if on_cmdline:
                    boot = 'kernel'
                    cmdline = jobs.cmdline(the_job)
                else:
                    cdrom = os.path.join(guest.workdir, 'config-2.iso')
                    qemu.config_drive(
                        cdrom, guest.workdir, guest.instance_id,
                        jobs.encode(the_job),
                        network=(qemu.network_data(guest.instance_id, nic[1],
                                                   address)
                                 if address else None))
                guest.argv_used = guest.argv(
                    accel, vcpus, ram_mb, image_dir, data, fmt, cache,
                    job_cmdline=cmdline, cdrom=cdrom, boot=boot, nic=nic,
                    bus=bus, iothread=iothread, hugepages=hugepages,
                    pin=(pinned_cpus(index, vcpus, host_cpus) if pin
                         else None))
                guests.append(guest)
            for guest in guests:
                guest.start(guest.argv_used)
            log(f'{vms} guest(s) booting ({qemu.accel_label(accel)}), '
                f'common start in {start_at - int(time.time())} s, '
                f'runtime {runtime} s')
            clients = [g for g in guests if g.role == 'client']
            deadline = start_at + runtime + FINISH_MARGIN + 10 * vms
            while time.time() < deadline:
                # Servers (sockperf) serve until stopped: wait for clients,
                # until they exit or print their verdict (a held guest
                # stays up after it).
                if all(_done(g) for g in clients):
                    break
                time.sleep(0.5)
            for guest in guests:
                guest.poll()
            return [_verdict(g, workload, accel) for g in guests]
    finally:
        for guest in guests:
            guest.stop()
        shutil.rmtree(workdir, ignore_errors=True)
