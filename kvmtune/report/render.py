"""The one renderer of an Analysis, its text and tables: what every
format prints (doc/design.md 9.4). kvmtune.report.plot draws the PNG and
kvmtune.report.page makes the self-contained HTML page of these tables
and that plot.

One VM count for every guest run (bench local, bench nested): a step
table, metrics down and runs across, the bare host last. Several VM
counts (Rally sweeps, merged local runs): one row per run at each count,
then the runs' linear fits side by side, and each Rally step's time
budget. Throughput prints in the Analysis' unit (MiB/s for bytes/s),
latency in microseconds. Figures measured under QEMU TCG are labelled
"emulated" in every title and page: they show the mechanics of a run,
never KVM's speed.
"""

from typing import Sequence

from kvmtune.results.analysis import Analysis
from kvmtune.results.analysis import Point
from kvmtune.results.records import Record
from kvmtune.results.row import OK
from kvmtune.results.row import Row
from kvmtune.results.row import SERVER
from kvmtune.results.run import Run
from kvmtune.results.units import EMULATED
from kvmtune.results.units import UNITS
from kvmtune.results.units import US_PER_NS

Table = tuple[list[str], list[list[str]]]


def _num(value: float | None, scale: float = 1.0) -> str:
    if value is None:
        return '-'
    value *= scale
    if abs(value) >= 100:
        return f'{value:,.0f}'
    return f'{value:,.1f}' if abs(value) >= 1 else f'{value:.4g}'


def _us(value: float | None) -> str:
    return _num(value, US_PER_NS)


def number(value: float | None, scale: float = 1.0) -> str:
    """A figure as every table prints it (``value * scale``)."""
    return _num(value, scale)


def figure(key: str, value: float | None) -> str:
    """A Row figure (by its column) as printed, in its unit
    (kvmtune.results.units.UNITS)."""
    return _num(value, UNITS[key][1])


def pct(value: float | None) -> str:
    """A change (0.25) as printed (+25.0%)."""
    return _pct(value)


def _pct(value: float | None) -> str:
    return '-' if value is None else f'{value * 100:+.1f}%'


def _share(value: float | None) -> str:
    return '-' if value is None else f'{value * 100:.1f}%'


def _vs_one(p: Point) -> str:
    return _pct(None if p.vs_one is None else p.vs_one - 1.0)


def grid(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    out = []
    for row in [header, *rows]:
        out.append('  '.join([str(row[0]).ljust(widths[0])] + [
            str(c).rjust(w) for c, w in zip(row[1:], widths[1:])]))
    return out


def title(an: Analysis) -> str:
    what = an.workload or 'results'
    text = f'comparison of {len(an.guests)} run(s), {what}'
    return f'{text} ({EMULATED})' if an.emulated else text


def step_rows(an: Analysis) -> Table:
    """Header and rows of the step table: metrics down, runs across."""
    ref_label, _ = an.reference()
    unit, tail = an.unit or 'throughput', an.tail or 'p99'
    header = ['', *[r.label for r in an.guests]] + (
        ['bare host'] if an.bare else [])
    pts = [an.points[r.label][0] for r in an.guests]
    bare = [an.bare] if an.bare else []
    s = an.scale
    rows = [
        [f'per-VM {unit}', *[_num(p.per_vm, s) for p in pts + bare]],
        [f'aggregate {unit}', *[_num(p.aggregate, s) for p in pts],
         *(['-'] if bare else [])],
        [f'change vs {ref_label}' if ref_label else 'change',
         *[_pct(p.change) for p in pts + bare]],
        ['share of bare host', *[_share(p.share) for p in pts],
         *(['100.0%'] if bare else [])],
        ['lat mean (us)', *[_us(p.lat_mean_ns) for p in pts + bare]],
        [f'lat {tail}, worst guest (us)',
         *[_us(p.lat_tail_ns) for p in pts + bare]],
        ['valid guests', *[f'{p.valid}/{p.total}' for p in pts + bare]],
    ]
    return header, rows


def vm_rows(an: Analysis) -> Table:
    """Header and rows by VM count: one row per run at each count."""
    unit, tail, s = an.unit or 'throughput', an.tail or 'p99', an.scale
    header = ['VMs', 'run', f'per-VM {unit}', f'aggregate {unit}',
              'change vs first valid run', 'change vs 1 VM',
              'share of bare host', 'lat mean us', f'lat {tail} us',
              'valid']
    counts = sorted({p.vms for r in an.guests for p in an.points[r.label]})
    rows = []
    for n in counts:
        for run in an.guests:
            p = next((p for p in an.points[run.label] if p.vms == n), None)
            if p is None:
                continue
            rows.append([str(n), run.label, _num(p.per_vm, s),
                         _num(p.aggregate, s), _pct(p.change), _vs_one(p),
                         _share(p.share), _us(p.lat_mean_ns),
                         _us(p.lat_tail_ns), f'{p.valid}/{p.total}'])
    if an.bare:
        b = an.bare
        rows.append(['-', 'bare host', _num(b.per_vm, s), '-', '-', '-',
                     '100.0%', _us(b.lat_mean_ns), _us(b.lat_tail_ns),
                     f'{b.valid}/{b.total}'])
    return header, rows


def fit_rows(an: Analysis) -> Table:
    """The runs' linear fits of the per-VM figure, side by side."""
    s = an.scale
    header = ['run', 'per-VM at N=0', 'slope per added VM', 'slope % of 1 VM',
              'R²', 'linear (R² >= 0.9)', 'VM counts']
    rows = []
    for run in an.guests:
        fit = an.fits[run.label]
        one = next((p.per_vm for p in an.points[run.label] if p.vms == 1),
                   None)
        if fit.slope is None or fit.intercept is None:
            rows.append([run.label, '-', '-', '-', '-', '-',
                         str(fit.points)])
            continue
        rows.append([run.label, _num(fit.intercept, s), _num(fit.slope, s),
                     _pct(fit.slope / one) if one else '-',
                     f'{fit.r2:.3f}' if fit.r2 is not None else '-',
                     ('yes' if fit.linear else 'no') if fit.r2 is not None
                     else '-', str(fit.points)])
    return header, rows


def fit_lines(an: Analysis) -> list[str]:
    unit = an.unit or 'throughput'
    return [f'linear fits of per-VM {unit} = a + b x N (R² from three VM '
            'counts on):'] + grid(*fit_rows(an))


def _settings(record: Record | None) -> list[str]:
    settings = (record or {}).get('settings') or {}
    profile = (record or {}).get('profile')
    parts = [f'{k}={v}' for k, v in sorted(settings.items())]
    if profile:
        parts.insert(0, f'profile={profile}')
    return parts


def source_lines(an: Analysis) -> list[str]:
    """Where each run came from, and the settings that tell them apart."""
    out = []
    settings = [_settings(r.record) for r in an.guests]
    common = set.intersection(*map(set, settings)) if settings else set()
    if common:
        out.append(f'  every run: {" ".join(sorted(common))}')
    for run in an.runs:
        own = [s for s in _settings(run.record) if s not in common]
        out.append(f'  {run.label}: {run.source}'
                   + (f' [{" ".join(own)}]' if own and not run.bare
                      else ''))
    return out


def budget_lines(run: Run) -> list[str]:
    """A Rally sweep's step time budget (seconds, host clock)."""
    if not run.budgets:
        return []
    lines = [f'{run.label}: step time budget, s (wall = boot + ready + '
             'workload + collect + delete + Rally\'s own; slowest ready = '
             'API to the last guest ready):']
    for vms, b in run.budgets:
        slowest = b['slowest_ready']
        lines.append(
            f'  {vms} VMs: wall {b["wall"]:.1f}: boot {b["boot"]:.1f}, '
            f'ready {b["ready"]:.1f}, workload {b["workload"]:.1f}, '
            f'collect {b["collect"]:.1f}, delete {b["delete"]:.1f}; '
            'slowest ready ' + (f'{slowest:.1f}' if slowest is not None
                                else '-'))
    return lines


def failure_lines(an: Analysis) -> list[str]:
    bad = [(r.label, f) for r in an.runs for f in r.failures]
    if not bad:
        return []
    return ['guests without a valid result (not averaged):'] + [
        f'  {label}: {f}' for label, f in bad]


GUEST_FIGURES = ('iops', 'events_s', 'bw_bytes_s', 'gbit_s', 'tps',
                 'lat_mean_ns')


def guest_rows(an: Analysis, guests: Sequence[Row]) -> Table:
    """One run's guests (``guests``: every one booted, servers too), one
    row each, and the run's aggregate (``all``) from its Point: the
    throughput figures summed over the valid guests, latency the mean of
    their means and the worst guest's tail, CPU their mean."""
    tail = 'lat_max_ns' if an.tail == 'max' else 'lat_p99_ns'
    keys = (*GUEST_FIGURES, tail, 'cpu_pct')
    header = ['VM', 'status', *(UNITS[k][0] for k in keys), UNITS[
        'seconds'][0], 'accel']
    rows = [[str(i), g.status, *(figure(k, g.figure(k)) for k in keys),
             _num(g.seconds), g.accel or '-']
            for i, g in enumerate(guests)]
    p = next((p for r in an.guests for p in an.points[r.label]), None)
    if p is not None:
        total = {**p.sums, 'lat_mean_ns': p.lat_mean_ns, tail: p.lat_tail_ns,
                 'cpu_pct': p.cpu_pct}
        rows.append(['all', f'{p.valid} ok',
                     *(figure(k, total.get(k)) for k in keys), '',
                     guests[0].accel or '-' if guests else ''])
    return header, rows


def guest_lines(an: Analysis, guests: Sequence[Row]) -> list[str]:
    """The guest table (``guest_rows``), each guest without a valid
    result followed by its reason, and what the aggregate is."""
    header, rows = guest_rows(an, guests)
    lines = grid(header, rows)
    out = lines[:1]
    for line, guest in zip(lines[1:], guests):
        out.append(line)
        if guest.status not in (OK, SERVER):
            out.append(f'    {guest.instance}: {guest.reason}')
    out.extend(lines[1 + len(guests):])
    tail = an.tail or 'p99'
    out.append('    (aggregate: throughput summed over the guests; latency '
               f'the mean of their means, {tail} the worst guest\'s)')
    failed = failures(guests)
    if failed:
        out.append(f'{failed} guest(s) failed: not in the aggregate')
    return out


def failures(guests: Sequence[Row]) -> int:
    """Guests that neither measured nor served (late, error, ...)."""
    return sum(1 for g in guests if g.status not in (OK, SERVER))


def tables(an: Analysis) -> list[Table]:
    if an.metric is None:
        return []
    return [step_rows(an)] if an.step_table else [vm_rows(an)]


def text(an: Analysis) -> str:
    out = [title(an), *an.warnings, *source_lines(an)]
    if an.metric is None:
        out.append('no valid result in any run: nothing to compare')
    for table in tables(an):
        out.extend(grid(*table))
    if an.metric is not None and not an.step_table and an.guests:
        out.extend(fit_lines(an))
    out.extend(failure_lines(an))
    for run in an.runs:
        out.extend(budget_lines(run))
    return '\n'.join(out) + '\n'
