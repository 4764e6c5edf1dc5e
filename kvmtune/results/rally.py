"""Rally: the per-VM Table chart the scenarios write, and the reader of a
Rally task result file (doc/design.md 9.4).

The scenarios (kvmtune/rally/) put one Row per measuring guest into a
"complete" Table chart (``table_output``), in the Row's flat columns and
its one unit set; the SLA plugin and ``kvmtune report`` read them back
(``rows_of``). Tables Rally runs wrote before this model (``bw_MiB_s``,
``lat_*_us``) are read too (kvmtune.results.row.from_flat).

A result file is ``rally task report --json`` (a dict with ``tasks`` →
``subtasks`` → ``workloads`` → ``data``) or the older ``rally task
results`` (a list of ``{"key": ..., "result": [...]}``): one Run per
KvmTune scaling workload (one flavor's sweep). No Rally import here.
"""

import collections
import os
import re
from typing import Any
from typing import Iterator
from typing import Sequence

from kvmtune.errors import InputError
from kvmtune import inputs
from kvmtune.results import kinds
from kvmtune.results import records
from kvmtune.results import row as rows
from kvmtune.results.row import Row
from kvmtune.results.run import Run
from kvmtune.results import units

TITLE = 'kvmtune per-VM results'
SCENARIOS = ('KvmTune.disk_scaling', 'KvmTune.network_scaling')
FIX = 'pass the JSON file Rally wrote for the task, unedited'

# A step's time budget (tests/unit/results/test_rally.py): the scenarios'
# atomic actions summed per phase. boot: API calls to ACTIVE; ready: ACTIVE to
# every guest ready; workload: the start signal (or start_at's wait) to every
# verdict; collect: verifying and parsing; delete: servers and group gone.
BUDGET = (('boot', ('kvmtune.create_servers', 'kvmtune.wait_active',
                    'nova.create_server_group')),
          ('ready', ('kvmtune.wait_ready',)),
          ('workload', ('kvmtune.start', 'kvmtune.wait_results')),
          ('collect', ('kvmtune.collect',)),
          ('delete', ('kvmtune.delete_servers',)))

# Rally's old format keys an action timed again in one iteration as
# "name (2)", "name (3)" (rally/plugins/task/exporters/old_json_results.py
# _to_old_atomic_actions_format); the network scenario creates and waits
# for its server and then its clients.
_REPEAT = re.compile(r' \((\d+)\)$')


def table_output(guests: Sequence[Row], emulated: bool) -> dict[str, Any]:
    """The complete-output chart holding ``guests`` (Row.flat columns)."""
    label = f' ({units.EMULATED})' if emulated else ''
    return {'title': TITLE, 'chart_plugin': 'Table',
            'description': 'One row per guest (bytes/s, ns, s); status '
                           'other than ok is excluded from every average'
                           + label,
            'data': {'cols': list(rows.COLUMNS),
                     'rows': [[g.flat()[c] for c in rows.COLUMNS]
                              for g in guests]}}


def rows_of(output: Any, source: str = '<input>') -> list[Row] | None:
    """The Rows of the kvmtune table in an iteration's ``output``; None
    when it has none (it failed before booting guests, or it is not a
    kvmtune iteration). InputError for a row not of the shape."""
    for chart in (output or {}).get('complete', []):
        if chart.get('title') != TITLE:
            continue
        data = chart.get('data') or {}
        cols = data.get('cols') or []
        return [rows.from_flat(
                    dict(zip(cols, r)) if isinstance(r, list) else r,
                    source, f'row {i + 1}')
                for i, r in enumerate(data.get('rows') or [])]
    return None


def action_seconds(atomic_actions: Any) -> dict[str, float]:
    """Seconds per atomic action name, in either Rally format; an action
    timed more than once in the iteration is summed."""
    out: dict[str, float] = {}
    if isinstance(atomic_actions, dict):    # old: {name: duration}
        for key, value in atomic_actions.items():
            name = _REPEAT.sub('', key)
            out[name] = out.get(name, 0.0) + (value or 0.0)
        return out
    for action in atomic_actions or ():
        if action.get('finished_at') is not None:
            out[action['name']] = out.get(action['name'], 0.0) + (
                action['finished_at'] - action['started_at'])
    return out


def budget(iteration: dict[str, Any],
           guests: Sequence[Row] = ()) -> dict[str, float | None]:
    """{"wall", "boot", "ready", "workload", "collect", "delete",
    "slowest_ready"} seconds of one iteration: its wall time (duration plus
    idle waits), the phases, and the API-to-ready time of its slowest
    guest as the scenario saw it (host clock; None when the step did not
    wait for ready lines, start_mode "at")."""
    seconds = action_seconds(iteration.get('atomic_actions'))
    out: dict[str, float | None] = {
        'wall': (iteration.get('duration') or 0.0) +
        (iteration.get('idle_duration') or 0.0)}
    for phase, names in BUDGET:
        out[phase] = sum(seconds.get(n, 0.0) for n in names)
    seen = [r.seen_ready_s for r in guests if r.seen_ready_s is not None]
    out['slowest_ready'] = max(seen) if seen else None
    return out


def name_of(value: Any) -> str:
    """A flavor/image argument as the task wrote it ({"name": X} or X)."""
    if isinstance(value, dict):
        return str(value.get('name') or value.get('regex') or value)
    return str(value)


Workload = tuple[str, dict[str, Any], list[Any], list[Any]]


def _workloads_new(doc: dict[str, Any]) -> Iterator[Workload]:
    for task in doc.get('tasks') or []:
        for subtask in task.get('subtasks') or []:
            for wl in subtask.get('workloads') or []:
                (name, args), = (wl.get('scenario') or {'?': {}}).items()
                yield (name, args or {}, wl.get('data') or [],
                       (wl.get('sla_results') or {}).get('sla') or [])


def _workloads_old(doc: list[Any]) -> Iterator[Workload]:
    for item in doc:
        key = item['key']
        yield (key['name'], (key.get('kw') or {}).get('args') or {},
               item.get('result') or [], item.get('sla') or [])


def workloads(doc: Any, source: str = '<input>') -> Iterator[Workload]:
    """(scenario name, args, iterations, SLA results) of every workload."""
    if isinstance(doc, dict) and 'tasks' in doc:
        return _workloads_new(doc)
    if isinstance(doc, list) and all(
            isinstance(i, dict) and 'key' in i for i in doc):
        return _workloads_old(doc)
    raise InputError(
        'not a Rally task result (neither `rally task report --json` '
        'nor `rally task results` output)', source=source,
        fix='pass the JSON file Rally wrote for the task')


def _error_line(error: Any) -> str:
    # Rally stores [type, message, traceback]; messages may span lines
    text = ': '.join(str(e) for e in (error or [])[:2]) or 'unknown error'
    return ' '.join(text.split())


def measuring(guests: Sequence[Row]) -> list[Row]:
    """The Rows of the measuring guests (a network server only serves)."""
    return [r for r in guests if r.measuring]


def _label(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def runs_from(doc: Any, source: str = '<input>',
              many: bool = False) -> list[Run]:
    """One Run per KvmTune sweep in a parsed Rally result, task order.

    :param many: label runs ``FILE:FLAVOR`` even when the file holds one
        sweep (the report compares several files)
    """
    started = None
    if isinstance(doc, dict):
        tasks = doc.get('tasks') or [{}]
        started = tasks[0].get('created_at')
    found = []
    try:
        for name, args, data, _ in workloads(doc, source):
            if name not in SCENARIOS:
                continue
            flavor = name_of(args.get('flavor'))
            points: dict[int, list[list[Row]]] = collections.defaultdict(
                list)
            errors, budgets = [], []
            for it in data:
                got = rows_of(it.get('output'), source)
                if got is None:
                    errors.append(_error_line(it['error']))
                    continue
                cl = measuring(got)
                points[len(cl)].append(cl)
                budgets.append((len(cl), budget(it, cl)))
            record = records.from_rally(args, started)
            said = {r.workload for its in points.values() for guests in its
                    for r in guests if r.workload}
            if 'workload' not in args and len(said) == 1:
                # a task that left the scenario's default: its guests say
                # which (an argument given as null stays null: refused)
                record['workload']['name'] = said.pop()
            found.append(Run('', source, kinds.RALLY,
                             records.validate(record, source),
                             dict(points), errors, budgets, name, flavor))
    except (KeyError, TypeError, ValueError, AttributeError,
            IndexError) as exc:
        raise InputError(f'malformed Rally task result ({exc!r})'[:200],
                         source=source, fix=FIX) from None
    if not found:
        raise InputError('holds no KvmTune scaling workload',
                         source=source,
                         fix='run kvmtune/rally/tasks/*.yaml first')
    for run in found:
        run.label = f'{_label(source)}:{run.flavor}' \
            if many or len(found) > 1 else _label(source)
    return found


def read(path: str) -> Any:
    """The parsed JSON of a Rally result file (kvmtune.inputs: regular
    file, bounded nesting, no NaN or Infinity)."""
    return inputs.load_json(path, max_bytes=1 << 30)


def load(path: str, many: bool = False) -> list[Run]:
    """The Runs of a Rally result file; InputError when it is not one."""
    return runs_from(read(path), source=path, many=many)
