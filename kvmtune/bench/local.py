"""``kvmtune bench local``: N guests booted at once with QEMU on this host.

Disk workloads: every guest gets its own preallocated scratch data disk
(vdb). Network workloads: guests pair up as server and client with static
addresses on a QEMU socket (multicast) network private to the run. Jobs go
on a config drive (or the kernel command line); the addresses go in the
config drive's network_data.json as Nova writes it for a subnet without
DHCP (or in the job, on the command line).

The clients start together (design.md 6; kvmtune.bench.syncstart): on an
NMI once every guest is ready (``signal``, the default) or at a common
``start_at`` (``at``). Results come back on the serial consoles, are verified
(byte count, sha256) and parsed. A guest that fails, is not ready in time
or times out is reported as such and kept out of the aggregate.
"""

from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence
import contextlib
import dataclasses
import os
import shutil
import signal
import subprocess
import tempfile
import time
from types import FrameType
from typing import Any
from typing import cast
import uuid

from kvmtune.bench import qemu
from kvmtune.bench import syncstart
from kvmtune.errors import InputError
from kvmtune import image
from kvmtune.results import row as rows
from kvmtune.results.row import Row
from kvmtune.results import verdict as verdicts
from kvmtune.workloads import console
from kvmtune.workloads import guestjob as jobs
from kvmtune.workloads import Workload

SCRATCH_DIR = '/var/tmp'   # O_DIRECT (cache=none) fails on tmpfs
# A ready client reports late by itself this long after the ready timeout
# (it was never signalled: this run died or left it out).
START_TIMEOUT_MARGIN = 60


@contextlib.contextmanager
def _unwind_on_sigterm_or_sigint() -> Iterator[None]:
    """SIGTERM unwinds like Ctrl-C, so guests and scratch files go too.

    Ctrl-C is made to work even where the parent ignored SIGINT (a job a
    non-interactive shell put in the background inherits SIG_IGN, and
    Python then never raises KeyboardInterrupt).
    """
    def handler(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt
    previous = {sig: signal.signal(sig, handler)
                for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _console_end(text: str) -> str:
    last = [line for line in text.replace('\r', '').splitlines()
            if line.strip()][-1:]
    return f'; console ends: {last[0][-120:]}' if last else ''


def _times(guest: qemu.Guest, text: str) -> dict[str, float | None]:
    """The guest's own times (uptime at ready and at its start) and the
    host's (seconds from its launch to its ready line seen, to its start
    signal sent); None where there is none."""
    said = console.timing(text, guest.instance_id)

    def since_launch(when: float | None) -> float | None:
        return (round(when - guest.started, 2)
                if when is not None and guest.started is not None else None)
    return {'ready_s': said.get('ready'), 'start_s': said.get('start'),
            'seen_ready_s': since_launch(guest.ready_seen),
            'signal_s': since_launch(guest.signalled)}


@dataclasses.dataclass(frozen=True)
class Measured:
    """One guest of a run: its Row (kvmtune.results.row, the one unit
    set) and what bench local alone knows of it: its index in the run and
    the host's time, from its launch, of its start signal."""

    vm: int
    row: Row
    signal_s: float | None = None

    def flat(self) -> dict[str, Any]:
        """The row ``bench local -o`` writes: the Row's columns (row.COLUMNS),
        ``vm`` and ``signal_s``."""
        return {'vm': self.vm, **self.row.flat(), 'signal_s': self.signal_s}


def _measured(guest: qemu.Guest, workload: Workload, accel: str
              ) -> Measured:
    """The guest's Row (``verdicts.console_row``, or late / error when it
    was never ready or never signalled) with its times (``_times``)."""
    text = guest.console_text()
    role = guest.role
    label = qemu.accel_label(accel)
    missed = guest.missed
    if missed is not None:
        # signal mode: not ready (a server: not serving) within the ready
        # timeout; a client then never got its start signal
        said = 'serving' if role == 'server' else 'ready'
        row = rows.failed(guest.instance_id, role, rows.LATE, (
            f'not {said} within {missed} s of launch'
            + ('' if role == 'server' else ': no start signal, not measured')
            + _console_end(text)), workload.name, label)
    elif guest.signal_error:
        row = rows.failed(guest.instance_id, role, rows.ERROR,
                          f'no start signal: {guest.signal_error}',
                          workload.name, label)
    else:
        row = verdicts.console_row(text, guest.instance_id, role,
                                   workload.name, accel == 'tcg',
                                   no_status=_no_status(guest, text),
                                   accel=label)
    times = _times(guest, text)
    row = dataclasses.replace(
        row.with_times(times['ready_s'], times['start_s'],
                       times['seen_ready_s']),
        seconds=(round(guest.ended - cast(float, guest.started), 1)
                 if guest.ended
                 else None))
    return Measured(guest.index, row, times['signal_s'])


def _no_status(guest: qemu.Guest, text: str) -> str:
    """Why a guest gave no final status: its timeout or QEMU's exit."""
    reported = console.status(text, guest.instance_id)
    if guest.ended is None:
        why = 'timed out'
        if guest.signalled:
            why += ' after its start signal'
        if reported:
            why += ' (it said ready)'
    else:
        proc = cast(subprocess.Popen[bytes], guest.proc)
        why = (f'QEMU exited {proc.returncode} without a status'
               + (f': {guest.qemu_error()}' if guest.qemu_error() else ''))
    return why + _console_end(text)


def _plan(workload: Workload, vms: int
          ) -> list[tuple[str, str | None, str | None]]:
    """[(role, address, peer)] per guest: disk guests alone; network
    guests in pairs, server then client, on 10.233.0.0/24."""
    if workload.target in ('disk', 'none'):
        return [('client', None, None)] * vms
    if vms < 2 or vms % 2:
        raise InputError('a network workload needs an even number of '
                         'guests (server, client pairs)', key='--vms',
                         fix=f'give --vms {max(2, vms + vms % 2)}')
    plan: list[tuple[str, str | None, str | None]] = []
    for pair in range(vms // 2):
        server = f'10.233.0.{2 * pair + 1}'
        plan += [('server', f'{server}/24', None),
                 ('client', f'10.233.0.{2 * pair + 2}/24', server)]
    return plan


def _check_net_image(image_dir: str, workload: Workload) -> None:
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


def pinned_cpus(index: int, vcpus: int,
                host_cpus: Sequence[int]) -> Sequence[int] | None:
    """The host CPUs guest ``index`` is pinned to: the next ``vcpus`` of
    ``host_cpus`` after the previous guests' (as Nova hands out dedicated
    CPUs); None when they run out (guests would share CPUs)."""
    first = index * vcpus
    if first + vcpus > len(host_cpus):
        return None
    return host_cpus[first:first + vcpus]


def check_start(start: str, delay: float | None = None,
                ready_wait: float | None = None) -> None:
    """InputError for an unknown start mode, or one given the other
    mode's option (``delay`` is ``at``'s, ``ready_wait`` ``signal``'s)."""
    if start not in syncstart.START_MODES:
        raise InputError(f'unknown start mode {start!r}', key='--start',
                         fix=f'one of {", ".join(syncstart.START_MODES)}')
    if start == 'signal' and delay is not None:
        raise InputError('a start delay is for --start at only',
                         key='--start-delay',
                         fix='add --start at, or drop --start-delay')
    if start == 'at' and ready_wait is not None:
        raise InputError('a ready timeout is for --start signal only',
                         key='--ready-timeout',
                         fix='drop --start at, or drop --ready-timeout')
    if ready_wait is not None and ready_wait <= 0:
        raise InputError('must be positive', key='--ready-timeout',
                         fix='give the seconds to wait for every guest '
                             '(leave it out for the default)')


def _job(workload: Workload, role: str, target: str | None,
         peer: str | None, address: str | None, runtime: int,
         params: dict[str, Any] | None, start_at: float | None,
         ready_wait: int | None) -> jobs.Job:
    """One guest's job: a client starts on an NMI when ``ready_wait`` is
    set (signal mode; it gives up by itself ``START_TIMEOUT_MARGIN`` s
    after that), else at ``start_at``; a server starts at once in either
    mode, as in the Rally network scenario."""
    on_signal = ready_wait is not None and role == 'client'
    return jobs.build(
        workload, role=role, target=target, peer=peer,
        start_at=None if on_signal else start_at, runtime=runtime,
        params=params, address=address,
        start='nmi' if on_signal else None,
        start_timeout=(cast(int, ready_wait) + START_TIMEOUT_MARGIN
                       if on_signal
                       else None))


@dataclasses.dataclass(frozen=True)
class Settings:
    """How one bench local run boots its guests (``kvmtune bench local``'s
    options).

    vms, vcpus, ram_mb  the guests, all alike
    disk_size, cache, fmt, bus, iothread
                        each guest's scratch data disk (``qemu.BUSES``;
                        iothread: the disk on its own I/O thread)
    hugepages           a hugetlbfs mount to back guest RAM, or None
    pin                 pin each guest to its own host CPUs (InputError
                        when the host has fewer than ``vms * vcpus``)
    accel, boot         QEMU's accelerator; how the guest boots
    job_via             ``config-drive`` or ``cmdline``
    runtime, params     the workload's (default: the workload's runtime)
    image_dir           the image of ``kvmtune image build``
    start               ``signal``: the clients start on an NMI once every
                        guest is ready (within ``ready_wait`` s of launch,
                        default ``ready_timeout``); ``at``: at launch +
                        ``delay`` s (default ``start_delay``)
    """
    vms: int = 1
    vcpus: int = 1
    ram_mb: int = 256
    disk_size: int | str = '256M'
    cache: str = 'none'
    fmt: str = 'raw'
    bus: str = 'virtio-blk'
    iothread: bool = True
    hugepages: str | None = None
    pin: bool = False
    accel: str = 'tcg'
    boot: str = 'kernel'
    job_via: str = 'config-drive'
    runtime: int | str | None = None
    params: dict[str, Any] | None = None
    image_dir: str | None = None
    start: str = 'signal'
    delay: float | None = None
    ready_wait: int | None = None


def run(workload: Workload, settings: Settings,
        log: Callable[[str], object] = print) -> list[Measured]:
    """Boot ``settings.vms`` guests at once, wait, and return each one
    Measured."""
    vms, vcpus, ram_mb = settings.vms, settings.vcpus, settings.ram_mb
    disk_size, cache, fmt = settings.disk_size, settings.cache, settings.fmt
    bus, iothread = settings.bus, settings.iothread
    hugepages, pin = settings.hugepages, settings.pin
    accel, boot, job_via = settings.accel, settings.boot, settings.job_via
    runtime, params = settings.runtime, settings.params
    image_dir, start = settings.image_dir, settings.start
    delay, ready_wait = settings.delay, settings.ready_wait
    check_start(start, delay, ready_wait)
    image_dir = image.image_dir(image_dir)
    qemu.check_image(image_dir)
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
    signalled = start == 'signal'
    if signalled:
        ready_wait = (syncstart.ready_timeout(accel, vms)
                      if ready_wait is None else int(ready_wait))
    else:
        delay = (syncstart.start_delay(accel, vms) if delay is None
                 else delay)
    workdir = tempfile.mkdtemp(prefix='kvmtune-bench-', dir=SCRATCH_DIR)
    # One multicast group per run: guests of other runs never meet.
    group = f'230.0.{os.getpid() % 250}.{int(time.time()) % 250}:' \
            f'{20000 + os.getpid() % 20000}'
    guests = []
    try:
        with _unwind_on_sigterm_or_sigint():
            start_at = (None if signalled
                        else int(time.time()) + cast(float, delay))
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
                the_job = _job(
                    workload, role, qemu.DATA_DISKS[bus] if data else None,
                    peer, address if on_cmdline else None, runtime, params,
                    start_at, ready_wait if signalled else None)
                cdrom = cmdline = None
                if on_cmdline:
                    boot = 'kernel'
                    cmdline = jobs.cmdline(the_job)
                else:
                    cdrom = os.path.join(guest.workdir, 'config-2.iso')
                    qemu.config_drive(
                        cdrom, guest.workdir, guest.instance_id,
                        jobs.encode(the_job),
                        network=(qemu.network_data(guest.instance_id,
                                                   cast(tuple[str, str],
                                                        nic)[1],
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
            label = qemu.accel_label(accel)
            clients = [g for g in guests if g.role == 'client']
            if signalled:
                log(f'{vms} guest(s) booting ({label}), start: signal '
                    f'(NMI) once all are ready (at most {ready_wait} s), '
                    f'runtime {runtime} s')
                syncstart.start_on_signal(guests, vms, runtime,
                                          cast(int, ready_wait), log, accel)
            else:
                log(f'{vms} guest(s) booting ({label}), start: at a '
                    f'common time in '
                    f'{cast(float, start_at) - int(time.time())} s, '
                    f'runtime {runtime} s')
                syncstart.wait_done(clients, cast(float, start_at) + runtime
                                    + syncstart.finish_wait(accel, vms),
                                    clock=time.time)
            for guest in guests:
                guest.poll()
            return [_measured(g, workload, accel) for g in guests]
    finally:
        for guest in guests:
            guest.stop()
        shutil.rmtree(workdir, ignore_errors=True)
