"""Text table, PNG plot and self-contained HTML of scaling sweeps.

Figures measured under QEMU TCG are labelled "emulated" in every header,
title and page: they show the mechanics of the sweep, never KVM's speed.
"""

import base64
import html
import io

EMULATED = 'emulated: QEMU TCG, not KVM speed'


def _num(value, digits=1):
    if value is None:
        return '-'
    if abs(value) >= 100 or digits == 0:
        return f'{value:,.0f}'
    return f'{value:,.{digits}f}' if abs(value) >= 1 else f'{value:.4g}'


def _pct(value, signed=False):
    if value is None:
        return '-'
    return f'{value * 100:+.1f}%' if signed else f'{value * 100:.1f}%'


def heading(sweep):
    kind = 'disk' if sweep.scenario.endswith('disk_scaling') else 'network'
    text = f'{kind} sweep {sweep.workload}, flavor {sweep.flavor}'
    return f'{text} ({EMULATED})' if sweep.emulated else text


def table_rows(scaling):
    """Header and rows of the scaling table, as strings."""
    unit = scaling.unit or 'throughput'
    header = ['VMs', f'per-VM {unit}', f'aggregate {unit}',
              'share of bare metal', 'change vs 1 VM', 'valid guests']
    rows = [[str(p.vms), _num(p.per_vm), _num(p.aggregate), _pct(p.share),
             _pct(p.change, signed=True), f'{p.valid}/{p.total}']
            for p in scaling.points]
    return header, rows


def fit_line(scaling):
    """One sentence on the per-VM degradation fit."""
    fit, unit = scaling.fit, scaling.unit or 'throughput'
    if fit.slope is None:
        return 'fit: needs valid results at two VM counts at least'
    one = next((p.per_vm for p in scaling.points if p.vms == 1), None)
    rel = f' ({_pct(fit.slope / one, signed=True)} of 1 VM)' if one else ''
    text = (f'fit: per-VM {unit} = {_num(fit.intercept)} '
            f'{"+" if fit.slope >= 0 else "-"} {_num(abs(fit.slope))} x N;'
            f' slope per added VM {_num(fit.slope)}{rel}')
    if fit.r2 is None:
        return text + '; R² needs three VM counts at least'
    verdict = 'linear' if fit.linear else 'not linear'
    return f'{text}; R² {fit.r2:.3f}: {verdict} (R² >= 0.9 is linear)'


def failure_lines(sweep):
    lines = [f'  {n} VMs: {r["instance"]}: {r["status"]}'
             + (f' ({r["reason"]})' if r.get('reason') else '')
             for n, r in sweep.failures]
    lines += [f'  iteration failed: {e}' for e in sweep.iteration_errors]
    return lines


def budget_lines(sweep):
    """The steps' time budget (seconds, host clock), one line per step."""
    if not sweep.budgets:
        return []
    lines = ['step time budget, s (wall = boot + ready + workload + '
             'collect + delete + Rally\'s own; slowest ready = API to the '
             'last guest ready):']
    for vms, b in sweep.budgets:
        lines.append(
            f'  {vms} VMs: wall {b["wall"]:.1f}: boot {b["boot"]:.1f}, '
            f'ready {b["ready"]:.1f}, workload {b["workload"]:.1f}, '
            f'collect {b["collect"]:.1f}, delete {b["delete"]:.1f}; '
            'slowest ready ' + (f'{b["slowest_ready"]:.1f}'
                                if b['slowest_ready'] is not None else '-'))
    return lines


def text(analysed):
    """The report as text; ``analysed`` is a list of (sweep, scaling)."""
    out = []
    for sweep, scaling in analysed:
        header, rows = table_rows(scaling)
        widths = [max(len(c), *(len(r[i]) for r in rows)) if rows
                  else len(c) for i, c in enumerate(header)]
        out.append(heading(sweep))
        out.append('  '.join(c.rjust(w) for c, w in zip(header, widths)))
        for r in rows:
            out.append('  '.join(c.rjust(w) for c, w in zip(r, widths)))
        if scaling.bare_metal is not None:
            out.append(f'bare metal: {_num(scaling.bare_metal)} '
                       f'{scaling.unit}')
        out.append(fit_line(scaling))
        bad = failure_lines(sweep)
        if bad:
            out.append('guests without a valid result (not averaged):')
            out.extend(bad)
        out.extend(budget_lines(sweep))
        out.append('')
    return '\n'.join(out)


def _by_workload(analysed):
    groups = {}
    for sweep, scaling in analysed:
        groups.setdefault((sweep.scenario, sweep.workload), []).append(
            (sweep, scaling))
    return groups


def png_bytes(analysed):
    """Per-VM throughput against VM count, one panel per workload and one
    curve per flavor (tuned and default side by side)."""
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot

    groups = _by_workload(analysed)
    fig, axes = pyplot.subplots(len(groups), 1, squeeze=False,
                                figsize=(7.5, 4.2 * len(groups)))
    emulated = any(s.emulated for s, _ in analysed)
    for ax, ((scenario, workload), members) in zip(axes[:, 0],
                                                   groups.items()):
        unit = next((sc.unit for _, sc in members if sc.unit), 'throughput')
        bare = next((sc.bare_metal for _, sc in members
                     if sc.bare_metal is not None), None)
        for sweep, scaling in members:
            pts = [p for p in scaling.points if p.per_vm is not None]
            label = sweep.flavor if pts else (f'{sweep.flavor} '
                                              '(no valid result)')
            line, = ax.plot([p.vms for p in pts], [p.per_vm for p in pts],
                            marker='o', label=label)
            if scaling.fit.slope is not None:
                xs = [p.vms for p in pts]
                ax.plot(xs, [scaling.fit.intercept + scaling.fit.slope * x
                             for x in xs], linestyle=':',
                        color=line.get_color(), label=None)
        if bare is not None:
            ax.axhline(bare, color='grey', linestyle='--', label='bare metal')
        title = f'{workload}: per-VM {unit} by VM count'
        ax.set_title(title + (f'\n({EMULATED})' if emulated else ''))
        ax.set_xlabel('VMs on the host')
        ax.set_ylabel(f'per-VM {unit}')
        ax.set_ylim(bottom=0)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format='png', dpi=100)
    pyplot.close(fig)
    return buf.getvalue()


_CSS = ('body{font-family:sans-serif;margin:2em;max-width:60em}'
        'table{border-collapse:collapse;margin:.5em 0}'
        'td,th{border:1px solid #bbb;padding:.25em .6em;text-align:right}'
        '.emulated{color:#a40;font-weight:bold}')


def html_page(analysed, png):
    """A self-contained page: tables, fits, failures and the plot inline."""
    esc = html.escape
    emulated = any(s.emulated for s, _ in analysed)
    title = 'kvmtune scaling report' + (f' ({EMULATED})' if emulated else '')
    parts = [f'<!DOCTYPE html><html><head><meta charset="utf-8">'
             f'<title>{esc(title)}</title><style>{_CSS}</style></head><body>',
             f'<h1>{esc(title)}</h1>']
    if emulated:
        parts.append(f'<p class="emulated">Figures are {EMULATED}: they '
                     'show how the sweep works, not what a KVM host '
                     'delivers.</p>')
    for sweep, scaling in analysed:
        header, rows = table_rows(scaling)
        parts.append(f'<h2>{esc(heading(sweep))}</h2><table><tr>'
                     + ''.join(f'<th>{esc(c)}</th>' for c in header)
                     + '</tr>')
        for r in rows:
            parts.append('<tr>' + ''.join(f'<td>{esc(c)}</td>' for c in r)
                         + '</tr>')
        parts.append(f'</table><p>{esc(fit_line(scaling))}</p>')
        bad = failure_lines(sweep)
        if bad:
            parts.append('<p>Guests without a valid result (not averaged):'
                         '</p><ul>' + ''.join(f'<li>{esc(b.strip())}</li>'
                                              for b in bad) + '</ul>')
    data = base64.b64encode(png).decode('ascii')
    parts.append(f'<img alt="{esc(title)}" src="data:image/png;base64,'
                 f'{data}"></body></html>')
    return '\n'.join(parts)
