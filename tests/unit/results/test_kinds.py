"""kvmtune.results.kinds: the spellings files and ``kvmtune report -f
json`` carry, pinned against files kvmtune wrote (tests/fixtures/outputs)
and read back through the one reader."""

import json
import os

from kvmtune.results import kinds
from kvmtune.results import read
from tests import paths

OUTPUTS = os.path.join(paths.FIXTURES, 'outputs')
BENCH = os.path.join(OUTPUTS,
                     'bench-local-2vm-fio-randread-4k-tcg-schema1.json')
BARE = os.path.join(OUTPUTS, 'baseline-fio-randread-4k-bare.json')
RALLY = os.path.join(OUTPUTS, 'rally-disk-sweep-1-at-tcg.json')


def _doc(path):
    with open(path, encoding='utf-8') as f:
        return json.load(f)


def test_the_file_and_record_kinds_are_those_of_written_files():
    bench, bare = _doc(BENCH), _doc(BARE)
    assert (bench['kind'], bench['record']['kind']) == (
        kinds.FILE_BENCH_LOCAL, kinds.BENCH_LOCAL)
    assert (bare['kind'], bare['record']['kind']) == (
        kinds.FILE_BASELINE, kinds.BASELINE)
    assert bench['record']['kind'] in kinds.RECORD_KINDS


def test_each_file_reads_into_runs_of_its_run_kind():
    runs = read.load_all([BENCH, BARE, RALLY])
    assert [r.kind for r in runs] == [kinds.BENCH_LOCAL, kinds.BASELINE,
                                      kinds.RALLY]
    assert {r.kind for r in runs} <= set(kinds.RUN_KINDS)


def test_the_three_vocabularies_are_spelled_once():
    every = (kinds.BENCH_FILES + (kinds.FILE_BASELINE,) + kinds.RECORD_KINDS
             + kinds.RUN_KINDS)
    # a producer's word is shared by record and run kinds, never by a file
    assert set(kinds.BENCH_FILES).isdisjoint(kinds.RECORD_KINDS)
    assert all(isinstance(k, str) and k == k.strip() for k in every)
    assert set(kinds.RECORD_KINDS) & set(kinds.RUN_KINDS) == {
        kinds.BENCH_LOCAL, kinds.BASELINE}
