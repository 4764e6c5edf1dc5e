"""The rollout's events: what the kvmtune.fleet collection's callback
plugin (plugins/callback/events.py, ``kvmtune.fleet.events``) writes,
one JSON object a line, and ``kvmtune rollout`` reads instead of
Ansible's screen output.

An event is a batch starting (``{"event": "batch", "batch": N}``), one
host's step done (``{"event": "step", "host": H, "step": S, "status":
ok|changed|skipped|failed|unreachable, "batch": N}``, a failed step with
the failed task's ``result`` (rc, msg, stdout, stderr) and ``line``, the
last line its command printed) or the run's end (``{"event": "end",
"hosts": {H: Ansible's counts}}``). The step names are the step table's
(kvmtune.rollout.vocabulary). doc/design.md ("The rollout's contract")
holds the schema.
"""

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
import dataclasses
import json
import time
from typing import Any

from kvmtune.rollout import vocabulary

STATUSES = ('skipped', 'ok', 'changed', 'failed', 'unreachable')


@dataclasses.dataclass
class Event:
    kind: str                   # batch, step or end
    host: str = ''
    step: str = ''
    status: str = ''
    batch: int = 0
    result: dict[str, Any] = dataclasses.field(default_factory=dict)
    line: str = ''

    @property
    def failed(self) -> bool:
        return self.status in ('failed', 'unreachable')


def parse(text: str) -> Event | None:
    """The Event of one line of the events file (None: not an event of
    this contract, as a line cut short by a killed run)."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    if not isinstance(doc, dict) or doc.get('event') not in (
            'batch', 'step', 'end'):
        return None
    if doc['event'] == 'step' and (
            doc.get('step') not in vocabulary.NAMES
            or doc.get('status') not in STATUSES
            or not isinstance(doc.get('host'), str)):
        return None
    result = doc.get('result')
    return Event(kind=doc['event'], host=str(doc.get('host') or ''),
                 step=str(doc.get('step') or ''),
                 status=str(doc.get('status') or ''),
                 batch=int(doc.get('batch') or 0),
                 result=result if isinstance(result, dict) else {},
                 line=str(doc.get('line') or ''))


def read(lines: Iterable[str]) -> Iterator[Event]:
    """The events of ``lines`` (an events file's), in order."""
    for text in lines:
        found = parse(text)
        if found is not None:
            yield found


def follow(path: str, running: Callable[[], bool],
           interval: float = 0.2) -> Iterator[Event]:
    """The events of the file ``path`` as they are written, while
    ``running()`` (the ansible-playbook writing it runs), then the rest."""
    pending = ''
    with open(path, encoding='utf-8', errors='replace') as source:
        while True:
            alive = running()
            chunk = source.read()
            pending += chunk
            *whole, pending = pending.split('\n')
            yield from read(whole)
            if not alive:
                if pending:
                    yield from read([pending])
                return
            if not chunk:
                time.sleep(interval)


def failure(event: Event) -> tuple[str, str | None]:
    """(what went wrong, its fix) of a failed step's event: the first
    check that did not pass of ``kvmtune verify -f json`` (its standard
    output), else the line the step's command printed last (kvmtune's one
    line, with its fix), else Ansible's message."""
    result = event.result
    try:
        doc = json.loads(result.get('stdout') or '')
    except (ValueError, TypeError):
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get('checks'), list):
        bad = [c for c in doc['checks'] if isinstance(c, dict)
               and c.get('status') != 'PASS']
        if bad:
            first = bad[0]
            if first.get('status') == 'DRIFT':
                what = (f"{first.get('layer')} {first.get('name')}: "
                        f"expected {first.get('expected')}, live "
                        f"{first.get('live')}")
                fix = first.get('fix') or 'apply the plan again'
            else:
                what = (f"{first.get('layer')} {first.get('name')}: "
                        f"unknown ({first.get('reason')})")
                fix = 'make the check possible (see the reason)'
            more = f' (and {len(bad) - 1} more)' if len(bad) > 1 else ''
            return what + more, fix
    line = event.line
    if line:
        text, _, fix = line.partition(' (fix: ')
        return (text, fix[:-1]) if fix.endswith(')') else (line, None)
    return str(result.get('msg') or 'failed'), None
