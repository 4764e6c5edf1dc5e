"""The report: ``analyse(runs) -> Analysis`` (kvmtune.report.analysis)
and its one renderer: text and tables (kvmtune.report.render), the PNG
plot (kvmtune.report.plot) and the HTML page of both
(kvmtune.report.page).

Runs come from kvmtune.results (one reader per source); ``kvmtune report
FILE...`` is always a comparison of the runs its files hold, one file
included.
"""

from typing import Sequence

from kvmtune.errors import InputError
from kvmtune.report import analysis
from kvmtune.report import page
from kvmtune.report import plot
from kvmtune.report import render


def load(paths: Sequence[str]) -> analysis.Analysis:
    """The Analysis of the runs in result files (kvmtune.results.read)."""
    from kvmtune.results import read

    return analysis.analyse(read.load_all(list(paths)))


def analyse(results_path: str,
            baseline_path: str | None = None) -> analysis.Analysis:
    """``load([results_path, baseline_path])``: the main job's call."""
    return load([results_path] + ([baseline_path] if baseline_path
                                  else []))


def write_atomic(path: str, data: bytes) -> bool:
    """Write bytes to ``path`` with kvmtune.fileio (a device, FIFO or
    directory is refused); False when it already holds them."""
    from kvmtune import fileio
    from kvmtune import inputs

    _, old = fileio.resolve(path)
    if old is not None:
        try:
            if inputs.read_bytes(path, max_bytes=len(data)) == data:
                return False
        except InputError:
            pass            # unreadable or bigger: it differs
    fileio.write_atomic(path, data)
    return True


__all__ = ['analyse', 'analysis', 'load', 'page', 'plot', 'render',
           'write_atomic']
