"""One guest's result: the Row (doc/design.md 9.4).

A Row is what every source says of one guest (a Rally scenario's table, a
``kvmtune bench local --json`` row, a ``kvmtune bench nested`` level, the
bare host of a baseline) in one unit set, the parsers' (design.md 6):

  iops          I/O operations per second
  bw_bytes_s    bytes per second
  gbit_s        Gbit/s (network)
  tps           transactions per second (request/response)
  events_s      events per second (sysbench)
  lat_ns        nanoseconds: mean, p50, p95, p99 and max (sysbench's)
  cpu_pct       percent of one CPU
  ready_s start_s seen_ready_s seconds   seconds

A figure the tool did not give is None. Nothing converts a figure on the
way to the report: the renderer alone prints MiB/s and microseconds.

``COLUMNS`` is the Row flattened (``lat_mean_ns`` ... ``lat_max_ns``): the
shape of Rally's per-VM Table chart and of the JSON files.
``from_flat`` also reads the per-VM tables Rally runs before this model
wrote (``bw_MiB_s``, ``lat_mean_us``, ``lat_p99_us``, ``lat_max_us``),
converting them once, on reading.
"""

import dataclasses
import math
from typing import Any
from typing import Mapping

from kvmtune.errors import InputError

OK = 'ok'
LATE = 'late'
ERROR = 'error'
INVALID = 'invalid'
NO_RESULT = 'no-result'
SERVER = 'server'
STATUSES = (OK, LATE, ERROR, INVALID, NO_RESULT, SERVER)

THROUGHPUT = ('iops', 'bw_bytes_s', 'gbit_s', 'tps', 'events_s')
LATENCY = ('mean', 'p50', 'p95', 'p99', 'max')
TIMES = ('ready_s', 'start_s', 'seen_ready_s', 'seconds')
COLUMNS = (('instance', 'role', 'status', 'reason', 'workload', 'tool',
            'accel', 'emulated') + THROUGHPUT +
           tuple(f'lat_{k}_ns' for k in LATENCY) + ('cpu_pct',) + TIMES)
# The columns of the per-VM table before this model (kvmtune <= round 2):
# old column -> (Row column, factor to the one unit set)
LEGACY = {'bw_MiB_s': ('bw_bytes_s', 1048576.0),
          'lat_mean_us': ('lat_mean_ns', 1000.0),
          'lat_p99_us': ('lat_p99_ns', 1000.0),
          'lat_max_us': ('lat_max_ns', 1000.0)}
FIGURES = THROUGHPUT + tuple(f'lat_{k}_ns' for k in LATENCY) + (
    'cpu_pct',)


@dataclasses.dataclass(frozen=True)
class Latency:
    """Nanoseconds; None where the tool gives none."""

    mean: float | None = None
    p50: float | None = None
    p95: float | None = None
    p99: float | None = None
    max: float | None = None


@dataclasses.dataclass(frozen=True)
class Row:
    instance: str | None
    role: str = 'client'
    status: str = OK
    reason: str = ''
    workload: str | None = None
    tool: str | None = None
    accel: str | None = None
    emulated: bool = False
    iops: float | None = None
    bw_bytes_s: float | None = None
    gbit_s: float | None = None
    tps: float | None = None
    events_s: float | None = None
    lat_ns: Latency = Latency()
    cpu_pct: float | None = None
    ready_s: float | None = None
    start_s: float | None = None
    seen_ready_s: float | None = None
    seconds: float | None = None

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f'status {self.status!r} not in {STATUSES}')

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def measuring(self) -> bool:
        """A guest that measures (a network server only serves)."""
        return self.role != 'server' and self.status != SERVER

    def figure(self, key: str) -> float | None:
        """A figure by its column name (``iops``, ``lat_p99_ns``, ...)."""
        if key.startswith('lat_') and key.endswith('_ns'):
            value: Any = getattr(self.lat_ns, key[4:-3])
        else:
            value = getattr(self, key)
        return value if value is None else float(value)

    def flat(self) -> dict[str, Any]:
        """The Row by COLUMNS (plain JSON types)."""
        out = {k: getattr(self, k) for k in COLUMNS
               if not k.startswith('lat_')}
        out.update({f'lat_{k}_ns': getattr(self.lat_ns, k)
                    for k in LATENCY})
        return {k: out[k] for k in COLUMNS}

    def with_times(self, ready_s: float | None = None,
                   start_s: float | None = None,
                   seen_ready_s: float | None = None) -> 'Row':
        """This Row with its guest and host times (seconds, rounded to
        0.01; None: not said)."""
        def rounded(value: float | None) -> float | None:
            return None if value is None else round(float(value), 2)

        return dataclasses.replace(self, ready_s=rounded(ready_s),
                                   start_s=rounded(start_s),
                                   seen_ready_s=rounded(seen_ready_s))


def from_result(instance: str | None, role: str,
                result: Mapping[str, Any], accel: str | None = None,
                workload: str | None = None) -> Row:
    """The ok Row of a verified, parsed result (the parsers' shape,
    kvmtune.workloads.parsers, or a baseline's ``result``)."""
    lat = result.get('lat_ns') or {}
    return Row(
        instance, role, OK, '', result.get('workload') or workload,
        result.get('tool'), accel, bool(result.get('emulated')),
        **{k: result.get(k) for k in THROUGHPUT},
        lat_ns=Latency(lat.get('mean'), lat.get('p50'), lat.get('p95'),
                       lat.get('p99'), result.get('lat_max_ns')),
        cpu_pct=result.get('cpu_pct'))


def failed(instance: str | None, role: str, status: str, reason: str,
           workload: str | None = None, accel: str | None = None) -> Row:
    """A Row of a guest with no usable result, saying why."""
    return Row(instance, role, status, reason, workload, accel=accel)


def _figure(value: Any, source: str, key: str) -> float | None:
    """None, or a finite figure that is not negative (a figure written as
    text is not one: kvmtune and Rally write numbers)."""
    if value is None:
        return None
    from kvmtune import inputs

    fix = 'give the file kvmtune or Rally wrote, unedited'
    if isinstance(value, str):
        raise InputError(f'{value[:40]!r} is not a number', source=source,
                         key=key, fix=fix)
    return inputs.number(value, source=source, key=key, fix=fix)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def from_flat(data: Any, source: str = '<input>',
              where: str = 'row') -> Row:
    """A Row from its flat shape (COLUMNS, or the legacy columns);
    InputError naming the first key that is not of the shape."""
    if not isinstance(data, dict) or not isinstance(data.get('status'),
                                                    str):
        raise InputError(f'a per-VM row without a status ({where})',
                         source=source,
                         fix='give the file kvmtune or Rally wrote, '
                             'unedited')
    if data['status'] not in STATUSES:
        raise InputError(f'unknown status {data["status"]!r} ({where})',
                         source=source, key=f'{where}.status',
                         fix=f'one of {", ".join(STATUSES)}')
    values: dict[str, Any] = {}
    for key in FIGURES:
        values[key] = _figure(data.get(key), source, f'{where}.{key}')
    for old, (key, factor) in LEGACY.items():
        figure = _figure(data.get(old), source, f'{where}.{old}')
        if figure is not None and values[key] is None:
            # finite in the file, and still beyond a float once in the
            # one unit set (1e305 MiB/s is 1e311 bytes/s): refused like
            # the infinity it would become (tests/unit/test_jsonout.py)
            values[key] = figure * factor
            if not math.isfinite(values[key]):
                raise InputError(
                    f'{figure:g} is beyond any real measurement: it '
                    f'overflows once converted to {key}', source=source,
                    key=f'{where}.{old}',
                    fix='give the file kvmtune or Rally wrote, unedited')
    times = {k: _figure(data.get(k), source, f'{where}.{k}') for k in TIMES}
    return Row(
        _text(data.get('instance')), str(data.get('role') or 'client'),
        data['status'], str(data.get('reason') or ''),
        _text(data.get('workload')), _text(data.get('tool')),
        _text(data.get('accel')), bool(data.get('emulated')),
        **{k: values[k] for k in THROUGHPUT},
        lat_ns=Latency(*(values[f'lat_{k}_ns'] for k in LATENCY)),
        cpu_pct=values['cpu_pct'], **times)
