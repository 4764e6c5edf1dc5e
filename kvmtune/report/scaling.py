"""Scaling figures of a sweep: per-VM and aggregate throughput by VM count,
share of bare metal, change against one VM, and a linear fit.
"""

import dataclasses

from kvmtune.report import vmtable

# A per-VM curve this well explained by a line degrades linearly.
LINEAR_R2 = 0.9


@dataclasses.dataclass
class Point:
    vms: int
    per_vm: float | None        # mean over guests with a valid result
    aggregate: float | None     # sum over those guests
    valid: int                  # guests with a valid result (all iterations)
    total: int                  # guests booted (all iterations)
    share: float | None = None  # per_vm / bare metal
    change: float | None = None  # per_vm / per_vm at 1 VM - 1


@dataclasses.dataclass
class Fit:
    slope: float | None          # per-VM throughput change per added VM
    intercept: float | None
    r2: float | None
    points: int

    @property
    def linear(self):
        return self.r2 is not None and self.r2 >= LINEAR_R2


@dataclasses.dataclass
class Scaling:
    metric: str | None          # row column, e.g. "iops"
    unit: str | None
    points: list
    fit: Fit
    bare_metal: float | None


def _mean(values):
    return sum(values) / len(values) if values else None


def point(vms, iterations, metric):
    per_vm, aggregate, valid, total = [], [], 0, 0
    for rows in iterations:
        good = [r[metric] for r in rows
                if r['status'] == vmtable.OK and r.get(metric) is not None]
        total += len(rows)
        valid += len(good)
        if good:
            per_vm.append(_mean(good))
            aggregate.append(sum(good))
    return Point(vms, _mean(per_vm), _mean(aggregate), valid, total)


def fit_line(xs, ys):
    """Least-squares line through (xs, ys): slope, intercept and R².

    Two points always fit exactly, so R² is only given from three VM
    counts on; a flat curve (no variance) has R² 1 by convention.
    """
    import numpy

    if len(xs) < 2:
        return Fit(None, None, None, len(xs))
    x = numpy.asarray(xs, dtype=float)
    y = numpy.asarray(ys, dtype=float)
    slope, intercept = numpy.polyfit(x, y, 1)
    r2 = None
    if len(xs) >= 3:
        ss_tot = float(((y - y.mean()) ** 2).sum())
        ss_res = float(((y - (slope * x + intercept)) ** 2).sum())
        r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0
    return Fit(float(slope), float(intercept), r2, len(xs))


def analyse(sweep, bare_metal=None):
    """Scaling figures of a rally_results.Sweep.

    :param bare_metal: the baseline figure in the sweep's metric, or None
    """
    all_rows = [r for its in sweep.points.values() for rows in its
                for r in rows]
    found = vmtable.throughput_key(all_rows)
    metric, unit = found if found else (None, None)
    points = []
    for vms in sorted(sweep.points):
        if metric is None:
            total = sum(len(rows) for rows in sweep.points[vms])
            points.append(Point(vms, None, None, 0, total))
        else:
            points.append(point(vms, sweep.points[vms], metric))
    one = next((p.per_vm for p in points if p.vms == 1), None)
    for p in points:
        if p.per_vm is None:
            continue
        if bare_metal:
            p.share = p.per_vm / bare_metal
        if one:
            p.change = p.per_vm / one - 1.0
    measured = [p for p in points if p.per_vm is not None]
    fit = fit_line([p.vms for p in measured], [p.per_vm for p in measured])
    return Scaling(metric, unit, points, fit, bare_metal)
