"""The plot (kvmtune.report.plot): the per-VM figure as a share of the
bare host, so that a bare host far above its guests does not press their
curves onto the floor, and latency beside it."""

import struct

import pytest

from kvmtune.report import plot
from kvmtune.results import units
from tests.unit.report.runs import analysed
from tests.unit.report.runs import before_after_bare
from tests.unit.report.runs import sweep


@pytest.fixture
def figures():
    drawn = []

    def draw(an):
        fig = plot.draw(an)
        drawn.append(fig)
        return fig
    yield draw
    from matplotlib import pyplot
    for fig in drawn:
        pyplot.close(fig)


def curve(ax, label):
    line, = (line for line in ax.get_lines() if line.get_label() == label)
    return list(line.get_xdata()), list(line.get_ydata())


def test_a_bare_host_far_above_is_the_axis_not_a_line(tmp_path, figures):
    """Guests at 0.5-4 % of the bare host: the left axis is their share,
    scaled to them, the per-VM figure on the second axis."""
    an = analysed(tmp_path, *sweep(bare=90000.0))
    fig = figures(an)
    ax = fig.axes[0]
    assert ax.get_ylabel() == 'share of bare host'
    for run in an.guests:
        xs, ys = curve(ax, run.label)
        assert xs == [p.vms for p in an.points[run.label]]
        assert ys == [p.share * 100.0 for p in an.points[run.label]]
    shares = [y for run in an.guests for y in curve(ax, run.label)[1]]
    # the highest guest fills the axis but for the headroom (it was 4 %
    # of a 90,000 IOPS axis)
    assert ax.get_ylim() == (0.0, pytest.approx(
        max(shares) * plot.HEADROOM))
    assert all(line.get_label() != 'bare host (100 %)'
               for line in ax.get_lines())
    assert 'share of bare host: 100 % = 90,000 IOPS' in ax.get_title()
    right, = ax.child_axes
    assert right.get_ylabel() == 'per-VM IOPS'
    assert fig.get_suptitle() == units.EMULATED


def test_the_second_axis_reads_the_per_vm_figure(tmp_path, figures):
    an = analysed(tmp_path, *sweep(bare=90000.0))
    ax = figures(an).axes[0]
    right, = ax.child_axes
    # the top of the share axis (4.4 % x headroom) in IOPS of 90,000
    top = ax.get_ylim()[1]
    assert right.get_ylim() == (0.0, pytest.approx(top / 100.0 * 90000.0))
    assert top / 100.0 * 90000.0 == pytest.approx(4000.0 * plot.HEADROOM)


def test_a_bare_host_within_reach_is_the_100_percent_line(
        tmp_path, figures):
    an = analysed(tmp_path, *sweep(bare=4200.0, per_vm=(4000.0, 3000.0,
                                                        2000.0)))
    ax = figures(an).axes[0]
    line, = (line for line in ax.get_lines()
             if line.get_label() == 'bare host (100 %)')
    assert list(line.get_ydata()) == [100.0, 100.0]
    assert ax.get_ylim()[1] >= 100.0


def test_without_a_bare_host_the_axis_is_the_per_vm_figure(
        tmp_path, figures):
    an = analysed(tmp_path, *sweep())
    ax = figures(an).axes[0]
    assert ax.get_ylabel() == 'per-VM IOPS' and not ax.child_axes
    (run,) = an.guests
    assert curve(ax, run.label)[1] == [p.per_vm * an.scale
                                       for p in an.points[run.label]]
    fit = an.fits[run.label]
    dotted, = (line for line in ax.get_lines()
               if line.get_linestyle() == ':')
    assert list(dotted.get_ydata()) == [fit.intercept + fit.slope * n
                                        for n in (1, 6, 10)]


def test_one_vm_count_is_bars_of_the_share(tmp_path, figures):
    """bench local before and after against the bare host: a bar per
    run at its share, latency bars with the bare host's beside them."""
    an = analysed(tmp_path, *before_after_bare())
    fig = figures(an)
    ax, lat = fig.axes[:2]
    assert [b.get_height() for b in ax.patches] == [20.0, 25.0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ['before',
                                                            'after']
    assert [t.get_text() for t in lat.get_xticklabels()] == [
        'before', 'after', 'bare host']
    notes = [t.get_text() for t in ax.texts]
    assert notes == ['+0.0%', '+25.0%']


def test_the_png_is_the_figure_at_100_dpi(tmp_path):
    png = plot.png_bytes(analysed(tmp_path, *sweep(bare=90000.0)))
    assert png[:8] == b'\x89PNG\r\n\x1a\n'
    assert struct.unpack('>II', png[16:24]) == (1200, 480)
