"""The report's one renderer of an Analysis (kvmtune.results.analysis):
text and tables (kvmtune.report.render), the PNG plot
(kvmtune.report.plot) and the HTML page of both (kvmtune.report.page).

Runs come from kvmtune.results (one reader per source) and are analysed
there; ``kvmtune report FILE...`` is always a comparison of the runs its
files hold, one file included.
"""

from kvmtune.report import page
from kvmtune.report import plot
from kvmtune.report import render

__all__ = ['page', 'plot', 'render']
