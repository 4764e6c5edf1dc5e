"""The baseline file (``kvmtune baseline``): its shape and its Run.

File shape (JSON, schema 1)::

    {"schema": 1, "kind": "kvmtune-baseline",
     "time": "2026-...Z",
     "workload": "fio-randread-4k", "params": {}, "runtime": 10,
     "target": "/var/tmp/...", "scratch": true,
     "peer": null, "command": ["fio", ...],
     "emulated": false, "result": {<kvmtune.workloads.parsers shape>},
     "facts": {<kvmtune.facts.gather()>},
     "record": {<kvmtune.results.records shape>}}

kvmtune.bench.baseline measures and writes it; this module checks it and
reads it as the bare host's Run (one Row at one "VM").
"""

import math
from typing import Any
from typing import NoReturn

from kvmtune.errors import InputError
from kvmtune.results import kinds
from kvmtune.results import records
from kvmtune.results import row as rows
from kvmtune.results.run import Run

SCHEMA = 1
RESULT_KEYS = ('tool', 'workload', 'iops', 'bw_bytes_s', 'lat_ns',
               'gbit_s', 'tps', 'cpu_pct', 'emulated')
LAT_KEYS = ('mean', 'p50', 'p95', 'p99')
LABEL = 'bare host'


def _number_or_none(value: Any) -> bool:
    """None, or a finite figure that is not negative (a NaN, inf or
    negative baseline made every share of bare metal meaningless)."""
    return value is None or (isinstance(value, (int, float)) and
                             not isinstance(value, bool) and
                             math.isfinite(value) and value >= 0)


def validate(doc: Any, source: str) -> dict[str, Any]:
    """``doc`` when it is a baseline; else InputError naming the first
    key that breaks the shape."""
    def bad(key: str | None, problem: str,
            fix: str = 'make it again with kvmtune baseline') -> NoReturn:
        raise InputError(problem, source=source, key=key, fix=fix)

    if not isinstance(doc, dict):
        bad(None, 'not a JSON object')
    if doc.get('kind') != kinds.FILE_BASELINE:
        bad('kind', f'not a kvmtune baseline (kind {doc.get("kind")!r})')
    if doc.get('schema') != SCHEMA:
        bad('schema', f'unsupported schema {doc.get("schema")!r}')
    for key in ('workload', 'time'):
        if not isinstance(doc.get(key), str):
            bad(key, 'missing or not a string')
    if doc.get('emulated') is not False:
        bad('emulated', 'a baseline is measured on the bare host: must be '
            'false')
    result = doc.get('result')
    if not isinstance(result, dict):
        bad('result', 'missing or not an object')
    for key in RESULT_KEYS:
        if key not in result:
            bad(f'result.{key}', 'missing')
    for key in ('iops', 'bw_bytes_s', 'gbit_s', 'tps', 'cpu_pct'):
        if not _number_or_none(result[key]):
            bad(f'result.{key}', 'not a finite, non-negative number')
    if not isinstance(result['lat_ns'], dict) or not all(
            _number_or_none(result['lat_ns'].get(k)) for k in LAT_KEYS):
        bad('result.lat_ns', 'not an object of numbers (mean p50 p95 p99)')
    if not _number_or_none(result.get('events_s')):
        bad('result.events_s', 'not a number')
    if not _number_or_none(result.get('lat_max_ns')):
        bad('result.lat_max_ns', 'not a number')
    if all(result.get(k) is None for k in ('iops', 'bw_bytes_s', 'gbit_s',
                                           'tps', 'events_s')):
        bad('result', 'holds no measured figure')
    if doc.get('facts') is not None and not isinstance(doc['facts'], dict):
        bad('facts', 'not an object')
    return doc


def run_of(doc: Any, source: str, label: str = LABEL) -> Run:
    """The bare host's Run of a baseline document (checked first)."""
    validate(doc, source)
    result = dict(doc['result'], emulated=False)
    row = rows.from_result('bare host', 'client', result, 'bare',
                           doc['workload'])
    return Run(label, source, kinds.BASELINE,
               records.validate(doc.get('record'), source), {1: [[row]]})


def load(path: str) -> Run:
    """The bare host's Run of a baseline file."""
    from kvmtune import inputs

    return run_of(inputs.load_json(path), path)
