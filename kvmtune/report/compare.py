"""Comparison across runs: ``kvmtune report BEFORE.json AFTER.json [...]``.

Any mix of result files is read (Rally sweeps, ``kvmtune bench local
--json`` files of one run or of a ``--compare``, ``kvmtune baseline``
files) and turned into runs: one per Rally sweep (flavor), per bench
local run and per baseline (the bare host). For every VM count each run
gets its per-VM and aggregate throughput, the change against the first
run, its share of the bare host when a baseline is among the inputs, and
latency across guests: the mean of the guests' means and the highest
guest tail (p99, or max where the tool gives no p99), never a sum. Runs
over several VM counts get their linear fits side by side.

Runs at one VM count only (bench local) print in the shape of a step
table: one column per run, the bare host last.

Before anything is compared, ``kvmtune.report.records.check`` refuses
results of different workloads and warns about different hosts,
accelerators, parameters and runtimes.
"""

import dataclasses
import math
import os

from kvmtune.errors import InputError
from kvmtune.report import rally_results
from kvmtune.report import records
from kvmtune.report import scaling
from kvmtune.report import vmtable

EMULATED = 'emulated: QEMU TCG, not KVM speed'
# Throughput figures by preference: the first one the rows have is the
# workload's figure. (key, unit)
THROUGHPUT = (('iops', 'IOPS'), ('events_s', 'events/s'),
              ('gbit_s', 'Gbit/s'), ('tps', 'transactions/s'),
              ('bw_MiB_s', 'MiB/s'))
TAILS = (('lat_p99_us', 'p99'), ('lat_max_us', 'max'))
FIGURES = tuple(k for k, _ in THROUGHPUT) + ('lat_mean_us',) + tuple(
    k for k, _ in TAILS)


@dataclasses.dataclass
class Point:
    vms: int
    per_vm: float | None
    aggregate: float | None
    lat_mean_us: float | None    # mean of the guests' mean latencies
    lat_tail_us: float | None    # highest guest tail (p99 or max)
    valid: int
    total: int


@dataclasses.dataclass
class Run:
    label: str
    source: str
    record: dict | None
    emulated: bool
    # VM count -> iterations, each a list of guest figure dicts
    iterations: dict
    bare: bool = False
    failures: list = dataclasses.field(default_factory=list)


def figures(result):
    """Guest figures (vmtable units) from a parse shape (design.md 6)."""
    def num(value):
        """A figure as it was written: a number or None (a bool, a
        string: TypeError, which load() reports as a malformed file)."""
        if value is not None and (isinstance(value, bool) or
                                  not isinstance(value, (int, float))):
            raise TypeError(f'{value!r} is not a number')
        return value

    def us(value):
        return num(value) / 1000.0 if value is not None else None
    lat = result.get('lat_ns') or {}
    bw = num(result.get('bw_bytes_s'))
    return {'status': vmtable.OK, 'iops': num(result.get('iops')),
            'events_s': num(result.get('events_s')),
            'gbit_s': num(result.get('gbit_s')),
            'tps': num(result.get('tps')),
            'bw_MiB_s': bw / 1048576.0 if bw is not None else None,
            'lat_mean_us': us(lat.get('mean')),
            'lat_p99_us': us(lat.get('p99')),
            'lat_max_us': us(result.get('lat_max_ns')),
            'emulated': bool(result.get('emulated'))}


def _bench_rows(rows):
    """Figure dicts of a bench local run's rows (servers left out)."""
    out, failed = [], []
    for row in rows:
        if row.get('status') == 'server':
            continue
        if row.get('status') == 'ok' and isinstance(row.get('result'),
                                                    dict):
            out.append(figures(row['result']))
        else:
            out.append({'status': row.get('status')})
            failed.append(f'VM {row.get("vm")}: {row.get("status")}'
                          + (f' ({row["reason"]})' if row.get('reason')
                             else ''))
    return out, failed


def _label(path):
    return os.path.splitext(os.path.basename(path))[0]


def _from_bench(doc, path, label):
    rows, failed = _bench_rows(doc.get('rows') or [])
    vms = len(rows)
    return Run(label, path, doc.get('record'), bool(doc.get('emulated')),
               {vms: [rows]} if vms else {}, failures=failed)


def _from_baseline(doc, path):
    from kvmtune.bench import baseline

    baseline.validate(doc, path)
    return Run('bare host', path, doc.get('record'), False,
               {1: [[figures(doc['result'])]]}, bare=True)


def _from_rally(doc, path, many):
    sweeps = rally_results.sweeps_from(doc, source=path)
    args = [a for name, a, _, _ in rally_results.workloads(doc, path)
            if name in rally_results.SCENARIOS]
    started = None
    if isinstance(doc, dict):
        tasks = doc.get('tasks') or [{}]
        started = tasks[0].get('created_at')
    found = []
    for sweep, arg in zip(sweeps, args):
        label = f'{_label(path)}:{sweep.flavor}' if many or \
            len(sweeps) > 1 else _label(path)
        iterations = {n: its for n, its in sweep.points.items()}
        run = Run(label, path, records.from_rally(arg, started),
                  sweep.emulated, iterations)
        run.failures = [f'{n} VMs: {r["instance"]}: {r["status"]}'
                        + (f' ({r["reason"]})' if r.get('reason') else '')
                        for n, r in sweep.failures]
        run.failures += [f'iteration failed: {e}'
                         for e in sweep.iteration_errors]
        found.append(run)
    return found


def _number(value, where, path):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            value < 0:
        raise InputError(f'not a non-negative number: {value!r}',
                         source=path, key=where,
                         fix='give the file kvmtune wrote, unedited')
    return value


def _checked(run, path):
    """``run`` with a record of the right shape and every guest figure a
    non-negative number or None."""
    records.validate(run.record, path)
    for n, its in run.iterations.items():
        for rows in its:
            for row in rows:
                for key in FIGURES:
                    _number(row.get(key), f'{run.label}: {n} VMs: {key}',
                            path)
    return run


def load(path, many=True):
    """The runs held by one result file; InputError for anything else."""
    try:
        return [_checked(run, path) for run in _load(path, many)]
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise InputError(f'malformed result file ({type(exc).__name__}: '
                         f'{exc})', source=path,
                         fix='give the file kvmtune or Rally wrote, '
                             'unedited') from None


def _load(path, many):
    from kvmtune import inputs

    doc = inputs.load_json(path)
    kind = doc.get('kind') if isinstance(doc, dict) else None
    if kind == 'kvmtune-baseline':
        return [_from_baseline(doc, path)]
    if kind == 'kvmtune-bench-local':
        return [_from_bench(doc, path, _label(path))]
    if kind == 'kvmtune-bench-compare':
        runs = []
        for item in doc.get('runs') or []:
            if item.get('skipped'):
                continue
            run = _from_bench(dict(item, record=doc.get('record'),
                                   emulated=doc.get('emulated')), path,
                              item.get('label') or '?')
            run.record = dict(doc.get('record') or {},
                              settings=item.get('settings'))
            runs.append(run)
        if isinstance(doc.get('baseline'), dict):
            runs.append(_from_baseline(doc['baseline'], path))
        if not runs:
            raise InputError('holds no run with a result', source=path,
                             fix='every run of the comparison was skipped: '
                                 'see its lines, then run again')
        return runs
    if kind is not None and isinstance(doc, dict) and 'tasks' not in doc:
        raise InputError(f'unknown result kind {kind!r}', source=path,
                         fix='pass Rally, bench local or baseline JSON')
    return _from_rally(doc, path, many)


def metric_of(runs):
    """(key, unit) of the throughput figure all runs share."""
    for key, unit in THROUGHPUT:
        if any(r.get(key) is not None for run in runs
               for its in run.iterations.values() for rows in its
               for r in rows if r.get('status') == vmtable.OK):
            return key, unit
    return None, None


def _tail_of(runs):
    for key, name in TAILS:
        if any(r.get(key) is not None for run in runs
               for its in run.iterations.values() for rows in its
               for r in rows if r.get('status') == vmtable.OK):
            return key, name
    return None, None


def _mean(values):
    return sum(values) / len(values) if values else None


def point(vms, iterations, metric, tail):
    per_vm, aggregate, lat, worst, valid, total = [], [], [], [], 0, 0
    for rows in iterations:
        ok = [r for r in rows if r.get('status') == vmtable.OK]
        good = [r[metric] for r in ok if r.get(metric) is not None]
        total += len(rows)
        valid += len(good)
        if good:
            per_vm.append(_mean(good))
            aggregate.append(sum(good))
        means = [r['lat_mean_us'] for r in ok
                 if r.get('lat_mean_us') is not None]
        if means:
            lat.append(_mean(means))
        tails = [r[tail] for r in ok if tail and r.get(tail) is not None]
        if tails:
            worst.append(max(tails))
    return Point(vms, _mean(per_vm), _mean(aggregate), _mean(lat),
                 _mean(worst), valid, total)


@dataclasses.dataclass
class Comparison:
    runs: list
    metric: str | None
    unit: str | None
    tail: str | None
    points: dict          # run label -> [Point]
    fits: dict            # run label -> scaling.Fit
    bare: Point | None
    warnings: list
    workload: str | None

    @property
    def emulated(self):
        return any(r.emulated for r in self.runs)

    @property
    def step_table(self):
        """Every guest run at one and the same VM count."""
        counts = {p.vms for r in self.runs if not r.bare
                  for p in self.points[r.label]}
        return len(counts) == 1


def compare(runs, sources=None):
    """A Comparison of ``runs`` (the first non-bare run is the reference)."""
    if not runs:
        raise InputError('no run to compare',
                         fix='give result files of kvmtune bench local, '
                             'kvmtune baseline or a Rally sweep')
    sources = sources or [r.source for r in runs]
    taken = set()
    for run in runs:   # unique labels, in order ("a (2)" may be a file's)
        label, n = run.label, 1
        while label in taken:
            n += 1
            label = f'{run.label} ({n})'
        run.label = label
        taken.add(label)
    warnings = records.check([r.record for r in runs],
                             [f'{r.source} ({r.label})' for r in runs])
    metric, unit = metric_of(runs)
    tail, tail_name = _tail_of(runs)
    points, fits, bare = {}, {}, None
    for run in runs:
        pts = [point(n, its, metric, tail) if metric else
               Point(n, None, None, None, None, 0,
                     sum(len(r) for r in its))
               for n, its in sorted(run.iterations.items())]
        _finite(run, pts)
        points[run.label] = pts
        if run.bare:
            bare = pts[0] if pts else None
            continue
        measured = [p for p in pts if p.per_vm is not None]
        fits[run.label] = scaling.fit_line([p.vms for p in measured],
                                           [p.per_vm for p in measured])
    names = {(r.record or {}).get('workload', {}).get('name')
             for r in runs if r.record}
    names.discard(None)
    return Comparison(runs, metric, unit, tail_name, points, fits, bare,
                      warnings, ', '.join(sorted(names)) or None)


def _finite(run, pts):
    """Figures that are figures: finite guest figures can still add up
    beyond a float (1e308 twice), which printed as inf and +nan% and
    fitted a line of NaN (issue 26)."""
    for p in pts:
        for name in ('per_vm', 'aggregate', 'lat_mean_us', 'lat_tail_us'):
            value = getattr(p, name)
            if value is not None and not math.isfinite(value):
                raise InputError(
                    f'{p.vms} VMs: the {name} figure is not finite (its '
                    'guests\' figures add up beyond any real measurement)',
                    source=run.source, key=run.label,
                    fix='give the file kvmtune or Rally wrote, unedited')


def _same_setup(a, b):
    ra, rb = a.record or {}, b.record or {}
    return (ra.get('kind') == rb.get('kind') == 'bench-local' and
            ra.get('settings') == rb.get('settings') and
            ra.get('accel') == rb.get('accel') and
            (ra.get('host') or {}).get('digest') ==
            (rb.get('host') or {}).get('digest') and
            ra.get('workload') == rb.get('workload'))


def merge_sweeps(runs):
    """Consecutive bench local runs of one setup at different VM counts
    become one run over those counts (a local sweep, fitted like a Rally
    one): ``kvmtune report vm1.json vm2.json vm3.json``."""
    merged = []
    for run in runs:
        last = merged[-1] if merged else None
        if (last is not None and not run.bare and not last.bare and
                _same_setup(last, run) and
                not set(last.iterations) & set(run.iterations)):
            last.iterations.update(run.iterations)
            last.failures += run.failures
            last.source = f'{last.source}, {run.source}'
            if '+' not in last.label:
                last.label += '+'
            continue
        merged.append(run)
    return merged


def load_all(paths):
    many = len(paths) > 1
    runs = []
    for path in paths:
        runs.extend(load(path, many=many))
    return compare(merge_sweeps(runs))


# ---- text ----------------------------------------------------------------

def _num(value, digits=1):
    if value is None:
        return '-'
    if abs(value) >= 100:
        return f'{value:,.0f}'
    return f'{value:,.{digits}f}' if abs(value) >= 1 else f'{value:.3g}'


def _pct(value):
    return '-' if value is None else f'{value * 100:+.1f}%'


def _share(value):
    return '-' if value is None else f'{value * 100:.1f}%'


def _change(p, ref):
    if p is None or p.per_vm is None or ref is None or not ref.per_vm:
        return None
    return p.per_vm / ref.per_vm - 1.0


def _ratio(p, bare):
    if p is None or p.per_vm is None or bare is None or not bare.per_vm:
        return None
    return p.per_vm / bare.per_vm


def _grid(header, rows):
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    first = [str(header[0]).ljust(widths[0])] + [
        str(c).rjust(w) for c, w in zip(header[1:], widths[1:])]
    out = ['  '.join(first)]
    for row in rows:
        out.append('  '.join([str(row[0]).ljust(widths[0])] + [
            str(c).rjust(w) for c, w in zip(row[1:], widths[1:])]))
    return out


def title(cmp):
    what = cmp.workload or 'results'
    text = f'comparison of {len([r for r in cmp.runs if not r.bare])} ' \
           f'run(s), {what}'
    return f'{text} ({EMULATED})' if cmp.emulated else text


def reference(cmp, vms=None):
    """(label, point) of the first run with a valid figure (at ``vms``
    VMs): the change column is against it."""
    for run in cmp.runs:
        if run.bare:
            continue
        for p in cmp.points[run.label]:
            if (vms is None or p.vms == vms) and p.per_vm is not None:
                return run.label, p
    return None, None


def step_rows(cmp):
    """Header and rows of the step table: metrics down, runs across."""
    guests = [r for r in cmp.runs if not r.bare]
    ref_label, ref = reference(cmp)
    unit, tail = cmp.unit or 'throughput', cmp.tail or 'p99'
    header = ['', *[r.label for r in guests]] + (
        ['bare host'] if cmp.bare else [])
    pts = [cmp.points[r.label][0] for r in guests]
    bare = [cmp.bare] if cmp.bare else []
    rows = [
        [f'per-VM {unit}', *[_num(p.per_vm) for p in pts + bare]],
        [f'aggregate {unit}', *[_num(p.aggregate) for p in pts],
         *(['-'] if bare else [])],
        [f'change vs {ref_label}' if ref_label else 'change',
         *[_pct(_change(p, ref)) for p in pts],
         *([_pct(_change(cmp.bare, ref))] if bare else [])],
        ['share of bare host', *[_share(_ratio(p, cmp.bare)) for p in pts],
         *(['100.0%'] if bare else [])],
        ['lat mean (us)', *[_num(p.lat_mean_us) for p in pts + bare]],
        [f'lat {tail}, worst guest (us)',
         *[_num(p.lat_tail_us) for p in pts + bare]],
        ['valid guests', *[f'{p.valid}/{p.total}' for p in pts + bare]],
    ]
    return header, rows


def vm_rows(cmp):
    """Header and rows by VM count: one row per run at each count."""
    guests = [r for r in cmp.runs if not r.bare]
    unit, tail = cmp.unit or 'throughput', cmp.tail or 'p99'
    header = ['VMs', 'run', f'per-VM {unit}', f'aggregate {unit}',
              'change vs first valid run',
              'share of bare host', 'lat mean us', f'lat {tail} us',
              'valid']
    counts = sorted({p.vms for r in guests for p in cmp.points[r.label]})
    rows = []
    for n in counts:
        _, ref = reference(cmp, n)
        for run in guests:
            p = next((p for p in cmp.points[run.label] if p.vms == n), None)
            if p is None:
                continue
            rows.append([str(n), run.label, _num(p.per_vm),
                         _num(p.aggregate), _pct(_change(p, ref)),
                         _share(_ratio(p, cmp.bare)), _num(p.lat_mean_us),
                         _num(p.lat_tail_us), f'{p.valid}/{p.total}'])
    if cmp.bare:
        b = cmp.bare
        rows.append(['-', 'bare host', _num(b.per_vm), '-', '-', '100.0%',
                     _num(b.lat_mean_us), _num(b.lat_tail_us),
                     f'{b.valid}/{b.total}'])
    return header, rows


def fit_lines(cmp):
    """The runs' linear fits of per-VM throughput, side by side."""
    unit = cmp.unit or 'throughput'
    header = ['run', 'per-VM at N=0', 'slope per added VM', 'slope % of 1 VM',
              'R²', 'VM counts']
    rows = []
    for run in cmp.runs:
        if run.bare:
            continue
        fit = cmp.fits[run.label]
        one = next((p.per_vm for p in cmp.points[run.label] if p.vms == 1),
                   None)
        if fit.slope is None:
            rows.append([run.label, '-', '-', '-', '-', str(fit.points)])
            continue
        rows.append([run.label, _num(fit.intercept), _num(fit.slope),
                     _pct(fit.slope / one) if one else '-',
                     f'{fit.r2:.3f}' if fit.r2 is not None else '-',
                     str(fit.points)])
    return [f'linear fits of per-VM {unit} = a + b x N:'] + \
        _grid(header, rows)


def text(cmp):
    out = [title(cmp)]
    out.extend(cmp.warnings)
    settings = [_settings(r.record) for r in cmp.runs if not r.bare]
    common = set.intersection(*map(set, settings)) if settings else set()
    if common:
        out.append(f'  every run: {" ".join(sorted(common))}')
    for run in cmp.runs:
        own = [s for s in _settings(run.record) if s not in common]
        out.append(f'  {run.label}: {run.source}'
                   + (f' [{" ".join(own)}]' if own and not run.bare
                      else ''))
    if cmp.metric is None:
        out.append('no valid result in any run: nothing to compare')
    elif cmp.step_table:
        out.extend(_grid(*step_rows(cmp)))
    else:
        out.extend(_grid(*vm_rows(cmp)))
        if any(not r.bare for r in cmp.runs):
            out.extend(fit_lines(cmp))
    bad = [(r.label, f) for r in cmp.runs for f in r.failures]
    if bad:
        out.append('guests without a valid result (not averaged):')
        out.extend(f'  {label}: {f}' for label, f in bad)
    return '\n'.join(out) + '\n'


def _settings(record):
    settings = (record or {}).get('settings') or {}
    profile = (record or {}).get('profile')
    parts = [f'{k}={v}' for k, v in sorted(settings.items())]
    if profile:
        parts.insert(0, f'profile={profile}')
    return parts


# ---- plot ------------------------------------------------------------------

def png_bytes(cmp):
    """Bars (one VM count: one bar per run, the bare host hatched) or
    per-VM curves by VM count with their fits dotted, the bare host a
    dashed line; latency beside it (mean and worst-guest tail, never a
    sum)."""
    import io

    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot

    unit, tail = cmp.unit or 'throughput', cmp.tail or 'p99'
    guests = [r for r in cmp.runs if not r.bare]
    fig, (ax, lat) = pyplot.subplots(1, 2, figsize=(12, 4.8))
    if cmp.step_table:
        labels = [r.label for r in guests] + (['bare host'] if cmp.bare
                                              else [])
        pts = [cmp.points[r.label][0] for r in guests] + (
            [cmp.bare] if cmp.bare else [])
        xs = range(len(pts))
        bars = ax.bar(xs, [p.per_vm or 0 for p in pts], color='tab:blue')
        if cmp.bare:
            bars[-1].set_facecolor('lightgrey')
            bars[-1].set_hatch('//')
        _, ref = reference(cmp)
        for x, p in zip(xs, pts):
            change = _change(p, ref)
            note = ('no valid result' if p.per_vm is None else
                    _pct(change) if change is not None else '')
            ax.annotate(note, (x, p.per_vm or 0), ha='center',
                        va='bottom', fontsize=8)
        ax.set_xticks(list(xs), labels, rotation=30, ha='right',
                      fontsize=8)
        lat.bar([x - 0.2 for x in xs], [p.lat_mean_us or 0 for p in pts],
                width=0.4, label='mean')
        lat.bar([x + 0.2 for x in xs], [p.lat_tail_us or 0 for p in pts],
                width=0.4, label=f'{tail} (worst guest)')
        lat.set_xticks(list(xs), labels, rotation=30, ha='right',
                       fontsize=8)
        ax.set_ylabel(f'per-VM {unit}')
    else:
        for run in guests:
            pts = [p for p in cmp.points[run.label] if p.per_vm is not None]
            line, = ax.plot([p.vms for p in pts], [p.per_vm for p in pts],
                            marker='o', label=run.label)
            fit = cmp.fits[run.label]
            if fit.slope is not None:
                ax.plot([p.vms for p in pts],
                        [fit.intercept + fit.slope * p.vms for p in pts],
                        linestyle=':', color=line.get_color())
            lat.plot([p.vms for p in pts], [p.lat_mean_us for p in pts],
                     marker='o', color=line.get_color(),
                     label=f'{run.label} mean')
            lat.plot([p.vms for p in pts], [p.lat_tail_us for p in pts],
                     marker='^', linestyle='--', color=line.get_color(),
                     label=f'{run.label} {tail}')
        if cmp.bare and cmp.bare.per_vm is not None:
            ax.axhline(cmp.bare.per_vm, color='grey', linestyle='--',
                       label='bare host')
        ax.set_xlabel('VMs on the host')
        lat.set_xlabel('VMs on the host')
        ax.set_ylabel(f'per-VM {unit}')
        ax.xaxis.get_major_locator().set_params(integer=True)
        lat.xaxis.get_major_locator().set_params(integer=True)
        ax.legend(fontsize=8)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    lat.set_ylabel('latency across guests (us)')
    lat.set_ylim(bottom=0)
    lat.grid(True, alpha=0.3)
    lat.legend(fontsize=8)
    lat.set_title('latency: mean of guests, worst guest tail')
    ax.set_title(f'{cmp.workload or ""} per-VM {unit}')
    if cmp.emulated:
        fig.suptitle(EMULATED, color='#a40')
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format='png', dpi=100)
    pyplot.close(fig)
    return buf.getvalue()


def html_page(cmp, png):
    import base64
    import html

    esc = html.escape
    head = title(cmp)
    parts = ['<!DOCTYPE html><html><head><meta charset="utf-8">'
             f'<title>{esc(head)}</title><style>body{{font-family:'
             'sans-serif;margin:2em}table{border-collapse:collapse}'
             'td,th{border:1px solid #bbb;padding:.25em .6em;'
             'text-align:right}.emulated{color:#a40;font-weight:bold}'
             f'</style></head><body><h1>{esc(head)}</h1>']
    if cmp.emulated:
        parts.append(f'<p class="emulated">Figures are {EMULATED}.</p>')
    parts.extend(f'<p>{esc(w)}</p>' for w in cmp.warnings)
    tables = [step_rows(cmp)] if cmp.step_table else [vm_rows(cmp)]
    for header, rows in tables:
        parts.append('<table><tr>' + ''.join(f'<th>{esc(c)}</th>'
                                             for c in header) + '</tr>')
        parts.extend('<tr>' + ''.join(f'<td>{esc(c)}</td>' for c in r)
                     + '</tr>' for r in rows)
        parts.append('</table>')
    if not cmp.step_table:
        parts.append('<pre>' + esc('\n'.join(fit_lines(cmp))) + '</pre>')
    data = base64.b64encode(png).decode('ascii')
    parts.append(f'<img alt="{esc(head)}" src="data:image/png;base64,'
                 f'{data}"></body></html>')
    return '\n'.join(parts)
