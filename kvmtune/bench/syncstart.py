"""How bench local's clients start together (design.md 6).

``signal`` (the default): each client says ``ready`` on its console (a
server starts at once and says ``serving``), and once every guest has,
each client gets an NMI through its QEMU's QMP socket, back to back, as
the Rally scenarios do through Nova's trigger_crash_dump. ``at``: the old
common ``start_at``, launch + a boot allowance. Either way the run then
waits for the clients' verdicts on their serial consoles.
"""

from collections.abc import Callable
from collections.abc import Sequence
import time
from typing import cast

from kvmtune.bench import qemu
from kvmtune.errors import KvmtuneError
from kvmtune.workloads import console

# Seconds from launch to start_at: boot (kernel reaches /init in ~5 s
# under TCG, ~17 s to a result) plus the cost of booting guests at once.
# A 2-core host busy with other work booted one TCG guest in up to 45 s
# (guests then reported `late`): the allowance leaves room for that.
BOOT_ALLOWANCE = {'tcg': (60, 20), 'kvm': (10, 2)}
# Seconds a signalled (or started) client may take past its runtime to
# say its verdict: (base, per guest). Under TCG the run's tail (the
# tool's exit, the result's write, the power-off) is emulated too and
# slows with every other guest and job on the host: two guests beside the
# functional tier's fake round once needed more than 30 + 10 per guest
# (one said ok at the deadline, the other was cut off). Waiting longer
# costs nothing when all finish in time, as READY_TIMEOUT below.
FINISH_ALLOWANCE = {'tcg': (90, 30), 'kvm': (30, 10)}
# How clients start: on an NMI once all are ready, or at start_at.
START_MODES = ('signal', 'at')
# signal: seconds from launch for every guest to say ready, a ceiling
# only (the run goes on when the last one is ready); twice and more the
# allowance start_at needs, since waiting longer costs nothing when all
# boot in time.
READY_TIMEOUT = {'tcg': (180, 40), 'kvm': (60, 5)}
READY_POLL = 0.2


def start_delay(accel: str, vms: int) -> int:
    base, per_vm = BOOT_ALLOWANCE[accel]
    return base + per_vm * (vms - 1)


def finish_wait(accel: str, vms: int) -> int:
    """Seconds past the runtime that ``vms`` started clients may take to
    finish (FINISH_ALLOWANCE)."""
    base, per_vm = FINISH_ALLOWANCE[accel]
    return base + per_vm * vms


def ready_timeout(accel: str, vms: int) -> int:
    base, per_vm = READY_TIMEOUT[accel]
    return base + per_vm * (vms - 1)


def _said(guest: qemu.Guest) -> str | None:
    """The state of the guest's last status line, or None."""
    reported = console.status(guest.console_text(), guest.instance_id)
    return reported[0] if reported else None


def _done(guest: qemu.Guest) -> bool:
    if guest.poll() is not None:
        return True
    return _said(guest) in ('ok', 'late', 'error')


def _wait_ready(guests: Sequence[qemu.Guest], deadline: float,
                clock: Callable[[], float] = time.monotonic,
                sleep: Callable[[float], None] = time.sleep
                ) -> list[qemu.Guest]:
    """Wait until every guest said ready (a server: serving), gave its
    verdict or exited, or until ``deadline`` (``clock`` time). Sets each
    one's ``ready_seen`` (``clock`` time); returns those never ready."""
    pending = list(guests)
    while pending:
        for guest in list(pending):
            if guest.poll() is not None or _said(guest) is not None:
                guest.ready_seen = clock()
                pending.remove(guest)
        if not pending or clock() >= deadline:
            break
        sleep(READY_POLL)
    return pending


def _signal(clients: Sequence[qemu.Guest],
            clock: Callable[[], float] = time.monotonic
            ) -> list[qemu.Guest]:
    """The start signal: an NMI into each client through QMP. All sessions
    are opened first, then the NMIs go back to back. Sets ``signalled``
    (``clock`` time) or ``signal_error``; returns the clients signalled."""
    sessions = []
    try:
        for guest in clients:
            try:
                sessions.append((guest, guest.qmp()))
            except KvmtuneError as exc:
                guest.signal_error = exc.line()
        for guest, session in sessions:
            try:
                guest.inject_nmi(session)
                guest.signalled = clock()
            except KvmtuneError as exc:
                guest.signal_error = exc.line()
    finally:
        for _, session in sessions:
            session.close()
    return [g for g in clients if g.signalled]


def wait_done(clients: Sequence[qemu.Guest], deadline: float,
              clock: Callable[[], float] = time.monotonic,
              sleep: Callable[[float], None] = time.sleep,
              poll: float = 0.5) -> None:
    """Until every client exited or printed its verdict (a held guest
    stays up after it; servers serve until stopped), or ``deadline``."""
    while clock() < deadline:
        if all(_done(g) for g in clients):
            break
        sleep(poll)


def start_on_signal(guests: Sequence[qemu.Guest], vms: int, runtime: int,
                    ready_wait: int, log: Callable[[str], object],
                    accel: str) -> None:
    """Signal mode after launch: all ready, the ready clients signalled,
    their verdicts waited for (from the last signal: runtime + margin)."""
    launched = min(cast(float, g.started) for g in guests)
    missing = _wait_ready(guests, launched + ready_wait)
    for guest in missing:
        guest.missed = ready_wait
    go = [g for g in guests if g.role == 'client' and g not in missing
          and g.poll() is None and _said(g) == 'ready']
    sent = _signal(go)
    if missing:
        log(f'{len(missing)} guest(s) not ready within {ready_wait} s: '
            'left out')
    if not sent:
        log('no client got the start signal (see the rows)')
        return
    signals = [cast(float, g.signalled) for g in sent]
    last_ready = max(cast(float, g.ready_seen) for g in guests
                     if g not in missing)
    log(f'ready {last_ready - launched:.1f} s after launch; start signal '
        f'(NMI) to {len(sent)} client(s) within '
        f'{(max(signals) - min(signals)) * 1000:.0f} ms')
    wait_done(sent, max(signals) + runtime + finish_wait(accel, vms))
