"""The plot of an Analysis (PNG): the one renderer's figure
(kvmtune.report.render prints the text, kvmtune.report.page puts this
figure in the HTML page).

Bars (one VM count: one bar per run, the bare host hatched) or per-VM
curves by VM count with their fits dotted, the bare host a dashed line;
latency beside it (mean and worst-guest tail, never a sum). Figures
measured under QEMU TCG carry the "emulated" label (render.EMULATED).
"""

import io

from kvmtune.report.analysis import Analysis
from kvmtune.report.render import EMULATED
from kvmtune.report.render import pct


def png_bytes(an: Analysis) -> bytes:
    """Bars (one VM count: one bar per run, the bare host hatched) or
    per-VM curves by VM count with their fits dotted, the bare host a
    dashed line; latency beside it (mean and worst-guest tail, never a
    sum)."""
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot

    unit, tail, s = an.unit or 'throughput', an.tail or 'p99', an.scale
    fig, (ax, lat) = pyplot.subplots(1, 2, figsize=(12, 4.8))

    def y(value: float | None, scale: float = s) -> float:
        return (value or 0.0) * scale

    if an.step_table or not an.guests:
        labels = [r.label for r in an.guests] + (['bare host'] if an.bare
                                                 else [])
        pts = [an.points[r.label][0] for r in an.guests] + (
            [an.bare] if an.bare else [])
        xs = list(range(len(pts)))
        bars = ax.bar(xs, [y(p.per_vm) for p in pts], color='tab:blue')
        if an.bare:
            bars[-1].set_facecolor('lightgrey')
            bars[-1].set_hatch('//')
        for x, p in zip(xs, pts):
            note = ('no valid result' if p.per_vm is None else
                    pct(p.change) if p.change is not None else '')
            ax.annotate(note, (x, y(p.per_vm)), ha='center', va='bottom',
                        fontsize=8)
        ax.set_xticks(xs, labels, rotation=30, ha='right', fontsize=8)
        lat.bar([x - 0.2 for x in xs], [y(p.lat_mean_ns, 1e-3) for p in pts],
                width=0.4, label='mean')
        lat.bar([x + 0.2 for x in xs], [y(p.lat_tail_ns, 1e-3) for p in pts],
                width=0.4, label=f'{tail} (worst guest)')
        lat.set_xticks(xs, labels, rotation=30, ha='right', fontsize=8)
    else:
        for run in an.guests:
            pts = [p for p in an.points[run.label] if p.per_vm is not None]
            label = run.label if pts else f'{run.label} (no valid result)'
            line, = ax.plot([p.vms for p in pts], [y(p.per_vm) for p in pts],
                            marker='o', label=label)
            fit = an.fits[run.label]
            if fit.slope is not None and fit.intercept is not None:
                ax.plot([p.vms for p in pts],
                        [(fit.intercept + fit.slope * p.vms) * s
                         for p in pts], linestyle=':',
                        color=line.get_color())
            lat.plot([p.vms for p in pts],
                     [y(p.lat_mean_ns, 1e-3) for p in pts], marker='o',
                     color=line.get_color(), label=f'{run.label} mean')
            lat.plot([p.vms for p in pts],
                     [y(p.lat_tail_ns, 1e-3) for p in pts], marker='^',
                     linestyle='--', color=line.get_color(),
                     label=f'{run.label} {tail}')
        if an.bare and an.bare.per_vm is not None:
            ax.axhline(y(an.bare.per_vm), color='grey', linestyle='--',
                       label='bare host')
        ax.set_xlabel('VMs on the host')
        lat.set_xlabel('VMs on the host')
        ax.xaxis.get_major_locator().set_params(integer=True)
        lat.xaxis.get_major_locator().set_params(integer=True)
        ax.legend(fontsize=8)
    ax.set_ylabel(f'per-VM {unit}')
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    lat.set_ylabel('latency across guests (us)')
    lat.set_ylim(bottom=0)
    lat.grid(True, alpha=0.3)
    if lat.get_legend_handles_labels()[0]:
        lat.legend(fontsize=8)
    lat.set_title('latency: mean of guests, worst guest tail')
    ax.set_title(f'{an.workload or ""} per-VM {unit}')
    if an.emulated:
        fig.suptitle(EMULATED, color='#a40')
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format='png', dpi=100)
    pyplot.close(fig)
    return buf.getvalue()
