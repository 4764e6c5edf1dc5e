"""One guest's verdict from its console (doc/design.md 6 and 9.4).

A measuring guest ends with ``KVMTUNE-STATUS <id> ok|late|error [why]``
and, when ok, a result frame (kvmtune.workloads.console). ``read()``
turns that into a Verdict:

  ok         the frame verified and parsed: ``result`` holds the figures
             (kvmtune.workloads.parsers.parse's shape, labelled emulated
             when the task or the guest itself says TCG)
  late       ready after the common start: it did not run
  error      the guest reported an error (its reason kept)
  invalid    ok, but no frame for the workload, or a frame that fails
             verification or parsing (the checker's reason)
  no-result  no final status before the caller gave up (the caller's
             reason when it knows more: a timeout, QEMU's exit)
  server     a network server guest that served (it measures nothing)

A status other than ok is excluded from every average. ``console_row()``
is the same reading as a Row (kvmtune.results.row), the one shape every
caller keeps: the Rally scenarios (kvmtune.rally.scenarios.kvmtune.guests),
bench local and bench nested each call it.
"""

import dataclasses
from typing import Any

from kvmtune.errors import KvmtuneError
from kvmtune.results import row as rows

# What a measuring guest's last status line may say when it is done.
FINAL = (rows.OK, rows.LATE, rows.ERROR)


@dataclasses.dataclass(frozen=True)
class Verdict:
    status: str
    reason: str = ''
    result: dict[str, Any] | None = None
    sha256: str | None = None

    def __post_init__(self) -> None:
        if self.status not in rows.STATUSES:
            raise ValueError(f'status {self.status!r} not in {rows.STATUSES}')


def read(console_text: str | None, instance_id: str, role: str,
         workload: str, emulated: bool,
         no_status: str | None = None) -> Verdict:
    """The Verdict of one guest from its console text.

    :param workload: the workload's name: only its frames count
    :param emulated: the caller knows the guest ran under TCG; a guest
        that says accel=tcg on its console is labelled emulated anyway
    :param no_status: the caller's reason when there is no final status
        (else one from the console: said ready but no verdict, or nothing)
    """
    from kvmtune.workloads import console
    from kvmtune.workloads import parsers

    text = console_text or ''
    said = console.status(text, instance_id)
    if role == 'server' and said and said[0] in ('serving', rows.OK):
        return Verdict(rows.SERVER)
    if said is None or said[0] not in FINAL:
        if no_status:
            return Verdict(rows.NO_RESULT, no_status)
        if said is not None:
            return Verdict(rows.NO_RESULT, (
                'ready but gave no verdict before the timeout: never joined '
                'the common start (ready after the batch started, or no '
                'start signal reached it)'))
        return Verdict(rows.NO_RESULT, 'no KVMTUNE-STATUS line on the '
                                       'console before the timeout')
    state, why = said
    if state == rows.LATE:
        return Verdict(rows.LATE, why or 'ready after start_at: did not run')
    if state == rows.ERROR:
        return Verdict(rows.ERROR, why or 'guest reported an error')
    emulated = console.emulated(text, instance_id, emulated)
    try:
        mine = [p for p in console.extract(text, instance_id)
                if p['workload'] == workload]
        if not mine:
            return Verdict(rows.INVALID, f'status ok but no {workload} '
                                         'result frame')
        result = dict(parsers.parse(mine[-1]['tool'], mine[-1]['raw'],
                                    workload=workload, emulated=emulated))
    except KvmtuneError as exc:
        return Verdict(rows.INVALID, exc.line())
    result.setdefault('workload', workload)
    return Verdict(rows.OK, '', result, mine[-1].get('sha256'))


def console_row(console_text: str | None, instance_id: str, role: str,
                workload: str, emulated: bool, no_status: str | None = None,
                accel: str | None = None) -> rows.Row:
    """The Row of one guest from its console (``read``): its figures when
    ok, else its status and reason. ``console_text`` None (the caller
    could not read the console) is `no-result` with ``no_status``."""
    if console_text is None:
        return rows.failed(instance_id, role, rows.NO_RESULT,
                           no_status or 'no console log to read', workload,
                           accel)
    seen = read(console_text, instance_id, role, workload, emulated,
                no_status)
    if seen.status == rows.OK and seen.result is not None:
        return rows.from_result(instance_id, role, seen.result, accel,
                                workload)
    return rows.failed(instance_id, role, seen.status, seen.reason,
                       workload, accel)
