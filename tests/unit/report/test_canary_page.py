"""The canary gate's report: table rows, JSON document, the page's
elements (its SVG parsed as XML), and the peer outliers from a facts
directory of real captures."""

import copy
import json
import os
import xml.etree.ElementTree as ET

import pytest

from kvmtune.errors import InputError
from kvmtune import facts as host_facts
from kvmtune import jsonout
from kvmtune.report import canary_page
from kvmtune.rollout import measure_record
from tests import canarystate
from tests import paths

SVG = '{http://www.w3.org/2000/svg}'


@pytest.fixture(scope='module')
def data():
    return canarystate.measurements(accept={'compute-3': 'known noise'})


def test_rows_carry_the_records_figures(data):
    rows = canary_page.rows(data)
    assert len(rows) == 8
    by = {(r[0], r[2]): dict(zip(canary_page.COLUMNS, r)) for r in rows}
    row = by[('compute-2', 'fio-randread/iops')]
    record = data['hosts']['compute-2']['metrics']['fio-randread/iops']
    assert row['verdict'] == record['verdict'] == 'fail'
    assert row['change'] == f"{(record['estimate'] - 1) * 100:+.1f} %"
    assert row['samples'] == '10/10 10/10'
    assert row['band'] == '>= -5%'
    hosts = {r[0]: r for r in canary_page.host_rows(data)}
    assert hosts['compute-2'][2] == 'fail'
    assert hosts['compute-3'][2] == 'accepted'
    assert hosts['compute-3'][3] == 'known noise (2026-12-01T22:00:00Z)'
    assert hosts['compute-1'][2] == 'pass'


def test_the_document_is_strict_json(data):
    doc = json.loads(jsonout.dumps(canary_page.document(data)))
    assert [h['host'] for h in doc['hosts']] == sorted(data['hosts'])
    assert doc['measurements']['version'] == 1
    assert doc['outliers'] == []


def _svgs(page):
    out = []
    start = 0
    while (i := page.find('<svg', start)) >= 0:
        j = page.index('</svg>', i) + len('</svg>')
        out.append(ET.fromstring(page[i:j]))
        start = j
    return out


def test_the_page_has_a_plot_per_metric(data):
    page = canary_page.html_page(data, 'Canary gate: t')
    assert page.count('<figure class="plot"') == 2
    assert '<table class="hosts">' in page
    assert '<table class="records">' in page
    svgs = _svgs(page)
    assert len(svgs) == 2
    for svg in svgs:
        intervals = svg.findall(f'{SVG}line[@class="interval"]')
        assert len(intervals) == 4
        verdicts = svg.findall(f'{SVG}text[@class="verdict"]')
        assert len(verdicts) == 4
        width = float(svg.get('width'))
        for line in intervals:
            assert 0 <= float(line.get('x1')) <= float(line.get('x2')) \
                <= width
    assert 'fail' in [t.text for t in svgs[0].findall(
        f'{SVG}text[@class="verdict"]')]


def test_a_host_still_measuring_has_no_interval():
    data = canarystate.measurements(hosts={'c1': ('c9', 1.1, 1.1, 0.02)},
                                    n=10)
    record = data['hosts']['c1']['metrics']['iperf3/gbit_s']
    record['target'] = 12
    measure_record.judge(record)
    page = canary_page.html_page(data, 't')
    svg = _svgs(page)[1]
    assert svg.findall(f'{SVG}line[@class="interval"]') == []
    assert [t.text for t in svg.findall(f'{SVG}text[@class="verdict"]')] \
        == ['pending']
    empty = measure_record.empty()
    assert 'No host was measured' in canary_page.html_page(empty, 't')


def test_the_text_is_escaped():
    data = canarystate.measurements(hosts={'<b>x': ('c&9', 1.1, 1.1, 0.02)})
    page = canary_page.html_page(data, '<t>')
    assert '<b>x' not in page and '&lt;b&gt;x' in page
    assert 'c&amp;9' in page
    for svg in _svgs(page):
        assert svg is not None


def test_load_with_peer_outliers_from_a_facts_directory(tmp_path):
    intel = host_facts.gather(os.path.join(paths.HOSTS,
                                           'intel-2s-smt-ept-1g'))
    hosts = {f'c{i}': ('c9', 1.1, 1.1, 0.02) for i in range(6)}
    hosts['c5'] = ('c9', 0.5, 1.1, 0.02)
    state = canarystate.write(tmp_path / 'rollout.json', hosts=hosts)
    facts_dir = tmp_path / 'facts'
    facts_dir.mkdir()
    for host in hosts:
        f = copy.deepcopy(intel)
        if host == 'c5':
            f['kernel']['cmdline'] += ' mitigations=off'
        (facts_dir / f'{host}.json').write_text(jsonout.dumps(f))
    data, found = canary_page.load(state, str(facts_dir))
    assert sorted(data['hosts']) == sorted(hosts)
    assert [(o.host, o.metric) for o in found] == [
        ('c5', 'fio-randread/iops')]
    assert found[0].differs == {'kernel arguments': ('mitigations=off',
                                                     '-')}
    row = canary_page.outlier_rows(found)[0]
    assert row[-1] == 'kernel arguments: mitigations=off (peers -)'
    assert '<table class="outliers">' in canary_page.html_page(
        data, 't', found)


def test_load_refuses_what_is_not_a_state_file(tmp_path):
    path = tmp_path / 'x.json'
    path.write_text('[1]')
    with pytest.raises(InputError, match='not a rollout state file'):
        canary_page.load(str(path))
    path.write_text('{"measurements": {"version": 9, "hosts": {}}}')
    with pytest.raises(InputError, match='version 9'):
        canary_page.load(str(path))


LOCAL = os.path.join(paths.FIXTURES, 'outputs',
                     'bench-local-2vm-fio-randread-4k-tcg-schema1.json')


def _bench(tmp_path, host, scale):
    doc = json.loads(open(LOCAL).read())
    doc['record']['host']['hostname'] = host
    for row in doc['rows']:
        row['result']['iops'] *= scale
    path = tmp_path / f'{host}.json'
    path.write_text(json.dumps(doc))
    return str(path)


def test_bench_local_results_join_the_peers(tmp_path):
    """Five hosts' bench local files (a real one's, renamed), one at a
    third of the others' IOPS: the peers name it, from its result."""
    amd = host_facts.gather(os.path.join(paths.HOSTS, 'amd-epyc-npt'))
    facts_dir = tmp_path / 'facts'
    facts_dir.mkdir()
    files = []
    for i, scale in enumerate((1.0, 1.02, 0.98, 1.01, 0.33)):
        files.append(_bench(tmp_path, f'b{i}', scale))
        (facts_dir / f'b{i}.json').write_text(jsonout.dumps(amd))
    figures = canary_page.bench_medians(files)
    assert sorted(figures) == ['b0', 'b1', 'b2', 'b3', 'b4']
    doc = json.loads(open(LOCAL).read())
    iops = sorted(r['result']['iops'] for r in doc['rows']
                  if r['status'] == 'ok')
    assert figures['b0']['fio-randread-4k/iops'] == pytest.approx(
        sum(iops) / 2 if len(iops) == 2 else iops[len(iops) // 2])
    assert 'fio-randread-4k/lat_ns.p99' in figures['b0']
    state = canarystate.write(tmp_path / 'rollout.json',
                              hosts={'c1': ('c9', 1.1, 1.1, 0.02)})
    _, found = canary_page.load(state, str(facts_dir), files)
    # only the IOPS were scaled: nothing else stands apart
    assert [(o.host, o.metric) for o in found] == [
        ('b4', 'fio-randread-4k/iops')]
    assert found[0].differs == {}
