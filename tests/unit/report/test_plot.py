"""The plot (kvmtune.report.plot): the per-VM figure and latency."""

import struct

from kvmtune.report import plot
from tests.unit.report.runs import analysed
from tests.unit.report.runs import before_after_bare


def test_the_png_is_the_figure_at_100_dpi(tmp_path):
    png = plot.png_bytes(analysed(tmp_path, *before_after_bare()))
    assert png[:8] == b'\x89PNG\r\n\x1a\n'
    assert struct.unpack('>II', png[16:24]) == (1200, 480)
