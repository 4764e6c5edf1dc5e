"""The plot of an Analysis (PNG): the one renderer's figure
(kvmtune.report.render prints the text, kvmtune.report.page puts this
figure in the HTML page).

Left, the per-VM figure: one bar per run when every guest run has one
VM count, else per-VM curves by VM count with their linear fits dotted.
With a bare host among the runs the left axis is the share of the bare
host (%) and the per-VM figure is the second axis, at the right: on one
axis a bare host many times faster than its guests (fio on the host at
90,000 IOPS, TCG guests at 500 to 4,000) pressed every guest curve onto
the floor. The bare host's 100 % line is drawn when it lies within the
guests' own range; otherwise the title says what 100 % is. Right,
latency across guests: the mean of their means and the worst guest's
tail, never a sum, the bare host's beside them. Figures measured under
QEMU TCG carry the "emulated" label (kvmtune.results.units.EMULATED).
"""

import io
from typing import Any

from kvmtune.report.render import number
from kvmtune.report.render import pct
from kvmtune.results.analysis import Analysis
from kvmtune.results.analysis import Point
from kvmtune.results.units import EMULATED
from kvmtune.results.units import US_PER_NS

# room above the highest guest figure on the share axis
HEADROOM = 1.15


def bare_figure(an: Analysis) -> float | None:
    """The bare host's per-VM figure when the left axis is the share of
    it (a bare host with a figure, and guest runs to share it)."""
    if an.bare is None or not an.bare.per_vm or not an.guests:
        return None
    return an.bare.per_vm


def _left(an: Analysis, p: Point) -> float | None:
    """``p`` on the left axis: its share of the bare host (%), else its
    per-VM figure in the printed unit."""
    if p.per_vm is None:
        return None
    if bare_figure(an) is not None:
        return None if p.share is None else p.share * 100.0
    return p.per_vm * an.scale


def _per_vm_axis(an: Analysis, ax: Any, values: list[float]) -> None:
    """Labels, limits and the bare host's reference on the left axis."""
    from matplotlib import ticker

    unit, bare = an.unit or 'throughput', bare_figure(an)
    what = f'{an.workload or ""} per-VM {unit}'.strip()
    ax.set_ylim(bottom=0)
    if bare is None:
        ax.set_ylabel(f'per-VM {unit}')
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(
            lambda v, _: number(v)))
        ax.set_title(what)
        return
    top = max(values, default=0.0) * HEADROOM
    if top >= 100.0:
        ax.axhline(100.0, color='grey', linestyle='--',
                   label='bare host (100 %)')
        top = max(top, 105.0)
    if top > 0:
        ax.set_ylim(0, top)
    ax.set_ylabel('share of bare host')
    ax.yaxis.set_major_formatter(ticker.PercentFormatter(100.0))
    scale = bare * an.scale
    right = ax.secondary_yaxis('right', functions=(
        lambda share: share / 100.0 * scale,
        lambda value: value / scale * 100.0))
    right.set_ylabel(f'per-VM {unit}')
    right.yaxis.set_major_formatter(ticker.FuncFormatter(
        lambda v, _: number(v)))
    ax.set_title(f'{what}\nshare of bare host: 100 % = '
                 f'{number(bare, an.scale)} {unit}')


def _bars(an: Analysis, ax: Any, lat: Any) -> list[float]:
    """One bar per guest run (the change against the first above it),
    latency bars with the bare host's; the left axis' values."""
    tail = an.tail or 'p99'
    pts = [an.points[r.label][0] for r in an.guests]
    labels = [r.label for r in an.guests]
    if bare_figure(an) is None and an.bare is not None:
        pts, labels = pts + [an.bare], labels + ['bare host']
    values = [_left(an, p) for p in pts]
    xs = list(range(len(pts)))
    bars = ax.bar(xs, [v or 0.0 for v in values], color='tab:blue')
    for bar, p in zip(bars, pts):
        if p is an.bare:
            bar.set_facecolor('lightgrey')
            bar.set_hatch('//')
    for x, p, v in zip(xs, pts, values):
        note = ('no valid result' if v is None else
                pct(p.change) if p.change is not None else '')
        ax.annotate(note, (x, v or 0.0), ha='center', va='bottom',
                    fontsize=8)
    ax.set_xticks(xs, labels, rotation=30, ha='right', fontsize=8)
    both = [an.points[r.label][0] for r in an.guests] + (
        [an.bare] if an.bare else [])
    names = [r.label for r in an.guests] + (['bare host'] if an.bare
                                            else [])
    at = list(range(len(both)))
    lat.bar([x - 0.2 for x in at],
            [(p.lat_mean_ns or 0.0) * US_PER_NS for p in both], width=0.4,
            label='mean')
    lat.bar([x + 0.2 for x in at],
            [(p.lat_tail_ns or 0.0) * US_PER_NS for p in both], width=0.4,
            label=f'{tail} (worst guest)')
    lat.set_xticks(at, names, rotation=30, ha='right', fontsize=8)
    return [v for v in values if v is not None]


def _curves(an: Analysis, ax: Any, lat: Any) -> list[float]:
    """Per-VM curves by VM count with their fits dotted, latency curves
    (mean, tail); the left axis' values."""
    tail, bare = an.tail or 'p99', bare_figure(an)
    drawn: list[float] = []
    for run in an.guests:
        pts = [p for p in an.points[run.label]
               if _left(an, p) is not None]
        ys = [_left(an, p) or 0.0 for p in pts]
        drawn.extend(ys)
        label = run.label if pts else f'{run.label} (no valid result)'
        line, = ax.plot([p.vms for p in pts], ys, marker='o', label=label)
        fit = an.fits[run.label]
        if fit.slope is not None and fit.intercept is not None:
            per = 100.0 / bare if bare else an.scale
            ax.plot([p.vms for p in pts],
                    [(fit.intercept + fit.slope * p.vms) * per
                     for p in pts], linestyle=':', color=line.get_color())
        lat.plot([p.vms for p in pts],
                 [(p.lat_mean_ns or 0.0) * US_PER_NS for p in pts],
                 marker='o',
                 color=line.get_color(), label=f'{run.label} mean')
        lat.plot([p.vms for p in pts],
                 [(p.lat_tail_ns or 0.0) * US_PER_NS for p in pts],
                 marker='^',
                 linestyle='--', color=line.get_color(),
                 label=f'{run.label} {tail}')
    if bare is None and an.bare and an.bare.per_vm is not None:
        ax.axhline(an.bare.per_vm * an.scale, color='grey', linestyle='--',
                   label='bare host')
    for axis in (ax, lat):
        axis.set_xlabel('VMs on the host')
        axis.xaxis.get_major_locator().set_params(integer=True)
    return drawn


def draw(an: Analysis) -> Any:
    """The matplotlib Figure of ``an`` (``png_bytes`` saves it)."""
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot
    from matplotlib import ticker

    fig, (ax, lat) = pyplot.subplots(1, 2, figsize=(12, 4.8))
    if an.step_table or not an.guests:
        values = _bars(an, ax, lat)
    else:
        values = _curves(an, ax, lat)
    _per_vm_axis(an, ax, values)
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    lat.set_ylabel('latency across guests (us)')
    lat.set_ylim(bottom=0)
    lat.yaxis.set_major_formatter(ticker.FuncFormatter(
        lambda v, _: number(v)))
    lat.grid(True, alpha=0.3)
    if lat.get_legend_handles_labels()[0]:
        lat.legend(fontsize=8)
    lat.set_title('latency: mean of guests, worst guest tail')
    if an.emulated:
        fig.suptitle(EMULATED, color='#a40')
    fig.tight_layout()
    return fig


def png_bytes(an: Analysis) -> bytes:
    """``draw(an)`` as PNG bytes (100 dpi: 1200 x 480 pixels)."""
    from matplotlib import pyplot

    fig = draw(an)
    buf = io.BytesIO()
    fig.savefig(buf, format='png', dpi=100)
    pyplot.close(fig)
    return buf.getvalue()
