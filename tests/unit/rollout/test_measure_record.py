"""The measurements section of a rollout's state file: the record's
shape, resuming mid-measurement, inconclusive -> more -> a person,
--accept, and the textfile series read by prometheus_client."""

import json
import math
import random

from prometheus_client.parser import text_string_to_metric_families
import pytest

from kvmtune.errors import InputError
from kvmtune.rollout import measure_record as mr
from kvmtune import textfile
from kvmtune.tuning import measure

MEASURE = measure.parse({'workloads': ['fio-randread'],
                         'band': {'iops': '>= -5%'}, 'samples': 10,
                         'max_samples': 20}, 'p.yaml')


def _values(seed, median, n, start=0, sigma=0.03):
    rng = random.Random(seed)
    return [(f'vm{i % 5}', i // 5, median * math.exp(rng.gauss(0, sigma)))
            for i in range(start, start + n)]


def _begin(data, plan='sha256:p', facts='sha256:f'):
    return mr.begin(data, 'c2', 'c7', 'fio-randread', 'iops', MEASURE,
                    provider='kvmtune bench', plan_hash=plan,
                    facts_hash=facts)


def _fill(record, change=1.1, n=10, start=0, sigma=0.03):
    mr.add(record, 'canary', 'before', _values(1, 1000, n, start, sigma))
    mr.add(record, 'canary', 'after',
           _values(2, 1000 * change, n, start, sigma))
    mr.add(record, 'control', 'before', _values(3, 800, n, start, sigma))
    mr.add(record, 'control', 'after', _values(4, 800, n, start, sigma))


def test_a_judged_record_has_the_schema():
    data = mr.empty()
    record = _begin(data)
    _fill(record)
    assert mr.judge(record) == 'pass'
    doc = json.loads(json.dumps(mr.store({'run_id': 'r'}, data)))
    back = mr.section(doc)
    got = back['hosts']['c2']['metrics']['fio-randread/iops']
    assert set(got) == {
        'workload', 'metric', 'provider', 'band', 'confidence', 'target',
        'plan_hash', 'facts_hash', 'samples', 'statistic', 'estimate',
        'interval', 'p_canary', 'p_control', 'seed', 'resamples',
        'verdict', 'reason'}
    assert got['statistic'] == 'did-ratio-of-medians'
    assert got['band'] == '>= -5%'
    assert got['samples']['canary']['before'][0] == {
        'vm': 'vm0', 'repeat': 0, 'value': got['samples']['canary'][
            'before'][0]['value']}
    assert back['version'] == 1
    assert back['hosts']['c2']['control'] == 'c7'
    assert mr.host_verdict(back, 'c2') == 'pass'


def test_resume_in_the_middle_of_a_measurement():
    data = mr.empty()
    record = _begin(data)
    mr.add(record, 'canary', 'before', _values(1, 1000, 10))
    mr.add(record, 'control', 'before', _values(3, 800, 10))
    mr.add(record, 'canary', 'after', _values(2, 1100, 4))
    # killed here; the file is read again
    doc = json.loads(json.dumps(mr.store({}, data)))
    data = mr.section(doc)
    record = _begin(data)
    assert mr.missing(record) == {('canary', 'after'): 6,
                                  ('control', 'after'): 10}
    assert mr.next_action(record, MEASURE.max_samples) == 'measure'
    assert mr.judge(record) == 'pending'
    assert 'canary after needs 6 more' in record['reason']
    # the step made again adds what is missing only
    assert mr.add(record, 'canary', 'after', _values(2, 1100, 10)) == 6
    assert mr.add(record, 'control', 'after', _values(4, 800, 10)) == 10
    assert mr.missing(record) == {}
    assert mr.next_action(record, MEASURE.max_samples) == 'judge'
    assert mr.judge(record) == 'pass'
    assert mr.next_action(record, MEASURE.max_samples) == 'done'


def test_a_changed_plan_drops_the_samples():
    data = mr.empty()
    record = _begin(data)
    _fill(record)
    assert _begin(data) is record
    fresh = _begin(data, plan='sha256:other')
    assert fresh is not record
    assert mr.missing(fresh)[('canary', 'before')] == 10


def test_inconclusive_measures_more_then_stops_for_a_person():
    data = mr.empty()
    record = _begin(data)
    _fill(record, change=0.95, sigma=0.2)
    assert mr.judge(record) == 'inconclusive'
    assert mr.next_action(record, MEASURE.max_samples) == 'more'
    assert mr.more(record, 10, MEASURE.max_samples) == 20
    assert mr.next_action(record, MEASURE.max_samples) == 'measure'
    _fill(record, change=0.95, n=10, start=10, sigma=0.2)
    assert len(record['samples']['control']['after']) == 20
    assert mr.judge(record) == 'inconclusive'
    assert mr.next_action(record, MEASURE.max_samples) == 'person'
    assert mr.host_verdict(data, 'c2') == 'inconclusive'
    mr.accept(data, 'c2', 'a 5 % loss on fio is known on this backend',
              now='2026-12-01T22:00:00Z')
    assert data['hosts']['c2']['accepted'] == {
        'reason': 'a 5 % loss on fio is known on this backend',
        'at': '2026-12-01T22:00:00Z'}
    assert mr.host_verdict(data, 'c2') == 'accepted'
    # the record's own verdict stays what was measured
    assert record['verdict'] == 'inconclusive'


def test_an_acceptance_needs_a_host_and_a_reason():
    data = mr.empty()
    _begin(data)
    with pytest.raises(InputError, match='no measurement of c9'):
        mr.accept(data, 'c9', 'why')
    with pytest.raises(InputError, match='needs its reason'):
        mr.accept(data, 'c2', '  ')


@pytest.mark.parametrize('mangle, words', [
    (lambda d: d.update(measurements=[]), 'version and hosts'),
    (lambda d: d['measurements'].update(version=2), 'version 2'),
    (lambda d: d['measurements']['hosts']['c2'].pop('metrics'),
     'its metrics'),
    (lambda d: d['measurements']['hosts']['c2']['metrics'][
        'fio-randread/iops'].pop('band'), 'lacks band'),
    (lambda d: d['measurements']['hosts']['c2']['metrics'][
        'fio-randread/iops']['samples'].pop('control'),
     'canary and control'),
    (lambda d: d['measurements']['hosts']['c2']['metrics'][
        'fio-randread/iops']['samples']['canary'].update(before=[1.0]),
     '{vm, repeat, value}'),
    (lambda d: d['measurements']['hosts']['c2']['metrics'][
        'fio-randread/iops'].update(band='better'), 'not a band'),
    (lambda d: d['measurements']['hosts']['c2']['metrics'][
        'fio-randread/iops']['samples']['canary']['after'][0].update(
            value='fast'), 'a number'),
    (lambda d: d['measurements']['hosts']['c2']['metrics'][
        'fio-randread/iops']['samples']['canary']['after'][0].update(
            repeat=True), 'a count'),
    (lambda d: d['measurements']['hosts']['c2']['metrics'][
        'fio-randread/iops'].update(interval=[1, 'x']), 'two numbers'),
    (lambda d: d['measurements']['hosts']['c2']['metrics'][
        'fio-randread/iops'].update(estimate=None), 'without its estimate'),
    (lambda d: d['measurements']['hosts']['c2']['metrics'][
        'fio-randread/iops'].update(verdict='great'), "verdict 'great'"),
    (lambda d: d['measurements']['hosts']['c2']['metrics'][
        'fio-randread/iops'].update(target=0), 'positive count'),
    (lambda d: d['measurements']['hosts']['c2']['metrics'][
        'fio-randread/iops'].update(confidence=2), 'confidence'),
    (lambda d: d['measurements']['hosts']['c2'].update(control=None),
     'name its control'),
    (lambda d: d['measurements']['hosts']['c2'].update(accepted='yes'),
     '{reason, at}'),
])
def test_a_bad_section_is_one_line(mangle, words):
    data = mr.empty()
    record = _begin(data)
    _fill(record)
    mr.judge(record)
    doc = json.loads(json.dumps(mr.store({}, data)))
    assert mr.section(doc)
    mangle(doc)
    with pytest.raises(InputError) as err:
        mr.section(doc, 'rollout.json')
    line = err.value.line()
    assert line.startswith('rollout.json: ')
    assert words in line
    assert '\n' not in line


def test_no_section_is_an_empty_one():
    assert mr.section({'run_id': 'r'}) == {'version': 1, 'hosts': {}}


def test_the_textfile_series_as_prometheus_reads_them():
    data = mr.empty()
    record = _begin(data)
    _fill(record)
    mr.judge(record)
    mr.begin(data, 'c3', 'c7', 'fio-randread', 'iops', MEASURE,
             provider='kvmtune bench', plan_hash='p', facts_hash='f')
    text = textfile.render(mr.families(data))
    got = {(s.name, tuple(sorted(s.labels.items()))): s.value
           for f in text_string_to_metric_families(text) for s in f.samples}
    labels = (('hostname', 'c2'), ('metric', 'fio-randread/iops'))
    assert got[('kvmtune_canary_ratio', labels)] == pytest.approx(
        record['estimate'])
    assert got[('kvmtune_canary_ratio_low', labels)] == pytest.approx(
        record['interval'][0])
    assert got[('kvmtune_canary_ratio_high', labels)] == pytest.approx(
        record['interval'][1])
    assert got[('kvmtune_canary_verdict', labels + (('verdict', 'pass'),))] \
        == 1
    # a record not judged has a verdict and no ratio
    assert ('kvmtune_canary_verdict',
            (('hostname', 'c3'), ('metric', 'fio-randread/iops'),
             ('verdict', 'pending'))) in got
    assert not any(k[0] == 'kvmtune_canary_ratio' and ('hostname', 'c3')
                   in k[1] for k in got)


def test_digest_is_canonical():
    assert mr.digest({'a': 1, 'b': [2]}) == mr.digest({'b': [2], 'a': 1})
    assert mr.digest({'a': 1}) != mr.digest({'a': 2})
    assert mr.digest({}).startswith('sha256:')


def test_new_samples_drop_the_figures_judged_on_the_old():
    data = mr.empty()
    record = _begin(data)
    _fill(record)
    mr.judge(record)
    assert record['interval'] is not None
    mr.more(record, 5, MEASURE.max_samples)
    assert record['verdict'] == 'pending'
    assert record['interval'] is None and record['estimate'] is None
    mr.judge(record)
    assert record['interval'] is None
    _fill(record, n=5, start=10)
    assert mr.judge(record) == 'pass'
    assert record['interval'] is not None
