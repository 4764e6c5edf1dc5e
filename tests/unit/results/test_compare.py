"""kvmtune.results.compare: whether results compare, on records as
kvmtune and Rally write them (tests/unit/results/test_records.py _rec)."""

import pytest

from kvmtune.errors import InputError
from kvmtune.results import compare
from tests.unit.results.test_records import _rec


def test_different_workloads_are_refused():
    with pytest.raises(InputError, match='different workloads') as exc:
        compare.check([_rec(), _rec('fio-randwrite-4k')],
                      ['a.json', 'b.json'])
    assert exc.value.source == 'b.json'


def test_same_everything_gives_no_warning():
    assert compare.check([_rec(), _rec()], ['a', 'b']) == []


def test_differences_are_warned_one_line_each():
    lines = compare.check(
        [_rec(), _rec(digest='b', accel='kvm', params={'size': '1G'},
                      runtime=20)], ['a.json', 'b.json'])
    text = '\n'.join(lines)
    assert 'different hosts' in text and 'host-a' in text
    assert 'different accelerators' in text
    assert 'different workload parameters' in text
    assert 'different runtimes' in text
    assert all(line.startswith('warning: ') for line in lines)


def test_a_bare_host_baseline_is_no_other_accelerator():
    assert compare.check([_rec(), _rec(accel='bare', kind='baseline')],
                         ['a', 'b']) == []


def test_a_result_without_record_is_warned_not_refused():
    # compared by the workload its rows name
    lines = compare.check([None, _rec()], ['old.json', 'new.json'],
                          [{'fio-randread-4k'}, {'fio-randread-4k'}])
    assert len(lines) == 1 and 'old.json carries no record' in lines[0]
    with pytest.raises(InputError, match='workload fio-randwrite-4k'):
        compare.check([None, _rec()], ['old.json', 'new.json'],
                      [{'fio-randwrite-4k'}, set()])
    with pytest.raises(InputError, match='rows name no workload'):
        compare.check([None, _rec()], ['old.json', 'new.json'])


def _without(path, value=None):
    """_rec() with the key at ``path`` (dotted) set to ``value``."""
    rec = _rec()
    *parents, last = path.split('.')
    part = rec
    for key in parents:
        part = part[key]
    part[last] = value
    return rec


@pytest.mark.parametrize('path', ['workload', 'workload.name',
                                  'workload.params', 'accel'])
def test_a_record_that_does_not_say_what_it_measured_is_refused(path):
    # a null here turned the comparison's check off
    with pytest.raises(InputError) as exc:
        compare.check([_rec(), _without(path)], ['a.json', 'b.json'],
                      [{'fio-randread-4k'}, {'fio-randread-4k'}])
    assert exc.value.source == 'b.json'
    assert exc.value.key == f'record.{path}'
    assert 'cannot be known' in exc.value.line()


def test_a_rally_record_may_not_know_the_accelerator_it_is_warned():
    # Rally on a cloud without the main job's record: no accel to say
    lines = compare.check([_rec(), _rec(kind='rally-sweep', accel=None)],
                          ['a.json', 'b.json'])
    assert any('b.json: its record does not say how its guests ran' in
               line for line in lines)


def test_a_record_its_rows_contradict_is_refused():
    with pytest.raises(InputError, match='says workload fio-randread-4k, '
                                         'its rows measured fio-randw'):
        compare.check([_rec(), _rec()], ['a.json', 'b.json'],
                      [{'fio-randread-4k'}, {'fio-randwrite-4k'}])


def test_one_result_is_no_comparison():
    assert compare.check([_without('workload.name')], ['a.json']) == []
