"""The canary gate's report: the measurements section of a rollout's
state file (kvmtune.rollout.measure_record) as a table, a JSON document
and a self-contained HTML page with one plot per metric.

Each metric's plot (inline SVG, so the page needs neither matplotlib nor
any file beside it) has a row per host: at the left the samples before
and after, canary (blue) and control (grey), each as a share of its own
median before, with the medians joined; at the right the change's
interval (the difference-in-differences ratio of medians minus one)
against the profile's band, green where the band allows, the verdict
written beside it. Page elements a reader (and
tests/functional/test_canary_report_html.py) finds them by: ``<table
class="hosts">``, ``<table class="records">``, ``<table
class="outliers">``, ``<figure class="plot" data-metric=...>``, and a
verdict cell's class ``verdict verdict-VERDICT``.
"""

from collections.abc import Mapping
from collections.abc import Sequence
import html
import math
from typing import Any

from kvmtune.rollout import canary
from kvmtune.rollout import measure_record
from kvmtune.rollout.peers import Outlier
from kvmtune import stats
from kvmtune.tuning.measure import parse_band

COLUMNS = ('host', 'control', 'metric', 'samples', 'change', 'interval',
           'band', 'verdict', 'reason')
HOST_COLUMNS = ('host', 'control', 'verdict', 'accepted')
OUTLIER_COLUMNS = ('host', 'class', 'metric', 'median', 'peers', 'z',
                   'differs')
COLOURS = {'pass': '#1a7f37', 'fail': '#c62828', 'inconclusive': '#b26a00',
           'refused': '#6a1b9a', 'error': '#c62828', 'pending': '#666',
           'accepted': '#1565c0'}
_CANARY, _CONTROL = '#1f5fbf', '#888'


def _pct(ratio: float | None) -> str:
    return '-' if ratio is None else f'{(ratio - 1) * 100:+.1f} %'


def _counts(record: Mapping[str, Any]) -> str:
    s = record['samples']
    return ' '.join(f"{len(s[side]['before'])}/{len(s[side]['after'])}"
                    for side in canary.SIDES)


def rows(data: Mapping[str, Any]) -> list[list[str]]:
    """One row per host and metric (COLUMNS); samples are canary and
    control, before/after."""
    out = []
    for host, entry in sorted(data['hosts'].items()):
        for name, record in sorted(entry['metrics'].items()):
            interval = record.get('interval')
            out.append([
                host, entry['control'], name, _counts(record),
                _pct(record.get('estimate')),
                (f'[{_pct(interval[0])}, {_pct(interval[1])}]'
                 if interval else '-'),
                record['band'], record.get('verdict', canary.PENDING),
                record.get('reason', '')])
    return out


def host_rows(data: Mapping[str, Any]) -> list[list[str]]:
    """One row per host (HOST_COLUMNS): its worst metric's verdict, or
    accepted with the person's reason."""
    out = []
    for host, entry in sorted(data['hosts'].items()):
        accepted = entry.get('accepted') or {}
        out.append([host, entry['control'],
                    measure_record.host_verdict(data, host),
                    (f"{accepted['reason']} ({accepted['at']})"
                     if accepted else '-')])
    return out


def outlier_rows(found: Sequence[Outlier]) -> list[list[str]]:
    return [[o.host, o.hardware_class, o.metric, f'{o.value:.4g}',
             f'{o.peer_median:.4g}',
             f'{o.z:+.1f}' if math.isfinite(o.z) else 'inf',
             '; '.join(f'{k}: {mine} (peers {theirs})'
                       for k, (mine, theirs) in o.differs.items()) or '-']
            for o in found]


def medians(data: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """Each measured host's median after its change, per metric: what
    the peer outliers compare (kvmtune.rollout.peers)."""
    out: dict[str, dict[str, float]] = {}
    for host, entry in data['hosts'].items():
        for name, record in entry['metrics'].items():
            after = measure_record.values(record)['canary']['after']
            if after:
                out.setdefault(host, {})[name] = stats.median(after)
    return out


def _figure(row: Any, metric: str) -> float | None:
    """A result row's figure of one of kvmtune.tuning.measure.METRICS."""
    if metric.startswith('lat_ns.'):
        value = getattr(row.lat_ns, metric.split('.', 1)[1])
    else:
        value = getattr(row, metric)
    return value if isinstance(value, (int, float)) and value > 0 else None


def bench_medians(paths: Sequence[str]) -> dict[str, dict[str, float]]:
    """Each host's median per workload and metric over the valid guests
    of ``kvmtune bench local`` (and Rally, nested) result files, keyed
    by the hostname the file's record names; a file without one is
    refused (kvmtune.results reads them)."""
    from kvmtune.errors import InputError
    from kvmtune.results import read
    from kvmtune.tuning.measure import METRICS

    out: dict[str, dict[str, float]] = {}
    for path in paths:
        for run in read.load(path, many=True):
            if run.bare:
                continue
            host = ((run.record or {}).get('host') or {}).get('hostname')
            if not host:
                raise InputError('names no host (its record has no '
                                 'host.hostname)', source=path,
                                 fix='give a result file kvmtune wrote '
                                     'on a compute host')
            rows = [r for r in run.rows if r.ok]
            for metric in METRICS:
                figures = [f for f in (_figure(r, metric) for r in rows)
                           if f is not None]
                if figures:
                    out.setdefault(host, {})[
                        f'{run.workload}/{metric}'] = stats.median(figures)
    return out


def document(data: Mapping[str, Any],
             found: Sequence[Outlier] = ()) -> dict[str, Any]:
    """-f json / yaml: the hosts' verdicts, the records and the
    outliers."""
    return {'hosts': [dict(zip(HOST_COLUMNS, r)) for r in host_rows(data)],
            'records': [dict(zip(COLUMNS, r)) for r in rows(data)],
            'outliers': [o.to_dict() for o in found],
            'measurements': dict(data)}


def _table(header: Sequence[str], body: Sequence[Sequence[str]],
           kind: str, verdict_at: int | None = None) -> str:
    esc = html.escape
    out = [f'<table class="{kind}"><tr>'
           + ''.join(f'<th>{esc(c)}</th>' for c in header) + '</tr>']
    for row in body:
        cells = []
        for i, cell in enumerate(row):
            if i == verdict_at:
                cells.append(f'<td class="verdict verdict-{esc(cell)}" '
                             f'style="color:{COLOURS.get(cell, "#000")}">'
                             f'{esc(cell)}</td>')
            else:
                cells.append(f'<td>{esc(cell)}</td>')
        out.append('<tr>' + ''.join(cells) + '</tr>')
    return ''.join(out) + '</table>'


# the plot's geometry (SVG user units)
_W, _ROW, _TOP = 960, 64, 40
_LEFT = (170, 450)       # the samples panel
_RIGHT = (500, 840)      # the interval panel; the verdict after it


def _change_range(records: Sequence[Mapping[str, Any]]) -> tuple[float,
                                                                 float]:
    """The interval panel's range of changes (ratio - 1): every interval
    and band edge, with a margin, and 0 always."""
    points = [0.0]
    for record in records:
        points.append(parse_band(record['band']).limit - 1)
        if record.get('interval'):
            points += [record['interval'][0] - 1, record['interval'][1] - 1]
    lo, hi = min(points), max(points)
    pad = max((hi - lo) * 0.1, 0.01)
    return lo - pad, hi + pad


def _samples_panel(record: Mapping[str, Any], y0: float) -> list[str]:
    """Before and after, canary and control, as shares of their own
    median before, in one row."""
    vals = measure_record.values(record)
    shares: dict[str, dict[str, list[float]]] = {}
    for side in canary.SIDES:
        before = vals[side]['before']
        base = stats.median(before) if before else None
        shares[side] = {m: [v / base for v in vals[side][m]] if base else []
                        for m in canary.MOMENTS}
    every = [v for s in shares.values() for m in s.values() for v in m]
    if not every:
        return [f'<text x="{_LEFT[0]}" y="{y0 + _ROW / 2}" '
                'class="none">no samples yet</text>']
    lo, hi = min(every + [1.0]), max(every + [1.0])
    span = (hi - lo) or 0.1
    lo, hi = lo - span * 0.1, hi + span * 0.1

    def y(v: float) -> float:
        return y0 + 6 + (1 - (v - lo) / (hi - lo)) * (_ROW - 16)

    xs = {('canary', 'before'): _LEFT[0] + 30,
          ('canary', 'after'): _LEFT[0] + 150,
          ('control', 'before'): _LEFT[0] + 60,
          ('control', 'after'): _LEFT[0] + 180}
    out = [f'<line x1="{_LEFT[0]}" x2="{_LEFT[1]}" y1="{y(1):.1f}" '
           f'y2="{y(1):.1f}" stroke="#ddd"/>']
    for side, colour in (('control', _CONTROL), ('canary', _CANARY)):
        mids = []
        for moment in canary.MOMENTS:
            x = xs[(side, moment)]
            values = shares[side][moment]
            for i, v in enumerate(values):
                jitter = ((i * 7) % 11 - 5) * 1.2
                out.append(f'<circle cx="{x + jitter:.1f}" cy="{y(v):.1f}" '
                           f'r="2" fill="{colour}" fill-opacity="0.6"/>')
            if values:
                mids.append((x, y(stats.median(values))))
        if len(mids) == 2:
            (x1, y1), (x2, y2) = mids
            out.append(f'<line class="median-{side}" x1="{x1}" y1="{y1:.1f}" '
                       f'x2="{x2}" y2="{y2:.1f}" stroke="{colour}" '
                       'stroke-width="2"/>')
    out.append(f'<text x="{_LEFT[1] - 40}" y="{y(hi) + 10:.1f}" '
               f'font-size="9" fill="#666">{(hi - 1) * 100:+.0f} %</text>')
    out.append(f'<text x="{_LEFT[1] - 40}" y="{y(lo):.1f}" '
               f'font-size="9" fill="#666">{(lo - 1) * 100:+.0f} %</text>')
    return out


def _interval_panel(record: Mapping[str, Any], y0: float,
                    rng: tuple[float, float]) -> list[str]:
    lo, hi = rng

    def x(change: float) -> float:
        return _RIGHT[0] + (change - lo) / (hi - lo) * (_RIGHT[1] - _RIGHT[0])

    band = parse_band(record['band'])
    edge = band.limit - 1
    mid = y0 + _ROW / 2
    allowed = ((x(edge), x(hi)) if band.op == '>=' else (x(lo), x(edge)))
    verdict = record.get('verdict', canary.PENDING)
    colour = COLOURS.get(verdict, '#000')
    out = [f'<rect x="{allowed[0]:.1f}" y="{y0 + 8}" '
           f'width="{allowed[1] - allowed[0]:.1f}" height="{_ROW - 16}" '
           'fill="#e6f4ea" class="band"/>',
           f'<line x1="{x(edge):.1f}" x2="{x(edge):.1f}" y1="{y0 + 6}" '
           f'y2="{y0 + _ROW - 6}" stroke="#2e7d32" stroke-dasharray="4 2"/>',
           f'<line x1="{x(0):.1f}" x2="{x(0):.1f}" y1="{y0 + 6}" '
           f'y2="{y0 + _ROW - 6}" stroke="#bbb"/>']
    if record.get('interval'):
        a, b = record['interval'][0] - 1, record['interval'][1] - 1
        est = x(record['estimate'] - 1)
        out += [f'<line class="interval" x1="{x(a):.1f}" x2="{x(b):.1f}" '
                f'y1="{mid}" y2="{mid}" stroke="{colour}" stroke-width="6"/>',
                f'<circle class="estimate" cx="{est:.1f}"'
                f' cy="{mid}" r="5" fill="#fff" stroke="{colour}" '
                'stroke-width="2"/>']
    out.append(f'<text x="{_RIGHT[1] + 10}" y="{mid + 5}" font-size="15" '
               f'font-weight="bold" fill="{colour}" class="verdict">'
               f'{html.escape(verdict)}</text>')
    return out


def svg(metric: str, entries: Sequence[tuple[str, Mapping[str, Any]]]
        ) -> str:
    """One metric's plot: a row per (host, record)."""
    esc = html.escape
    rng = _change_range([r for _, r in entries])
    height = _TOP + _ROW * len(entries) + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" '
           f'height="{height}" viewBox="0 0 {_W} {height}" '
           'font-family="sans-serif" font-size="12">',
           f'<text x="{_LEFT[0]}" y="16" font-weight="bold">samples, share of '
           'their own median before</text>',
           f'<text x="{_LEFT[0] + 20}" y="32" fill="#666">before'
           f'</text><text x="{_LEFT[0] + 140}" y="32" fill="#666">after</text>'
           f'<text x="{_LEFT[0] + 200}" y="32" fill="{_CANARY}">canary</text>'
           f'<text x="{_LEFT[0] + 250}" y="32" fill="{_CONTROL}">control'
           '</text>',
           f'<text x="{_RIGHT[0]}" y="16" font-weight="bold">change against '
           'the control: interval, estimate, band</text>',
           f'<text x="{_RIGHT[0]}" y="32" fill="#2e7d32">band '
           f'{esc(", ".join(sorted({r["band"] for _, r in entries})))} '
           '(green: allowed; dashed: its edge)</text>']
    for n, (host, record) in enumerate(entries):
        y0 = _TOP + n * _ROW
        if n % 2:
            out.append(f'<rect x="0" y="{y0}" width="{_W}" height="{_ROW}" '
                       'fill="#fafafa"/>')
        out.append(f'<text x="8" y="{y0 + _ROW / 2 - 2}" font-weight="bold">'
                   f'{esc(host)}</text><text x="8" y="{y0 + _ROW / 2 + 14}" '
                   f'fill="#666">control {esc(record["_control"])}</text>')
        out += _samples_panel(record, y0)
        out += _interval_panel(record, y0, rng)
    # the change axis under the rows
    base = _TOP + _ROW * len(entries) + 4
    lo, hi = rng
    out.append(f'<line x1="{_RIGHT[0]}" x2="{_RIGHT[1]}" y1="{base}" '
               f'y2="{base}" stroke="#444"/>')
    for i in range(5):
        change = lo + (hi - lo) * i / 4
        px = _RIGHT[0] + (_RIGHT[1] - _RIGHT[0]) * i / 4
        out.append(f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{base}" '
                   f'y2="{base + 4}" stroke="#444"/><text x="{px:.1f}" '
                   f'y="{base + 16}" text-anchor="middle" font-size="10">'
                   f'{change * 100:+.1f} %</text>')
    out.append('</svg>')
    return ''.join(out)


_CSS = ('body{font-family:sans-serif;margin:2em;max-width:80em}'
        'table{border-collapse:collapse;margin:.5em 0}'
        'td,th{border:1px solid #bbb;padding:.25em .6em;text-align:left;'
        'vertical-align:top;white-space:nowrap}'
        'td:last-child{white-space:normal}.verdict{font-weight:bold}'
        'figure{margin:1em 0}figcaption{color:#444}')


def html_page(data: Mapping[str, Any], title: str,
              found: Sequence[Outlier] = ()) -> str:
    """The self-contained page: the hosts' verdicts, a plot per metric,
    the records, the peer outliers."""
    esc = html.escape
    parts = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
             f'<title>{esc(title)}</title><style>{_CSS}</style></head>'
             f'<body><h1>{esc(title)}</h1>']
    if not data['hosts']:
        parts.append('<p>No host was measured.</p>')
    parts.append('<h2>Hosts</h2>' + _table(
        HOST_COLUMNS, host_rows(data), 'hosts', verdict_at=2))
    by_metric: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for host, entry in sorted(data['hosts'].items()):
        for name, record in sorted(entry['metrics'].items()):
            by_metric.setdefault(name, []).append(
                (host, dict(record, _control=entry['control'])))
    for name, entries in sorted(by_metric.items()):
        bands = sorted({r['band'] for _, r in entries})
        parts.append(
            f'<h2>{esc(name)}</h2><figure class="plot" '
            f'data-metric="{esc(name)}">{svg(name, entries)}<figcaption>'
            f'{esc(name)}: band {esc(", ".join(bands))}; the interval is the '
            'bootstrap interval of (canary after / before) / (control '
            'after / before) at the confidence of the record.'
            '</figcaption></figure>')
    parts.append('<h2>Records</h2>' + _table(COLUMNS, rows(data), 'records',
                                             verdict_at=7))
    parts.append('<h2>Peer outliers</h2>')
    if found:
        parts.append(_table(OUTLIER_COLUMNS, outlier_rows(found),
                            'outliers'))
    else:
        parts.append('<p class="outliers">None found (or no facts were '
                     'given: --facts-dir).</p>')
    parts.append('</body></html>')
    return '\n'.join(parts)


def load(path: str, facts_dir: str | None = None,
         bench: Sequence[str] = ()) -> tuple[dict[str, Any], list[Outlier]]:
    """A state file's measurements, checked, and with ``facts_dir``
    (HOST.json facts, kvmtune.capacity.nodefacts) the peer outliers
    among the measured hosts and the hosts of the ``bench`` result files
    (a host's own records first, where both name a figure)."""
    from kvmtune.capacity import nodefacts
    from kvmtune.errors import InputError
    from kvmtune import inputs
    from kvmtune.rollout import peers

    doc = inputs.load_json(path)
    if not isinstance(doc, dict):
        raise InputError('is not a rollout state file (a JSON object)',
                         source=path,
                         fix='give the file of kvmtune rollout --state')
    data = measure_record.section(doc, path)
    found: list[Outlier] = []
    figures = bench_medians(bench)
    for host, per in medians(data).items():
        figures.setdefault(host, {}).update(per)
    if facts_dir:
        facts, _ = nodefacts.read_dir(facts_dir)
        found = peers.outliers(figures, facts)
    return data, found
