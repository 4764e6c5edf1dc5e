"""One entry to every result file: kinds, local sweeps, unique labels."""

import pytest

from kvmtune.errors import InputError
from kvmtune.results import read
from tests.unit.results.test_bench import baseline_doc
from tests.unit.results.test_bench import bench_doc
from tests.unit.results.test_bench import nested_doc
from tests.unit.results.test_bench import result
from tests.unit.results.test_bench import write
from tests.unit.results.test_rally import new_format


def test_every_kind_of_file_is_read(tmp_path):
    paths = [write(tmp_path, 'a.json', bench_doc([result(1000.0)])),
             write(tmp_path, 'r.json', new_format()),
             write(tmp_path, 'n.json', nested_doc()),
             write(tmp_path, 'b.json', baseline_doc(result(9.0)))]
    kinds = [r.kind for p in paths for r in read.load(p)]
    assert kinds == ['bench-local', 'rally', 'rally', 'baseline',
                     'bench-nested', 'bench-nested', 'baseline']


def test_consecutive_local_runs_of_one_setup_are_one_sweep(tmp_path):
    one = write(tmp_path, 'one.json', bench_doc([result(1000.0)]))
    two = write(tmp_path, 'two.json', bench_doc([result(800.0)] * 2))
    other = write(tmp_path, 'o.json', bench_doc(
        [result(900.0)] * 3, settings={'pinning': 'on'}))
    runs = read.load_all([one, two, other])
    assert [(r.label, sorted(r.iterations)) for r in runs] == [
        ('one+', [1, 2]), ('o', [3])]


def test_labels_stay_unique_when_a_file_is_named_like_a_renamed_one(
        tmp_path):
    (tmp_path / 'x').mkdir()
    first = write(tmp_path, 'a.json', bench_doc([result(1000.0)]))
    second = write(tmp_path, 'x/a.json', bench_doc([result(2000.0)]))
    third = write(tmp_path, 'a (2).json', bench_doc([result(3000.0)]))
    runs = read.load_all([first, second, third])
    assert len({r.label for r in runs}) == 3
    assert {r.source: r.rows[0].iops for r in runs} == {
        first: 1000.0, second: 2000.0, third: 3000.0}


@pytest.mark.parametrize('doc, words', [
    ({'kind': 'something-else'}, "unknown result kind 'something-else'"),
    ({'some': 'dict'}, 'not a Rally task result'),
])
def test_what_is_no_result_file(tmp_path, doc, words):
    with pytest.raises(InputError, match=words):
        read.load(write(tmp_path, 'x.json', doc))


def test_no_file_is_no_run():
    with pytest.raises(InputError, match='no result file'):
        read.load_all([])
