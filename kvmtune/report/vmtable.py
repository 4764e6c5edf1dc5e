"""The per-VM result table a scaling iteration leaves in Rally's output.

The Rally scenarios write one row per guest into a "complete" Table chart;
the SLA plugin and ``kvmtune report`` read the same rows back. This module
is that contract, kept free of Rally imports so the report runs anywhere.
"""

TITLE = 'kvmtune per-VM results'

# Column order of the table; values are plain JSON types.
COLUMNS = ('instance', 'role', 'status', 'reason', 'workload', 'tool',
           'iops', 'bw_MiB_s', 'lat_mean_us', 'lat_p99_us', 'gbit_s', 'tps',
           'events_s', 'lat_max_us', 'emulated', 'ready_s', 'start_s',
           'seen_ready_s')
# The last three (issue 15): the guest's uptime when it was ready and when
# its tool started (its own clock), and the seconds from the batch's first
# create call until the scenario first saw it ready (the host's clock).
TIMES = COLUMNS[-3:]

OK = 'ok'
# Statuses other than OK: the guest printed `late` or `error <reason>`, or
# its console held no (valid) result before the timeout.
LATE = 'late'
ERROR = 'error'
INVALID = 'invalid'
NO_RESULT = 'no-result'

# (column, unit label) by preference: the first one a row has is the
# workload's throughput figure.
THROUGHPUT = (('iops', 'IOPS'), ('events_s', 'events/s'),
              ('gbit_s', 'Gbit/s'), ('tps', 'transactions/s'),
              ('bw_MiB_s', 'MiB/s'))


def _round(value, digits=3):
    return None if value is None else round(float(value), digits)


def _row(*values):
    return dict(zip(COLUMNS, values + (None,) * (len(COLUMNS) - len(values))))


def with_times(row, ready_s=None, start_s=None, seen_ready_s=None):
    """``row`` with its TIMES columns set (seconds, or None: not said)."""
    return dict(row, ready_s=_round(ready_s, 2), start_s=_round(start_s, 2),
                seen_ready_s=_round(seen_ready_s, 2))


def ok_row(instance, role, result):
    """A row for a guest whose result was verified and parsed.

    :param result: the shape kvmtune.workloads.parsers.parse() returns
    """
    lat = result.get('lat_ns') or {}
    bw = result.get('bw_bytes_s')
    return _row(
        instance, role, OK, '', result.get('workload'), result.get('tool'),
        _round(result.get('iops')),
        _round(bw / 1048576.0) if bw is not None else None,
        _round(lat['mean'] / 1000.0) if lat.get('mean') is not None else None,
        _round(lat['p99'] / 1000.0) if lat.get('p99') is not None else None,
        _round(result.get('gbit_s'), 4), _round(result.get('tps')),
        _round(result.get('events_s')),
        _round(result['lat_max_ns'] / 1000.0)
        if result.get('lat_max_ns') is not None else None,
        bool(result.get('emulated')))


def failed_row(instance, role, status, reason, workload=None):
    """A row for a guest with no usable result, saying why."""
    return _row(instance, role, status, reason, workload, None, None, None,
                None, None, None, None, None, None, None)


def table_output(rows, emulated):
    """The complete-output chart holding ``rows`` (dicts by COLUMNS)."""
    label = ' (emulated: QEMU TCG, not KVM speed)' if emulated else ''
    return {'title': TITLE, 'chart_plugin': 'Table',
            'description': 'One row per guest; status other than ok is '
                           'excluded from every average' + label,
            'data': {'cols': list(COLUMNS),
                     'rows': [[r.get(c) for c in COLUMNS] for r in rows]}}


def rows_as_dicts(output):
    """Rows of the kvmtune table in an iteration's ``output``, as dicts.

    Returns None when the iteration has no such table (it failed before
    booting guests, or it is not a kvmtune iteration).
    """
    for chart in (output or {}).get('complete', []):
        if chart.get('title') != TITLE:
            continue
        data = chart.get('data') or {}
        cols = data.get('cols') or []
        return [dict(zip(cols, row)) for row in data.get('rows') or []]
    return None


def throughput_key(rows):
    """The (column, unit) of the figure these rows measure, or None."""
    for key, unit in THROUGHPUT:
        if any(r.get(key) is not None for r in rows if r['status'] == OK):
            return key, unit
    return None


def clients(rows):
    """Rows of the measuring guests (a network server only serves)."""
    return [r for r in rows if r.get('role') != 'server']
