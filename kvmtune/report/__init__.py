"""Scaling report of Rally sweeps: tables, degradation fit, PNG and HTML.

Rally's scenarios (rally_scenarios/) leave one row per guest in each
iteration's output (kvmtune.report.vmtable); this package reads them back
from a Rally result file and turns them into figures per flavor and
workload.
"""

from kvmtune.errors import InputError
from kvmtune.report import rally_results
from kvmtune.report import render
from kvmtune.report import scaling

# vmtable column -> (key in a parsed result, scale to that column's unit)
_BASELINE_KEYS = {'iops': ('iops', 1.0), 'gbit_s': ('gbit_s', 1.0),
                  'tps': ('tps', 1.0), 'events_s': ('events_s', 1.0),
                  'bw_MiB_s': ('bw_bytes_s', 1.0 / 1048576.0)}


def _results_of(baseline):
    """Parsed results (design.md §6 shape) held by a loaded baseline."""
    if isinstance(baseline, list):
        return baseline
    if isinstance(baseline, dict) and isinstance(baseline.get('results'),
                                                 list):
        return baseline['results']
    if isinstance(baseline, dict) and isinstance(baseline.get('result'),
                                                 dict):
        return [dict(baseline['result'],
                     workload=baseline.get('workload')
                     or baseline['result'].get('workload'))]
    return [baseline] if isinstance(baseline, dict) else []


def bare_metal_figure(baseline, workload, metric, source):
    """The baseline's figure for ``workload`` in the column ``metric``."""
    if metric is None:
        return None
    key, scale = _BASELINE_KEYS[metric]
    from kvmtune import inputs

    for result in _results_of(baseline):
        if result.get('workload') == workload and result.get(key) is not None:
            figure = inputs.number(result[key], source=source, key=key,
                                   fix='record it again with `kvmtune '
                                   'baseline`')
            if figure == 0:
                raise InputError(f'the bare-metal {key} is 0: no share of '
                                 'it can be given', source=source, key=key,
                                 fix='record it again with `kvmtune '
                                 'baseline`')
            return figure * scale
    raise InputError(f'no {key} figure for workload {workload}',
                     source=source,
                     fix=f'record one with `kvmtune baseline` for {workload}')


def load_baseline(path):
    from kvmtune.bench import baseline

    return baseline.load(path)


def analyse(results_path, baseline_path=None):
    """[(sweep, scaling)] for every KvmTune workload in a result file."""
    sweeps = rally_results.load(results_path)
    baseline = load_baseline(baseline_path) if baseline_path else None
    analysed = []
    for sweep in sweeps:
        first = scaling.analyse(sweep)
        bare = None
        if baseline is not None:
            bare = bare_metal_figure(baseline, sweep.workload, first.metric,
                                     baseline_path)
        analysed.append((sweep, scaling.analyse(sweep, bare)))
    return analysed


def write_atomic(path, data):
    """Write bytes to ``path`` with kvmtune.fileio (a device, FIFO or
    directory is refused); False when it already holds them."""
    from kvmtune import fileio
    from kvmtune import inputs

    _, old = fileio.resolve(path)
    if old is not None:
        try:
            if inputs.read_bytes(path, max_bytes=len(data)) == data:
                return False
        except InputError:
            pass            # unreadable or bigger: it differs
    fileio.write_atomic(path, data)
    return True


__all__ = ['analyse', 'render', 'write_atomic']
