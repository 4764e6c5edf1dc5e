"""`kvmtune rollout-report --html` opened in headless Chromium: the page
of a state file with the canary gate's measurements (tests/canarystate.py:
four hosts, two metrics, judged by kvmtune's own judge) loads without a
console message, an exception or a failed request; it shows a plot per
metric with every host's interval, estimate and readable verdict inside
the figure, the tables with the records' figures, and leaves a
screenshot for a person to look at.

No cloud: one browser and one page, a few seconds (tools/run-functional's
side lane, beside test_report_html.py). In CI (KVMTUNE_FUNCTIONAL=1) a
missing chromium fails; elsewhere it skips.
"""

import json
import os
import shutil


from kvmtune.rollout import measure_record
from tests import canarystate
from tests import chromium
from tests.functional.conftest import kvmtune_process

READ_PAGE = '''(() => {
  const cells = sel => [...document.querySelectorAll(sel + ' tr')].map(
    tr => [...tr.cells].map(c => c.textContent));
  const figures = [...document.querySelectorAll('figure.plot')].map(f => {
    const svg = f.querySelector('svg');
    const box = svg.getBoundingClientRect();
    const inside = el => {
      const b = el.getBoundingClientRect();
      return (b.width > 0 || b.height > 0) && b.left >= box.left - 1 &&
        b.right <= box.right + 1 && b.top >= box.top - 1 &&
        b.bottom <= box.bottom + 1;
    };
    const verdicts = [...svg.querySelectorAll('text.verdict')];
    return {
      metric: f.dataset.metric,
      width: box.width, height: box.height,
      intervals: [...svg.querySelectorAll('line.interval')].filter(
        inside).length,
      estimates: [...svg.querySelectorAll('circle.estimate')].filter(
        inside).length,
      bands: svg.querySelectorAll('rect.band').length,
      medians: svg.querySelectorAll('line.median-canary').length,
      verdicts: verdicts.map(t => ({
        text: t.textContent, inside: inside(t),
        size: parseFloat(getComputedStyle(t).fontSize),
        fill: t.getAttribute('fill')})),
    };
  });
  const verdictCells = [...document.querySelectorAll(
    'table.hosts td.verdict')].map(td => ({
      text: td.textContent, color: getComputedStyle(td).color}));
  return {title: document.title, records: cells('table.records'),
          hosts: cells('table.hosts'), figures, verdictCells};
})()'''


def test_the_canary_report_page_in_chromium(tmp_path, browser):
    state = canarystate.write(tmp_path / 'rollout.json', accept={
        'compute-3': 'noisy storage backend, measured by hand'})
    page_path = tmp_path / 'canary.html'
    done = kvmtune_process('rollout-report', state, '--html', page_path)
    # compute-2 fails: exit 1, the page written all the same
    assert done.rc == 1, done.err
    assert f'wrote {page_path}' in done.out
    data = canarystate.measurements(accept={'compute-3': 'x'})

    page = chromium.open_page(browser, page_path.as_uri())
    try:
        shown = page.evaluate(READ_PAGE)
        shot = tmp_path / 'screenshot.png'
        page.screenshot(str(shot))
    finally:
        page.close()
    print(f'screenshot: {shot}')
    if os.environ.get('KVMTUNE_CANARY_SCREENSHOT'):
        shutil.copy(shot, os.environ['KVMTUNE_CANARY_SCREENSHOT'])
    assert chromium.problems(page.events) == []
    assert shown['title'] == 'Canary gate: rollout.json'

    # a plot per metric, a row per host in each: the interval and the
    # estimate drawn inside the figure, the verdict written readably
    assert [f['metric'] for f in shown['figures']] == [
        'fio-randread/iops', 'iperf3/gbit_s']
    for figure in shown['figures']:
        assert figure['width'] > 600 and figure['height'] > 200
        assert figure['intervals'] == figure['estimates'] == 4
        assert figure['bands'] == 4 and figure['medians'] == 4
        want = [data['hosts'][h]['metrics'][figure['metric']]['verdict']
                for h in sorted(data['hosts'])]
        assert [v['text'] for v in figure['verdicts']] == want
        for verdict in figure['verdicts']:
            assert verdict['inside'], verdict
            assert verdict['size'] >= 12
    verdicts = {v['text'] for f in shown['figures']
                for v in f['verdicts']}
    assert {'pass', 'fail', 'inconclusive'} <= verdicts

    # the hosts' table: worst metric, or accepted with the reason
    header, *rows = shown['hosts']
    by_host = {r[0]: dict(zip(header, r)) for r in rows}
    assert by_host['compute-2']['verdict'] == 'fail'
    assert by_host['compute-3']['verdict'] == 'accepted'
    assert by_host['compute-3']['accepted'].startswith(
        'noisy storage backend')
    colours = {c['text']: c['color'] for c in shown['verdictCells']}
    assert colours['fail'] == 'rgb(198, 40, 40)'
    assert colours['pass'] == 'rgb(26, 127, 55)'

    # the records' table: the judge's figures
    header, *rows = shown['records']
    assert len(rows) == 8
    at = {name: header.index(name) for name in ('host', 'metric', 'change',
                                                'verdict')}
    for row in rows:
        record = data['hosts'][row[at['host']]]['metrics'][row[at['metric']]]
        assert row[at['verdict']] == record['verdict']
        assert row[at['change']] == \
            f"{(record['estimate'] - 1) * 100:+.1f} %"
    assert measure_record.host_verdict(data, 'compute-1') == 'pass'
    print(json.dumps({'figures': len(shown['figures']), 'rows': len(rows)}))
