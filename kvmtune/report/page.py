"""The self-contained HTML page of an Analysis: the one renderer's text
(kvmtune.report.render: its tables, fits, failures and budgets) as
HTML, and its plot (kvmtune.report.plot) inline as a PNG data URI, so
that the page is one file that loads nothing else.

The results table is ``<table class="results">``, the fits ``<table
class="fits">`` and the plot ``<img class="plot">``: what a reader, and
tests/functional/test_report_html.py, find them by.
"""

import base64
import html
from typing import Sequence

from kvmtune.report.render import budget_lines
from kvmtune.report.render import failure_lines
from kvmtune.report.render import fit_rows
from kvmtune.report.render import source_lines
from kvmtune.report.render import tables
from kvmtune.report.render import title
from kvmtune.results.analysis import Analysis
from kvmtune.results.units import EMULATED

_CSS = ('body{font-family:sans-serif;margin:2em;max-width:72em}'
        'table{border-collapse:collapse;margin:.5em 0}'
        'td,th{border:1px solid #bbb;padding:.25em .6em;text-align:right}'
        'td:first-child,th:first-child{text-align:left}'
        '.emulated{color:#a40;font-weight:bold}'
        'img{max-width:100%}pre{white-space:pre-wrap}')


def table(header: Sequence[str], rows: Sequence[Sequence[str]],
          kind: str) -> str:
    """One table of the text as HTML, of class ``kind``."""
    esc = html.escape
    return (f'<table class="{kind}"><tr>'
            + ''.join(f'<th>{esc(c)}</th>' for c in header) + '</tr>'
            + ''.join('<tr>' + ''.join(f'<td>{esc(c)}</td>' for c in r)
                      + '</tr>' for r in rows) + '</table>')


def html_page(an: Analysis, png: bytes) -> str:
    """A self-contained page: the text's tables, fits, failures and
    budgets, and the plot (``png``, plot.png_bytes) inline."""
    esc = html.escape
    head = title(an)
    parts = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
             f'<title>{esc(head)}</title><style>{_CSS}</style></head>'
             f'<body><h1>{esc(head)}</h1>']
    if an.emulated:
        parts.append(f'<p class="emulated">Figures are {EMULATED}: they '
                     'show how the run works, not what a KVM host '
                     'delivers.</p>')
    parts.extend(f'<p>{esc(w)}</p>' for w in an.warnings)
    parts.append('<ul>' + ''.join(f'<li>{esc(s.strip())}</li>'
                                  for s in source_lines(an)) + '</ul>')
    if an.metric is None:
        parts.append('<p>No valid result in any run: nothing to '
                     'compare.</p>')
    parts.extend(table(*t, kind='results') for t in tables(an))
    if an.metric is not None and not an.step_table and an.guests:
        parts.append(f'<h2>Linear fits of per-VM {esc(an.unit or "")}</h2>'
                     + table(*fit_rows(an), kind='fits'))
    bad = failure_lines(an)
    if bad:
        parts.append(f'<p>{esc(bad[0])}</p><ul>' + ''.join(
            f'<li>{esc(b.strip())}</li>' for b in bad[1:]) + '</ul>')
    budgets = [line for run in an.runs for line in budget_lines(run)]
    if budgets:
        parts.append('<pre>' + esc('\n'.join(budgets)) + '</pre>')
    data = base64.b64encode(png).decode('ascii')
    parts.append(f'<img class="plot" alt="{esc(head)}" '
                 f'src="data:image/png;base64,{data}"></body></html>')
    return '\n'.join(parts)
