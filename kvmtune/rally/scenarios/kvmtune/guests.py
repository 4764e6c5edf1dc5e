"""Benchmark jobs for guests and their verdicts read from console logs.

Glue between a scaling scenario and the guest protocol (design.md §6):
the job a guest gets as user_data, and the guest's Row
(kvmtune.results.row) read from its serial console once it printed its
KVMTUNE-STATUS line.
"""

from typing import Any

from kvmtune.results.row import Row

# Verdicts a measuring guest ends with ("serving" is a server's interim).
FINAL = ('ok', 'late', 'error')
NO_CONSOLE = ('Nova gave no console log (the guest stopped before its '
              'verdict was read)')


def job(workload: str, start_at: float | None, runtime: int,
        target: str | None = None, role: str = 'client',
        peer: str | None = None, hold: bool = False,
        params: dict[str, Any] | None = None,
        ports: list[int] | None = None, start: str | None = None) -> str:
    """The user_data of one guest (design.md §6), with the command line
    the image runs; InputError for an unknown workload or bad params."""
    from kvmtune import workloads
    from kvmtune.workloads import guestjob as jobs

    return jobs.encode(jobs.build(
        workloads.get(workload), role=role, target=target, peer=peer,
        start_at=start_at, runtime=runtime, hold=hold, params=params,
        ports=ports, start=start))


def client_ports(workload: str, clients: int,
                 params: dict[str, Any] | None = None) -> list[int]:
    """The port each client of one server guest uses (see
    ``kvmtune.workloads.commands.client_ports``)."""
    from kvmtune import workloads
    from kvmtune.workloads import commands

    return commands.client_ports(workloads.get(workload), clients, params)


def start_at(now: float, vms: int, margin: float,
             margin_per_vm: float) -> int:
    """A common start late enough for every guest to have booted.

    Guests boot at different times and the job is fixed before any boots,
    so the start is now plus an estimate: a base margin (API, scheduling,
    one boot) and more per concurrent guest (they share the host's CPUs).
    """
    return int(now + margin + margin_per_vm * vms)


def ready(console_text: str | None, instance_id: str) -> bool:
    """True once the guest said it is ready (a server: serving) or gave its
    verdict: nothing more will come before its start signal."""
    from kvmtune.workloads import console

    seen = console.status(console_text or '', instance_id)
    return bool(seen) and seen[0] in FINAL + ('ready', 'serving')


def timing(console_text: str | None,
           instance_id: str) -> dict[str, float]:
    """The guest's own times (``console.timing``): ready / start uptime."""
    from kvmtune.workloads import console

    return console.timing(console_text or '', instance_id)


def status(console_text: str | None,
           instance_id: str) -> tuple[str, str] | None:
    """(status, reason) once the guest printed its verdict, else None."""
    from kvmtune.workloads import console

    seen = console.status(console_text or '', instance_id)
    return seen if seen and seen[0] in FINAL else None


def row(console_text: str | None, instance_id: str, role: str,
        workload: str, emulated: bool,
        seen_ready_s: float | None = None) -> Row:
    """The Row of a guest from its console log
    (kvmtune.results.verdict.console_row, the one reading of a console)
    with the times it said there and ``seen_ready_s``, the host's.

    A guest whose console Nova could not give (``console_text`` None) is
    `no-result` with that reason (NO_CONSOLE).
    """
    from kvmtune.results import verdict as verdicts

    said = timing(console_text, instance_id)
    return verdicts.console_row(
        console_text, instance_id, role, workload, emulated,
        no_status=NO_CONSOLE if console_text is None else None).with_times(
        ready_s=said.get('ready'), start_s=said.get('start'),
        seen_ready_s=seen_ready_s)
