"""Benchmark jobs for guests and their verdicts read from console logs.

Glue between a scaling scenario and the guest protocol (design.md §6):
the job a guest gets as user_data, and the per-VM table row made from the
guest's serial console once it printed its KVMTUNE-STATUS line.
"""

from kvmtune.report import vmtable

# Verdicts a measuring guest ends with ("serving" is a server's interim).
FINAL = ('ok', 'late', 'error')


def job(workload, start_at, runtime, target=None, role='client', peer=None,
        hold=False, params=None, ports=None, start=None):
    """The user_data of one guest (design.md §6), with the command line
    the image runs; InputError for an unknown workload or bad params."""
    from kvmtune import workloads
    from kvmtune.workloads import job as jobs

    return jobs.encode(jobs.build(
        workloads.get(workload), role=role, target=target, peer=peer,
        start_at=start_at, runtime=runtime, hold=hold, params=params,
        ports=ports, start=start))


def client_ports(workload, clients, params=None):
    """The port each client of one server guest uses (see
    ``kvmtune.workloads.commands.client_ports``)."""
    from kvmtune import workloads
    from kvmtune.workloads import commands

    return commands.client_ports(workloads.get(workload), clients, params)


def start_at(now, vms, margin, margin_per_vm):
    """A common start late enough for every guest to have booted.

    Guests boot at different times and the job is fixed before any boots,
    so the start is now plus an estimate: a base margin (API, scheduling,
    one boot) and more per concurrent guest (they share the host's CPUs).
    """
    return int(now + margin + margin_per_vm * vms)


def ready(console_text, instance_id):
    """True once the guest said it is ready (a server: serving) or gave its
    verdict: nothing more will come before its start signal."""
    from kvmtune.workloads import console

    seen = console.status(console_text or '', instance_id)
    return bool(seen) and seen[0] in FINAL + ('ready', 'serving')


def timing(console_text, instance_id):
    """The guest's own times (``console.timing``): ready / start uptime."""
    from kvmtune.workloads import console

    return console.timing(console_text or '', instance_id)


def status(console_text, instance_id):
    """(status, reason) once the guest printed its verdict, else None."""
    from kvmtune.workloads import console

    seen = console.status(console_text or '', instance_id)
    return seen if seen and seen[0] in FINAL else None


def row(console_text, instance_id, role, workload, emulated,
        seen_ready_s=None):
    """The vmtable row of a guest (``verdict``) with the times it said on
    its console and ``seen_ready_s``, the host's (vmtable.TIMES)."""
    said = timing(console_text, instance_id)
    return vmtable.with_times(
        verdict(console_text, instance_id, role, workload, emulated),
        said.get('ready'), said.get('start'), seen_ready_s)


def verdict(console_text, instance_id, role, workload, emulated):
    """The vmtable row of a guest from its console log
    (kvmtune.results.verdict.read, the one reading of a console).

    A guest whose console Nova could not give (``console_text`` None) is
    `no-result` with that reason.
    """
    from kvmtune.results import verdict as verdicts

    if console_text is None:
        return vmtable.failed_row(
            instance_id, role, vmtable.NO_RESULT,
            'Nova gave no console log (the guest stopped before its verdict '
            'was read)', workload)
    seen = verdicts.read(console_text, instance_id, role, workload,
                         emulated)
    if seen.status == verdicts.OK:
        return vmtable.ok_row(instance_id, role, seen.result)
    return vmtable.failed_row(instance_id, role, seen.status, seen.reason,
                              workload)
