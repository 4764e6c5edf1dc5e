"""``analyse(runs) -> Analysis``: every figure the report prints and the
SLA judges, computed once (doc/design.md 9.4).

For every run (kvmtune.results.run.Run) and VM count: the per-VM figure
(the mean over the guests with a valid result, averaged over the
iterations at that count), the aggregate (their sum, averaged likewise),
latency across guests (the mean of the guests' means and the highest
guest tail, p99 or max where the tool gives no p99: never summed), the
guests valid of those booted; the change against the first run with a
valid figure at that count, the change against the run's own 1-VM
figure, the share of the bare host when a baseline is among the runs;
and per run a least-squares line of the per-VM figure over VM counts.

Figures stay in the one unit set of kvmtune.results.row (bytes/s,
nanoseconds): the renderer alone scales them for print.

Before anything is analysed, kvmtune.results.compare.check refuses runs
of different workloads, or of a workload that cannot be known (a record
that says null), and warns about different hosts, accelerators,
parameters and runtimes; a bare host that measured another workload, or
has no figure of the runs' metric, is refused; a guest run without it is
shown as not comparable, with a warning.
"""

import dataclasses
import math
from typing import Any
from typing import Callable
from typing import Iterator
from typing import Sequence

from kvmtune.errors import InputError
from kvmtune.results import compare
from kvmtune.results.row import Row
from kvmtune.results.run import Run
from kvmtune.results.units import THROUGHPUT

SUMMED = tuple(k for k, _, _ in THROUGHPUT)
TAILS = (('lat_p99_ns', 'p99'), ('lat_max_ns', 'max'))
# A per-VM curve this well explained by a line degrades linearly.
LINEAR_R2 = 0.9


@dataclasses.dataclass
class Point:
    vms: int
    per_vm: float | None         # mean over guests with a valid result
    aggregate: float | None      # their sum
    lat_mean_ns: float | None    # mean of the guests' mean latencies
    lat_tail_ns: float | None    # highest guest tail (p99 or max)
    valid: int                   # guests with a valid figure (all its.)
    total: int                   # guests booted (all iterations)
    change: float | None = None  # per_vm / the reference run's - 1
    vs_one: float | None = None  # per_vm / this run's per_vm at 1 VM
    share: float | None = None   # per_vm / the bare host's
    # every throughput figure summed over the valid guests (the aggregate
    # of each, not only the metric's), and their mean CPU use
    sums: dict[str, float | None] = dataclasses.field(default_factory=dict)
    cpu_pct: float | None = None


@dataclasses.dataclass
class CurveFit:
    """The least-squares line of a run's per-VM figure over VM counts."""
    slope: float | None          # per-VM figure change per added VM
    intercept: float | None
    r2: float | None
    points: int

    @property
    def linear(self) -> bool:
        return self.r2 is not None and self.r2 >= LINEAR_R2


@dataclasses.dataclass
class Analysis:
    runs: list[Run]
    metric: str | None           # Row column, e.g. "iops"
    unit: str | None             # as printed, e.g. "IOPS", "MiB/s"
    scale: float                 # metric -> unit
    tail: str | None             # "p99" or "max"
    points: dict[str, list[Point]]   # run label -> its points by VM count
    fits: dict[str, CurveFit]    # run label -> its line (guest runs)
    bare: Point | None
    warnings: list[str]
    workload: str | None

    def to_dict(self) -> dict[str, Any]:
        """The analysis as data (``kvmtune report -f json``): per run its
        points by VM count and its fit, the bare host's point; figures in
        the metric's own unit (Row's unit set: IOPS, bytes/s, ns)."""
        return {
            'workload': self.workload, 'metric': self.metric,
            'unit': self.unit, 'scale': self.scale, 'tail': self.tail,
            'runs': [{'label': run.label, 'source': run.source,
                      'kind': run.kind,
                      'points': [dataclasses.asdict(p)
                                 for p in self.points.get(run.label, [])],
                      'fit': (dataclasses.asdict(self.fits[run.label])
                              if run.label in self.fits else None)}
                     for run in self.runs],
            'bare': dataclasses.asdict(self.bare) if self.bare else None,
            'warnings': list(self.warnings)}

    @property
    def emulated(self) -> bool:
        return any(r.emulated for r in self.runs)

    @property
    def guests(self) -> list[Run]:
        return [r for r in self.runs if not r.bare]

    @property
    def step_table(self) -> bool:
        """Every guest run at one and the same VM count."""
        counts = {p.vms for r in self.guests for p in self.points[r.label]}
        return len(counts) == 1

    def reference(self, vms: int | None = None) -> tuple[str | None,
                                                         Point | None]:
        """(label, point) of the first guest run with a valid figure (at
        ``vms`` VMs): the change is against it."""
        for run in self.guests:
            for p in self.points[run.label]:
                if (vms is None or p.vms == vms) and p.per_vm is not None:
                    return run.label, p
        return None, None


def _mean(values: Sequence[float]) -> float | None:
    return _average(values) if values else None


def _present(runs: Sequence[Run], keys: Sequence[str]) -> str | None:
    for key in keys:
        if any(r.ok and r.figure(key) is not None
               for run in runs for r in run.rows):
            return key
    return None


def metric_of(runs: Sequence[Run]) -> tuple[str | None, str | None, float]:
    """(Row column, printed unit, scale) of the figure the runs share."""
    key = _present(runs, [k for k, _, _ in THROUGHPUT])
    for k, unit, scale in THROUGHPUT:
        if k == key:
            return k, unit, scale
    return None, None, 1.0


def _over(iterations: Sequence[Sequence[Row]], key: str | None,
          how: Callable[[Sequence[float]], float]) -> float | None:
    """``how`` (mean, sum, max) of ``key`` over the valid guests of each
    iteration that has one, averaged over those iterations."""
    if key is None:
        return None
    each = [how(values) for values in (
        [v for v in (r.figure(key) for r in guests if r.ok) if v is not None]
        for guests in iterations) if values]
    return _mean(each)


def _average(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def point(vms: int, iterations: Sequence[Sequence[Row]],
          metric: str | None, tail: str | None = None) -> Point:
    """The figures of one run at ``vms`` VMs over its iterations."""
    valid = sum(1 for guests in iterations for r in guests
                if r.ok and metric and r.figure(metric) is not None)
    return Point(vms, _over(iterations, metric, _average),
                 _over(iterations, metric, sum),
                 _over(iterations, 'lat_mean_ns', _average),
                 _over(iterations, tail, max), valid,
                 sum(len(guests) for guests in iterations),
                 sums={k: _over(iterations, k, sum) for k in SUMMED},
                 cpu_pct=_over(iterations, 'cpu_pct', _average))


def fit_line(xs: Sequence[float], ys: Sequence[float]) -> CurveFit:
    """Least-squares line through (xs, ys): slope, intercept and R².

    Two points always fit exactly, so R² is only given from three VM
    counts on; a flat curve (no variance) has R² 1 by convention.
    """
    import numpy

    if len(xs) < 2:
        return CurveFit(None, None, None, len(xs))
    x = numpy.asarray(xs, dtype=float)
    y = numpy.asarray(ys, dtype=float)
    # figures near a float's limit overflow here: the caller refuses the
    # result that is not finite (_finite) instead of numpy warning
    with numpy.errstate(all='ignore'):
        slope, intercept = numpy.polyfit(x, y, 1)
        r2 = None
        if len(xs) >= 3:
            ss_tot = float(((y - y.mean()) ** 2).sum())
            ss_res = float(((y - (slope * x + intercept)) ** 2).sum())
            r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0
    return CurveFit(float(slope), float(intercept), r2, len(xs))


def _figures(p: Point) -> Iterator[tuple[str, float | None]]:
    """(name, value) of every figure of a Point."""
    for field in dataclasses.fields(p):
        value = getattr(p, field.name)
        if isinstance(value, dict):
            yield from ((f'aggregate {k}', v) for k, v in value.items())
        elif isinstance(value, float):
            yield field.name, value


def _finite(run: Run, pts: Sequence[Point],
            fit: CurveFit | None = None) -> None:
    """Figures that are figures: finite guest figures can still add up beyond a
    float (1e308 twice), which printed as inf and +nan% and fitted a line of
    NaN (tests/unit/test_hostile.py); so can a change against a tiny figure, a
    sum of a figure that is not the metric, or a fit
    (tests/unit/test_jsonout.py). Every figure the report prints, plots or
    writes as JSON is checked here, naming the run and the figure."""
    fix = 'give the file kvmtune or Rally wrote, unedited'
    for p in pts:
        for name, value in _figures(p):
            if value is not None and not math.isfinite(value):
                raise InputError(
                    f'{p.vms} VMs: the {name} figure is not finite (its '
                    'guests\' figures add up beyond any real measurement)',
                    source=run.source, key=run.label, fix=fix)
    for name in ('slope', 'intercept', 'r2'):
        value = getattr(fit, name, None)
        if value is not None and not math.isfinite(value):
            raise InputError(
                f'the {name} of the per-VM figure\'s line is not finite '
                '(its figures are beyond any real measurement)',
                source=run.source, key=run.label, fix=fix)


def _check_bare(run: Run, point_: Point, metric: str | None,
                workloads: set[str]) -> None:
    """A bare host of the runs' workload with a figure to share."""
    if metric is None:
        return
    bare_workload = next((r.workload for r in run.rows if r.workload),
                         None)
    fix = 'record one with `kvmtune baseline`' + (
        f' --workload {min(workloads)}' if workloads else '')
    if workloads and bare_workload not in workloads:
        raise InputError(f'no {metric} figure for workload '
                         f'{", ".join(sorted(workloads))}',
                         source=run.source, fix=fix)
    if point_.per_vm is None:
        raise InputError(f'no {metric} figure for workload '
                         f'{bare_workload}', source=run.source, fix=fix)
    if point_.per_vm == 0:
        raise InputError(f'the bare-metal {metric} is 0: no share of it '
                         'can be given', source=run.source, key=metric,
                         fix=fix)


def analyse(runs: Sequence[Run]) -> Analysis:
    """The Analysis of ``runs`` (the first guest run is the reference)."""
    if not runs:
        raise InputError('no run to compare',
                         fix='give result files of kvmtune bench local, '
                             'kvmtune baseline or a Rally sweep')
    runs = list(runs)
    warnings = compare.check([r.record for r in runs],
                             [f'{r.source} ({r.label})' for r in runs],
                             [{g.workload for g in r.rows if g.workload}
                              for r in runs])
    metric, unit, scale = metric_of(runs)
    tail = _present(runs, [k for k, _ in TAILS])
    tail_name = dict(TAILS).get(tail) if tail else None
    workloads = {r.workload for run in runs if not run.bare
                 for r in run.rows if r.ok and r.workload}
    points: dict[str, list[Point]] = {}
    fits: dict[str, CurveFit] = {}
    bare = None
    for run in runs:
        pts = [point(n, its, metric, tail)
               for n, its in sorted(run.iterations.items())]
        _finite(run, pts)
        points[run.label] = pts
        if metric and any(r.ok for r in run.rows) and all(
                p.per_vm is None for p in pts):
            # valid guests, none with the runs' figure: another unit
            warnings.append(f'warning: {run.source} ({run.label}): no '
                            f'{unit} figure: not comparable (shown as -)')
        if run.bare:
            if bare is None and pts:
                _check_bare(run, pts[0], metric, workloads)
                bare = pts[0]
            continue
        one = next((p.per_vm for p in pts if p.vms == 1), None)
        for p in pts:
            if p.per_vm is not None and one:
                p.vs_one = p.per_vm / one
        measured = [p for p in pts if p.per_vm is not None]
        fits[run.label] = fit_line([p.vms for p in measured],
                                   [p.per_vm for p in measured
                                    if p.per_vm is not None])
    names = {((r.record or {}).get('workload') or {}).get('name')
             for r in runs}
    names.discard(None)
    result = Analysis(runs, metric, unit, scale, tail_name, points, fits,
                      bare, warnings,
                      ', '.join(sorted(n for n in names if n)) or None)
    for run in result.guests:
        for p in points[run.label]:
            _, ref = result.reference(p.vms)
            p.change = _ratio(p, ref, minus_one=True)
            p.share = _ratio(p, bare)
    if bare is not None:
        _, ref = result.reference()
        bare.change = _ratio(bare, ref, minus_one=True)
        bare.share = 1.0 if bare.per_vm else None
    for run in runs:
        _finite(run, points[run.label], fits.get(run.label))
    return result


def load(paths: Sequence[str]) -> Analysis:
    """The Analysis of the runs in result files (kvmtune.results.read):
    what ``kvmtune report FILE...`` and the main job print."""
    from kvmtune.results import read

    return analyse(read.load_all(list(paths)))


def change(new: float | None, ref: float | None) -> float | None:
    """``new`` against ``ref``: new / ref - 1 (None without both, or
    against 0). The one change of the report, the step tables and bench
    nested's L2 against L1."""
    if new is None or not ref:
        return None
    return new / ref - 1.0


def _ratio(p: Point, ref: Point | None,
           minus_one: bool = False) -> float | None:
    if ref is None:
        return None
    if minus_one:
        return change(p.per_vm, ref.per_vm)
    if p.per_vm is None or not ref.per_vm:
        return None
    return p.per_vm / ref.per_vm
