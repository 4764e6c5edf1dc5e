"""The report's one renderer of an Analysis (kvmtune.results.analysis):
text and tables (kvmtune.report.render), the PNG plot
(kvmtune.report.plot) and the HTML page of both (kvmtune.report.page).

Runs come from kvmtune.results (one reader per source) and are analysed
there; ``kvmtune report FILE...`` is always a comparison of the runs its
files hold, one file included.
"""


from kvmtune.errors import InputError
from kvmtune.report import page
from kvmtune.report import plot
from kvmtune.report import render


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


__all__ = ['page', 'plot', 'render', 'write_atomic']
