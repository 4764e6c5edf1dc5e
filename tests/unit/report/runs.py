"""Runs for the analysis and renderer tests: result files written by the
builders of tests/unit/results/test_bench.py, read and analysed."""

from kvmtune.results import analysis
from kvmtune.results import read
from tests.unit.results.test_bench import baseline_doc
from tests.unit.results.test_bench import bench_doc
from tests.unit.results.test_bench import result
from tests.unit.results.test_bench import write


def analysed(tmp_path, *docs):
    """The Analysis of the files ``docs`` ((name, document) each)."""
    return analysis.analyse(read.load_all(
        [write(tmp_path, name, doc) for name, doc in docs]))


def before_after_bare():
    """Two bench local runs of two guests (before, after: cache
    writeback) and the bare host: (name, document) each."""
    return (
        ('before.json', bench_doc([result(1000.0, p99=4000.0),
                                   result(3000.0, lat=3000.0, p99=9000.0)])),
        ('after.json', bench_doc([result(2500.0, p99=5000.0),
                                  result(2500.0, p99=6000.0)],
                                 settings={'cache': 'writeback'})),
        ('bare.json', baseline_doc(result(10000.0))))


def sweep(bare=None, per_vm=(4000.0, 700.0, 500.0), vms=(1, 6, 10)):
    """One bench local run per VM count (each guest at ``per_vm``), and
    a bare host at ``bare``: (name, document) each."""
    docs = [(f'{n}vm.json', bench_doc([result(iops)] * n))
            for n, iops in zip(vms, per_vm)]
    return docs + ([('bare.json', baseline_doc(result(bare)))]
                   if bare else [])
