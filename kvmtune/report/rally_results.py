"""Read kvmtune scaling sweeps out of a Rally task result file.

Two formats are accepted: ``rally task report --json`` (a dict with
``tasks`` → ``subtasks`` → ``workloads`` → ``data``) and the older
``rally task results`` (a list of ``{"key": ..., "result": [...]}``).
"""

import collections
import dataclasses
import re

from kvmtune import inputs
from kvmtune.errors import InputError
from kvmtune.report import vmtable

SCENARIOS = ('KvmTune.disk_scaling', 'KvmTune.network_scaling')

# A step's time budget (issue 15): the scenarios' atomic actions summed per
# phase. boot: API calls to ACTIVE; ready: ACTIVE to every guest ready;
# workload: the start signal (or start_at's wait) to every verdict;
# collect: verifying and parsing; delete: servers and group gone.
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


def action_seconds(atomic_actions):
    """Seconds per atomic action name, in either Rally format; an action
    timed more than once in the iteration is summed."""
    out = {}
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


def budget(iteration):
    """{"wall", "boot", "ready", "workload", "collect", "delete",
    "slowest_ready"} seconds of one iteration: its wall time (duration plus
    idle waits), the phases, and the API-to-ready time of its slowest
    guest as the scenario saw it (host clock; None when the step did not
    wait for ready lines, start_mode "at")."""
    seconds = action_seconds(iteration.get('atomic_actions'))
    out = {'wall': (iteration.get('duration') or 0.0) +
           (iteration.get('idle_duration') or 0.0)}
    for phase, names in BUDGET:
        out[phase] = sum(seconds.get(n, 0.0) for n in names)
    rows = vmtable.rows_as_dicts(iteration.get('output')) or []
    seen = [r['seen_ready_s'] for r in vmtable.clients(rows)
            if r.get('seen_ready_s') is not None]
    out['slowest_ready'] = max(seen) if seen else None
    return out


@dataclasses.dataclass
class Sweep:
    """One flavor's run of one workload over several VM counts."""

    scenario: str
    flavor: str
    workload: str
    # VM count -> list of iterations, each a list of client row dicts
    points: dict = dataclasses.field(
        default_factory=lambda: collections.defaultdict(list))
    # one line per iteration that failed before leaving a table
    iteration_errors: list = dataclasses.field(default_factory=list)
    sla: list = dataclasses.field(default_factory=list)
    # (VM count, budget(iteration)) per iteration that left a table
    budgets: list = dataclasses.field(default_factory=list)

    @property
    def emulated(self):
        return any(r.get('emulated') for its in self.points.values()
                   for rows in its for r in rows)

    @property
    def failures(self):
        """(VM count, row) of every guest that returned no valid result."""
        return [(n, r) for n, its in sorted(self.points.items())
                for rows in its for r in rows if r['status'] != vmtable.OK]


def _name(value):
    """A flavor/image argument as the task wrote it ({"name": X} or X)."""
    if isinstance(value, dict):
        return str(value.get('name') or value.get('regex') or value)
    return str(value)


def _workloads_new(doc):
    for task in doc.get('tasks') or []:
        for subtask in task.get('subtasks') or []:
            for wl in subtask.get('workloads') or []:
                (name, args), = (wl.get('scenario') or {'?': {}}).items()
                yield (name, args or {}, wl.get('data') or [],
                       (wl.get('sla_results') or {}).get('sla') or [])


def _workloads_old(doc):
    for item in doc:
        key = item['key']
        yield (key['name'], (key.get('kw') or {}).get('args') or {},
               item.get('result') or [], item.get('sla') or [])


def _error_line(error):
    # Rally stores [type, message, traceback]; messages may span lines
    text = ': '.join(str(e) for e in (error or [])[:2]) or 'unknown error'
    return ' '.join(text.split())


def workloads(doc, source='<input>'):
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


def sweeps_from(doc, source='<input>'):
    """Sweeps found in a parsed Rally result document, in task order."""
    sweeps = []
    try:
        for name, args, data, sla in workloads(doc, source):
            if name not in SCENARIOS:
                continue
            sweep = Sweep(name, _name(args.get('flavor')),
                          str(args.get('workload')), sla=sla)
            for it in data:
                rows = vmtable.rows_as_dicts(it.get('output'))
                if rows is None:
                    sweep.iteration_errors.append(_error_line(it['error']))
                    continue
                cl = vmtable.clients(_checked(rows, source))
                sweep.points[len(cl)].append(cl)
                sweep.budgets.append((len(cl), budget(it)))
            sweeps.append(sweep)
    except (KeyError, TypeError, ValueError, AttributeError,
            IndexError) as exc:
        raise InputError(f'malformed Rally task result ({exc!r})'[:200],
                         source=source,
                         fix='pass the JSON file Rally wrote for the task') \
            from None
    if not sweeps:
        raise InputError('holds no KvmTune scaling workload',
                         source=source,
                         fix='run rally_scenarios/tasks/*.yaml first')
    return sweeps


# Figures of a row: finite and not negative (a NaN once gave "R² 1.000").
_FIGURES = tuple(key for key, _ in vmtable.THROUGHPUT) + (
    'lat_mean_us', 'lat_p99_us', 'lat_max_us')


def _checked(rows, source):
    """``rows`` when every row is a mapping with a status and every figure
    is a finite, non-negative number or null; InputError otherwise."""
    for index, row in enumerate(rows):
        where = f'row {index + 1}'
        if not isinstance(row, dict) or not isinstance(row.get('status'),
                                                       str):
            raise InputError(f'a per-VM row without a status ({where})',
                             source=source,
                             fix='pass the JSON file Rally wrote for the '
                             'task, unedited')
        for key in _FIGURES:
            if row.get(key) is not None:
                inputs.number(row[key], source=source, key=f'{where}.{key}',
                              fix='pass the JSON file Rally wrote for the '
                              'task, unedited')
    return rows


def read(path):
    """The parsed JSON of a Rally result file (kvmtune.inputs: regular
    file, bounded nesting, no NaN or Infinity)."""
    return inputs.load_json(path, max_bytes=1 << 30)


def load(path):
    """Sweeps from a Rally result file; InputError when it is not one."""
    return sweeps_from(read(path), source=path)
