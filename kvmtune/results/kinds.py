"""The kinds of results: the one vocabulary of what a result is.

A result carries its kind in three places, each a stable interface (files
on disk, ``kvmtune report -f json``), so the spellings stay as they are;
this module is where each is written down, and what every reader, writer
and check imports (the hacking check K101 refuses these literals
elsewhere, doc/source/reference/glossary.rst "kind").

The file kind, ``"kind"`` at the top of a file kvmtune writes: what the
file is, so the one reader (kvmtune.results.read) picks its parser.

The record kind, ``record["kind"]`` (kvmtune.results.records): what
produced the figures, so a comparison warns across different producers.

The run kind, ``Run.kind`` (kvmtune.results.run) and the ``kind`` of each
run in ``kvmtune report -f json``: how the guests of one Run were measured.
"""

# -- file kinds ------------------------------------------------------------
FILE_BENCH_LOCAL = 'kvmtune-bench-local'      # kvmtune bench local --json
FILE_BENCH_COMPARE = 'kvmtune-bench-compare'  # bench local --compare
FILE_BENCH_NESTED = 'kvmtune-bench-nested'    # kvmtune bench nested -o
FILE_BASELINE = 'kvmtune-baseline'            # kvmtune baseline
# the bench files (kvmtune.results.bench reads them)
BENCH_FILES = (FILE_BENCH_LOCAL, FILE_BENCH_COMPARE, FILE_BENCH_NESTED)

# -- producers: a record's kind and a run's kind share these words ---------
BENCH_LOCAL = 'bench-local'      # guests on this host's QEMU
BENCH_COMPARE = 'bench-compare'  # one column of a bench local --compare
BENCH_NESTED = 'bench-nested'    # one level of a nested run (L1, L2)
BASELINE = 'baseline'            # the bare host, no guest
RALLY_SWEEP = 'rally-sweep'      # a Rally sweep's record
RALLY = 'rally'                  # a Rally sweep's Run

# what a record may say produced it (records.make checks it)
RECORD_KINDS = (BENCH_LOCAL, BENCH_COMPARE, BASELINE, RALLY_SWEEP)
# how a Run's guests were measured (Run checks it)
RUN_KINDS = (RALLY, BENCH_LOCAL, BENCH_NESTED, BASELINE)
