"""Benchmark jobs for guests and their verdicts read from console logs.

Glue between a scaling scenario and the guest protocol (design.md §6):
the job a guest gets as user_data, and the per-VM table row made from the
guest's serial console once it printed its KVMTUNE-STATUS line.
"""

import json
import re

from kvmtune.errors import KvmtuneError
from kvmtune.report import vmtable

_STATUS = re.compile(
    r'^KVMTUNE-STATUS (?P<id>\S+) (?P<status>ok|late|error)(?: (?P<why>.*))?$',
    re.MULTILINE)


def job(workload, start_at, runtime, target=None, role='client', peer=None,
        hold=False, params=None):
    """The user_data JSON of one guest (design.md §6)."""
    return json.dumps({'workload': workload, 'target': target, 'peer': peer,
                       'role': role, 'start_at': int(start_at),
                       'runtime': int(runtime), 'hold': bool(hold),
                       'params': params or {}}, sort_keys=True)


def start_at(now, vms, margin, margin_per_vm):
    """A common start late enough for every guest to have booted.

    Guests boot at different times and the job is fixed before any boots,
    so the start is now plus an estimate: a base margin (API, scheduling,
    one boot) and more per concurrent guest (they share the host's CPUs).
    """
    return int(now + margin + margin_per_vm * vms)


def status(console_text, instance_id):
    """(status, reason) of the guest's KVMTUNE-STATUS line, or None."""
    found = None
    for m in _STATUS.finditer(console_text or ''):
        if m.group('id') == instance_id:
            found = (m.group('status'), (m.group('why') or '').strip())
    return found


def row(console_text, instance_id, role, workload):
    """The vmtable row of a guest from its console log.

    A guest that printed no status is `no-result`; `late` and `error` keep
    the guest's own reason; an `ok` guest whose result frame fails
    verification or parsing is `invalid` with the checker's reason.
    """
    seen = status(console_text, instance_id)
    if seen is None:
        return vmtable.failed_row(
            instance_id, role, vmtable.NO_RESULT,
            'no KVMTUNE-STATUS line on the console before the timeout',
            workload)
    state, why = seen
    if state == 'late':
        return vmtable.failed_row(
            instance_id, role, vmtable.LATE,
            why or 'ready after start_at: did not run', workload)
    if state == 'error':
        return vmtable.failed_row(instance_id, role, vmtable.ERROR,
                                  why or 'guest reported an error', workload)
    from kvmtune.workloads import console
    from kvmtune.workloads import parsers

    try:
        payloads = console.extract(console_text, instance_id)
        results = [parsers.parse(p['tool'], p['raw']) for p in payloads
                   if p.get('workload', workload) == workload]
    except KvmtuneError as exc:
        return vmtable.failed_row(instance_id, role, vmtable.INVALID,
                                  exc.line(), workload)
    if not results:
        return vmtable.failed_row(
            instance_id, role, vmtable.INVALID,
            f'status ok but no {workload} result frame', workload)
    result = dict(results[-1])
    result.setdefault('workload', workload)
    return vmtable.ok_row(instance_id, role, result)
