"""One entry to every result file: ``load(path) -> [Run]``,
``load_all(paths) -> [Run]`` (doc/design.md 9.4).

The kind of a file decides its reader: a baseline
(kvmtune.results.baseline), bench local, compare or nested
(kvmtune.results.bench), else a Rally task result
(kvmtune.results.rally). Every failure is one InputError naming the file.
"""

from typing import Sequence

from kvmtune.errors import InputError
from kvmtune.results import kinds
from kvmtune.results import records
from kvmtune.results.run import Run

FIX = 'give the file kvmtune or Rally wrote, unedited'


def load(path: str, many: bool = False) -> list[Run]:
    """The Runs held by one result file; InputError for anything else.

    :param many: the report reads several files: a Rally sweep is
        labelled FILE:FLAVOR even when it is its file's only one
    """
    try:
        return _load(path, many)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise InputError(f'malformed result file ({type(exc).__name__}: '
                         f'{exc})'[:200], source=path, fix=FIX) from None


def _load(path: str, many: bool) -> list[Run]:
    from kvmtune.results import baseline
    from kvmtune.results import bench
    from kvmtune.results import rally

    doc = rally.read(path)
    kind = doc.get('kind') if isinstance(doc, dict) else None
    if kind == kinds.FILE_BASELINE:
        return [baseline.run_of(doc, path)]
    if kind in kinds.BENCH_FILES:
        return bench.runs_of(doc, path, many)
    if kind is not None and isinstance(doc, dict) and 'tasks' not in doc:
        raise InputError(f'unknown result kind {kind!r}', source=path,
                         fix='pass Rally, bench local, bench nested or '
                             'baseline JSON')
    return rally.runs_from(doc, path, many)


def _same_setup(a: Run, b: Run) -> bool:
    ra, rb = a.record or {}, b.record or {}
    return (a.kind == b.kind == kinds.BENCH_LOCAL and
            ra.get('kind') == rb.get('kind') == kinds.BENCH_LOCAL and
            ra.get('settings') == rb.get('settings') and
            ra.get('accel') == rb.get('accel') and
            (ra.get('host') or {}).get('digest') ==
            (rb.get('host') or {}).get('digest') and
            ra.get('workload') == rb.get('workload'))


def merge_sweeps(runs: Sequence[Run]) -> list[Run]:
    """Consecutive bench local runs of one setup at different VM counts
    become one run over those counts (a local sweep, fitted like a Rally
    one): ``kvmtune report vm1.json vm2.json vm3.json``."""
    merged: list[Run] = []
    for run in runs:
        last = merged[-1] if merged else None
        if (last is not None and _same_setup(last, run) and
                not set(last.iterations) & set(run.iterations)):
            last.iterations.update(run.iterations)
            last.source = f'{last.source}, {run.source}'
            if '+' not in last.label:
                last.label += '+'
            continue
        merged.append(run)
    return merged


def unique_labels(runs: Sequence[Run]) -> list[Run]:
    """``runs`` with labels made unique, in order ("a (2)" may be a
    file's own name)."""
    taken: set[str] = set()
    for run in runs:
        label, n = run.label, 1
        while label in taken:
            n += 1
            label = f'{run.label} ({n})'
        run.label = label
        taken.add(label)
    return list(runs)


def load_all(paths: Sequence[str]) -> list[Run]:
    """The Runs of every file, in order: local sweeps merged, labels
    unique, every record of the right shape."""
    if not paths:
        raise InputError('no result file given',
                         fix='give result files of kvmtune bench local, '
                             'kvmtune baseline or a Rally sweep')
    many = len(paths) > 1
    runs: list[Run] = []
    for path in paths:
        runs.extend(load(path, many=many))
    for run in runs:
        records.validate(run.record, run.source)
    return unique_labels(merge_sweeps(runs))
