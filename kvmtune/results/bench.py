"""The files of ``kvmtune bench local -o`` and ``kvmtune bench nested -o``:
their shape as written (``local_doc``, ``compare_doc``, ``nested_doc``)
and their Runs as read (``runs_of``), in one place (doc/design.md 9.4).

bench local (kind ``kvmtune-bench-local``): one Run of ``vms`` guests.
Its rows are Rows (row.COLUMNS, one unit set; schema 2); the files of
schema 1 held each guest's parsed ``result`` and are read the same,
converted once on reading (``row_of``).
A ``--compare`` (kind ``kvmtune-bench-compare``): one Run per column
that ran, and the bare host when the file holds a baseline.
bench nested (kind ``kvmtune-bench-nested``): one Run per guest level
(L1, L2) at one VM, the host level as the bare host.
"""

import os
from typing import Any
from typing import Mapping
from typing import Sequence

from kvmtune.errors import InputError
from kvmtune.results import baseline
from kvmtune.results import kinds
from kvmtune.results import records
from kvmtune.results import row as rows
from kvmtune.results.row import Row
from kvmtune.results.run import Run

# bench local and --compare: every guest's row in the Row columns
# (kvmtune.results.row); schema 1 held each one's parsed result, still read
LOCAL_SCHEMA = 2
NESTED_SCHEMA = 1


def local_doc(workload: str, vms: int, accel: str,
              settings: Mapping[str, Any], flat_rows: Sequence[Any],
              record: Mapping[str, Any]) -> dict[str, Any]:
    """The document of one bench local run (each guest's ``flat()``)."""
    return {'schema': LOCAL_SCHEMA, 'kind': kinds.FILE_BENCH_LOCAL,
            'workload': workload, 'vms': vms, 'accel': accel,
            'emulated': accel == 'tcg',
            'settings': settings, 'rows': list(flat_rows),
            'record': record}


def compare_doc(workload: str, vms: int, accel: str,
                columns: Sequence[Any], bare: Mapping[str, Any] | None,
                record: Mapping[str, Any]) -> dict[str, Any]:
    """The document of a bench local --compare (each column's ``doc()``;
    ``bare`` the bare host's baseline document or None)."""
    return {'schema': LOCAL_SCHEMA, 'kind': kinds.FILE_BENCH_COMPARE,
            'workload': workload, 'vms': vms, 'accel': accel,
            'emulated': accel == 'tcg',
            'runs': list(columns), 'baseline': bare, 'record': record}


def nested_doc(workload: str, runtime: int | str | None,
               params: Mapping[str, Any] | None, vcpus: int, ram_mb: int,
               accel: str, why: str, cpu: str, image_dir: str,
               wall_s: float, levels: Sequence[Any]) -> dict[str, Any]:
    """The document of a bench nested run (one entry per level run)."""
    return {'kind': kinds.FILE_BENCH_NESTED, 'schema': NESTED_SCHEMA,
            'workload': workload, 'runtime': runtime,
            'params': dict(params or {}), 'vcpus': vcpus, 'ram_mb': ram_mb,
            'accel': accel, 'accel_why': why,
            'l1_cpu': cpu if accel == 'tcg' else 'host',
            'emulated': accel == 'tcg', 'image_dir': image_dir,
            'wall_s': wall_s, 'runs': list(levels)}


def label_of(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def row_of(item: Mapping[str, Any], source: str, where: str) -> Row:
    """The Row of one bench local row: its Row columns (row.COLUMNS, and
    ``vm``, ``signal_s``), or the shape bench local wrote before
    (``vm``, ``instance_id``, ``role``, ``status``, ``reason``,
    ``result``, ``accel`` and times), converted once, here."""
    if not isinstance(item, Mapping) or 'result' not in item:
        return rows.from_flat(item, source, where)
    instance = item.get('instance_id') or f'VM {item.get("vm")}'
    role = str(item.get('role') or 'client')
    result = item.get('result')
    if item.get('status') == rows.OK and isinstance(result, dict):
        made = rows.from_result(instance, role, result, item.get('accel'))
    else:
        made = rows.failed(instance, role, str(item.get('status')),
                           str(item.get('reason') or ''),
                           accel=item.get('accel'))
    flat = dict(made.flat(), **{k: item.get(k) for k in rows.TIMES})
    return rows.from_flat(flat, source, where)      # every figure checked


def guest_run(label: str, source: str, record: dict[str, Any] | None,
              guests: Sequence[Row]) -> Run:
    """The Run of one bench local run's guests (servers left out)."""
    measuring = [g for g in guests if g.measuring]
    return Run(label, source, kinds.BENCH_LOCAL,
               records.validate(record, source),
               {len(measuring): [measuring]} if measuring else {})


def local_run(doc: Mapping[str, Any], source: str, label: str,
              record: dict[str, Any] | None) -> Run:
    """The Run of one bench local run (its rows; servers left out)."""
    return guest_run(label, source, record, [
        row_of(item, source, f'rows[{i}]')
        for i, item in enumerate(doc.get('rows') or [])
        if item.get('status') != rows.SERVER])


def _compare_runs(doc: Mapping[str, Any], source: str) -> list[Run]:
    runs = []
    for item in doc.get('runs') or []:
        if item.get('skipped'):
            continue
        record = dict(doc.get('record') or {},
                      settings=item.get('settings'))
        runs.append(local_run(dict(item, emulated=doc.get('emulated')),
                              source, item.get('label') or '?', record))
    if isinstance(doc.get('baseline'), dict):
        runs.append(baseline.run_of(doc['baseline'], source))
    if not runs:
        raise InputError('holds no run with a result', source=source,
                         fix='every run of the comparison was skipped: '
                             'see its lines, then run again')
    return runs


def _nested_record(doc: Mapping[str, Any], level: str) -> records.Record:
    host = level == 'host'
    return {'kind': kinds.BENCH_NESTED,
            'accel': 'bare' if host else str(doc.get('accel')),
            'emulated': bool(doc.get('emulated')) and not host,
            'settings': {'level': level},
            'workload': {'name': doc.get('workload'),
                         'params': dict(doc.get('params') or {}),
                         'runtime': doc.get('runtime')}}


def _nested_runs(doc: Mapping[str, Any], source: str,
                 many: bool) -> list[Run]:
    runs = []
    for i, item in enumerate(doc.get('runs') or []):
        level = str(item.get('level'))
        guest = rows.from_flat(item.get('row'), source, f'runs[{i}].row')
        host = level == 'host'
        label = 'bare host' if host else level
        runs.append(Run(
            f'{label_of(source)}:{label}' if many else label, source,
            kinds.BASELINE if host else kinds.BENCH_NESTED,
            _nested_record(doc, level), {1: [[guest]]}))
    if not runs:
        raise InputError('holds no level that ran', source=source,
                         fix='run kvmtune bench nested again')
    return runs


def runs_of(doc: Any, source: str, many: bool = False) -> list[Run]:
    """The Runs of a parsed bench local, compare or nested document."""
    kind = doc.get('kind') if isinstance(doc, dict) else None
    if kind == kinds.FILE_BENCH_LOCAL:
        return [local_run(doc, source, label_of(source),
                          doc.get('record'))]
    if kind == kinds.FILE_BENCH_COMPARE:
        return _compare_runs(doc, source)
    if kind == kinds.FILE_BENCH_NESTED:
        return _nested_runs(doc, source, many)
    raise InputError(f'not a bench result (kind {kind!r})', source=source,
                     fix='pass bench local --json or bench nested -o JSON')
