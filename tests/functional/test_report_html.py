"""`kvmtune report --html` opened in headless Chromium, as a reader opens
it: the page of real result files (two Rally disk sweeps of the test
cloud under TCG and a `kvmtune baseline` of the same workload on the
bare host, tests/fixtures/outputs) loads without a console message, an
exception or a failed request, shows the results table with the
analysis' figures and the plot decoded, and leaves a screenshot for a
person to look at.

Needs Debian's chromium (tools/bootstrap installs it) and no cloud:
tools/run-functional runs it beside the benchmark guest's tests. In CI
(KVMTUNE_FUNCTIONAL=1) a missing chromium fails; elsewhere it skips.
"""

import base64
import json
import pathlib
import struct


from kvmtune.report import render
from kvmtune.results import analysis
from kvmtune.results import units
from tests import chromium
from tests.functional.conftest import kvmtune_process
from tests import paths

OUTPUTS = pathlib.Path(paths.FIXTURES) / 'outputs'
SWEEPS = [OUTPUTS / 'rally-disk-sweep-1-6-10-signal-tcg.json',
          OUTPUTS / 'rally-disk-sweep-1-at-tcg.json']
BASELINE = OUTPUTS / 'baseline-fio-randread-4k-bare.json'
# what the page shows, read in the browser: cell texts of the results
# table, the plot's decoded size (after img.decode()), title, label
READ_PAGE = '''(async () => {
  const img = document.querySelector('img.plot');
  await img.decode();
  return {
    rows: [...document.querySelectorAll('table.results tr')].map(
      tr => [...tr.cells].map(c => c.textContent)),
    img: {complete: img.complete, width: img.naturalWidth,
          height: img.naturalHeight},
    title: document.title,
    emulated: document.querySelector('.emulated')?.textContent ?? null,
  };
})()'''


def png_size(data):
    """(width, height) from a PNG's IHDR."""
    assert data[:8] == b'\x89PNG\r\n\x1a\n'
    return struct.unpack('>II', data[16:24])


def test_the_report_page_in_chromium(tmp_path, browser):
    html, png = tmp_path / 'report.html', tmp_path / 'report.png'
    done = kvmtune_process('report', *SWEEPS, '--baseline', BASELINE,
                           '--html', html, '--png', png)
    assert done.rc == 0, done.err
    assert f'wrote {html}' in done.out
    an = analysis.load([str(p) for p in [*SWEEPS, BASELINE]])
    assert an.emulated and an.bare is not None and not an.step_table

    page = chromium.open_page(browser, html.as_uri())
    try:
        shown = page.evaluate(READ_PAGE)
        shot = tmp_path / 'screenshot.png'
        page.screenshot(str(shot))
    finally:
        page.close()
    print(f'screenshot: {shot}')
    assert chromium.problems(page.events) == []
    assert png_size(shot.read_bytes())[0] == 1280

    # the results table: a row per run and VM count, then the bare host,
    # each with the analysis' per-VM figure and share of the bare host
    header, *rows = shown['rows']
    at = {name: header.index(name) for name in (
        'VMs', 'run', f'per-VM {an.unit}', 'share of bare host')}
    by = {(r[at['VMs']], r[at['run']]): r for r in rows}
    expected = [(str(p.vms), run.label, p) for run in an.guests
                for p in an.points[run.label]] + [('-', 'bare host',
                                                   an.bare)]
    assert len(rows) == len(expected) == 5
    for vms, label, p in expected:
        row = by[vms, label]
        assert row[at[f'per-VM {an.unit}']] == render.number(p.per_vm,
                                                             an.scale)
        share = p.per_vm / an.bare.per_vm * 100.0
        assert row[at['share of bare host']] == f'{share:.1f}%'

    # the plot: decoded at the size of the PNG --png wrote, which is the
    # very figure the page carries
    assert shown['img'] == {'complete': True, 'width': png_size(
        png.read_bytes())[0], 'height': png_size(png.read_bytes())[1]}
    assert shown['img']['width'] > 0
    text = html.read_text()
    prefix = 'data:image/png;base64,'
    data = text[text.index(prefix) + len(prefix):].split('"', 1)[0]
    assert base64.b64decode(data) == png.read_bytes()

    # TCG guests: labelled emulated on the page and in its title
    assert units.EMULATED in shown['title']
    assert units.EMULATED in shown['emulated']
    print(json.dumps({'rows': len(rows), 'img': shown['img']}))
