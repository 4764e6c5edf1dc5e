"""Whether results compare: what ``kvmtune report`` (and every analysis,
kvmtune.results.analysis) applies to the runs' records
(kvmtune.results.records) before it compares them.

``check(records, sources, rows)``: different workloads are refused (a
table of randread IOPS next to randwrite IOPS says nothing), and so is a
run whose workload cannot be known (``measured``: a record that says null
where kvmtune writes a value, rows that contradict their record, a result
without a record whose rows name no workload; test_compare.py);
different hosts, different accelerators, a guest run whose accelerator no
record says, different parameters or runtimes, and results without a
record are warned about, one line each.
"""

import json
from typing import Any
from typing import Collection
from typing import Mapping
from typing import NoReturn
from typing import Sequence

from kvmtune.errors import InputError
from kvmtune.results import kinds


def _workload_of(record: Mapping[str, Any] | None) -> dict[str, Any]:
    return ((record or {}).get('workload') or {})


# The kinds of record kvmtune writes where it ran the guests itself: it
# always knows how they ran (kvmtune.bench.qemu.choose_accel).
_OWN = (kinds.BENCH_LOCAL, kinds.BENCH_COMPARE, kinds.BASELINE)
_FIX = 'give the file kvmtune or Rally wrote, unedited'


def _unknown(source: str, key: str, what: str) -> NoReturn:
    raise InputError(f'is null: {what} cannot be known, so its figures '
                     'compare with nothing', source=source, key=key,
                     fix=_FIX)


def measured(record: Mapping[str, Any] | None, source: str,
             rows: Collection[str] = ()) -> str:
    """The workload a result measured, as a comparison needs it known:
    its record's ``workload.name``, which its rows must not contradict,
    else (a result without a record) the one workload its rows name.

    A record that says null where kvmtune writes a value (a hand-edited
    record: the workload, its name or parameters; the accelerator of
    guests kvmtune ran itself) is the one InputError naming the key: a
    comparison that cannot know what it compares is refused, never made
    silently (tests/unit/results/test_compare.py).

    :param rows: the workloads the result's rows name
    """
    said = None
    if record:
        workload = record.get('workload')
        if workload is None:
            _unknown(source, 'record.workload', 'the workload it measured')
        said = workload.get('name')
        if said is None:
            _unknown(source, 'record.workload.name',
                     'the workload it measured')
        if workload.get('params') is None:
            _unknown(source, 'record.workload.params',
                     'the parameters of its workload')
        if record.get('accel') is None and record.get('kind') in _OWN:
            _unknown(source, 'record.accel',
                     'how its guests ran (KVM or TCG)')
    names = set(rows)
    if said is not None and names - {said}:
        raise InputError(f'says workload {said}, its rows measured '
                         f'{", ".join(sorted(names))}', source=source,
                         key='record.workload.name', fix=_FIX)
    if said is None and len(names) != 1:
        raise InputError(
            'no record, and its rows name ' + (
                f'several workloads ({", ".join(sorted(names))})' if names
                else 'no workload') + ': what it measured cannot be '
            'known, so its figures compare with nothing', source=source,
            fix=_FIX)
    return said if said is not None else names.pop()


def check(records: Sequence[Mapping[str, Any] | None],
          sources: Sequence[str],
          rows: Sequence[Collection[str]] | None = None) -> list[str]:
    """Warnings (list of lines) for results about to be compared.

    Raises InputError when they measure different workloads, or when
    what one of them measured cannot be known (``measured``). A result
    without a record (written by an older kvmtune) is compared with a
    warning, by the workload its rows name: nothing else can be checked
    for it. A guest run whose accelerator no record says is warned about.

    :param records: one record (or None) per result, in report order
    :param sources: the file each came from (same order)
    :param rows: the workloads each result's rows name (same order)
    """
    warnings = []
    named = [(r, s) for r, s in zip(records, sources) if r]
    for record, source in zip(records, sources):
        if not record:
            warnings.append(f'warning: {source} carries no record (an older '
                            'kvmtune wrote it): host, settings and workload '
                            'cannot be checked')
    if len(records) < 2:
        return warnings
    names = [measured(r, s, w) for r, s, w in
             zip(records, sources, rows or [()] * len(records))]
    for name, source in zip(names[1:], sources[1:]):
        if name != names[0]:
            raise InputError(
                f'measures workload {name}, {sources[0]} measures '
                f'{names[0]}: figures of different workloads do not '
                'compare', source=source, key='record.workload.name',
                fix='compare results of one workload (kvmtune report '
                    'A.json B.json with A and B of the same workload; '
                    f'a bare host: kvmtune baseline --workload '
                    f'{names[0]})')
    for record, source in named:
        if record.get('accel') is None:
            warnings.append(f'warning: {source}: its record does not say '
                            'how its guests ran (KVM or TCG): KVM and TCG '
                            'figures do not compare')
    if len(named) < 2:
        return warnings
    for key, what in (('params', 'workload parameters'),
                      ('runtime', 'runtimes')):
        values = {json.dumps(_workload_of(r).get(key), sort_keys=True)
                  for r, _ in named
                  if r.get('kind') != kinds.BASELINE or key == 'params'}
        if len(values) > 1:
            warnings.append(f'warning: different {what} '
                            f'({", ".join(sorted(values))})')
    hosts: dict[str, list[tuple[Mapping[str, Any], str]]] = {}
    for record, source in named:
        digest = (record.get('host') or {}).get('digest')
        if digest:
            hosts.setdefault(digest, []).append((record, source))
    if len(hosts) > 1:
        described = '; '.join(
            f'{(members[0][0]["host"].get("hostname"))} '
            f'({members[0][0]["host"].get("cpu_model")}): '
            f'{", ".join(s for _, s in members)}'
            for members in hosts.values())
        warnings.append(f'warning: results from different hosts: '
                        f'{described}')
    guests = {str(r.get('accel')) for r, _ in named
              if r.get('accel') not in (None, 'bare')}
    if len(guests) > 1:
        warnings.append('warning: guests ran under different accelerators '
                        f'({", ".join(sorted(guests))}): KVM and TCG '
                        'figures do not compare')
    return warnings
