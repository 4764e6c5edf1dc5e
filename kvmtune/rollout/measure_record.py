"""The canary gate's records: the ``measurements`` section of a rollout's
state file, one record per host and metric, versioned.

::

    "measurements": {
      "version": 1,
      "hosts": {
        "compute-2": {
          "control": "compute-7",
          "accepted": null,      # or {"reason": "...", "at": "..."}
          "metrics": {
            "fio-randread/iops": {
              "workload": "fio-randread", "metric": "iops",
              "provider": "kvmtune bench", "band": ">= -5%",
              "confidence": 0.95, "target": 10,
              "plan_hash": "sha256:...", "facts_hash": "sha256:...",
              "samples": {"canary": {"before": [{"vm": "v1", "repeat": 0,
                                                 "value": 5120.0}, ...],
                                     "after": [...]},
                          "control": {"before": [...], "after": [...]}},
              "statistic": "did-ratio-of-medians", "estimate": 1.07,
              "interval": [1.02, 1.12], "p_canary": 0.0003,
              "p_control": 0.41, "seed": 48, "resamples": 2000,
              "verdict": "pass", "reason": "change +7.0 %, ..."}}}}}

Resumable in the middle of a measurement: samples are added one VM and
repeat at a time (a (vm, repeat) already held is not added twice), and
``missing`` says what each side and moment still needs for the record's
``target``, so a measure step that was killed goes on where it stopped.
``begin`` keeps what was measured unless the plan or the facts changed
(their hashes differ): those samples measured another host.

The state file (kvmtune.rollout.state) holds the section under
``SECTION``; ``section(doc)`` reads it from the file's dict and checks it,
``store(doc, section)`` puts it back. Both are pure: the state file's own
lock and atomic write stay the one way the file is written.
"""

from collections.abc import Iterable
from collections.abc import Mapping
import datetime
import hashlib
import json
import math
from typing import Any

from kvmtune.errors import InputError
from kvmtune.rollout import canary
from kvmtune import textfile
from kvmtune.tuning.measure import FAIL
from kvmtune.tuning.measure import INCONCLUSIVE
from kvmtune.tuning.measure import Measure
from kvmtune.tuning.measure import parse_band
from kvmtune.tuning.measure import PASS

SECTION = 'measurements'
VERSION = 1
# what the measure step does next for a record (next_action)
MEASURE, JUDGE, DONE, MORE, PERSON = ('measure', 'judge', 'done', 'more',
                                      'person')
_FIX = ('give the state file a rollout wrote, or move the measurements '
        'section away to measure again')
RECORD_KEYS = ('workload', 'metric', 'provider', 'band', 'confidence',
               'target', 'plan_hash', 'facts_hash', 'samples')


def empty() -> dict[str, Any]:
    return {'version': VERSION, 'hosts': {}}


def digest(value: Any) -> str:
    """``sha256:HEX`` of ``value`` as canonical JSON (sorted keys): the
    plan's and the facts' hash in a record."""
    text = json.dumps(value, sort_keys=True, separators=(',', ':'),
                      default=str)
    return 'sha256:' + hashlib.sha256(text.encode()).hexdigest()


def key(workload: str, metric: str) -> str:
    return f'{workload}/{metric}'


def _bad(problem: str, source: str, where: str) -> InputError:
    return InputError(problem, source=source, key=f'{SECTION}.{where}',
                      fix=_FIX)


def _check_samples(samples: Any, source: str, where: str) -> None:
    if not isinstance(samples, dict) or set(samples) != set(canary.SIDES):
        raise _bad('samples must hold canary and control', source, where)
    for side in canary.SIDES:
        moments = samples[side]
        if not isinstance(moments, dict) or \
                set(moments) != set(canary.MOMENTS):
            raise _bad(f'samples.{side} must hold before and after',
                       source, where)
        for moment in canary.MOMENTS:
            values = moments[moment]
            if not isinstance(values, list) or not all(
                    isinstance(v, dict) and set(v) == {'vm', 'repeat',
                                                       'value'}
                    and isinstance(v['vm'], str) and _whole(v['repeat'])
                    and _finite(v['value']) for v in values):
                raise _bad(f'samples.{side}.{moment} must be a list of '
                           '{vm, repeat, value} (a name, a count, a '
                           'number)', source, where)


def _finite(value: Any) -> bool:
    return (not isinstance(value, bool) and isinstance(value, (int, float))
            and math.isfinite(value))


def _whole(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int)


def _check_figures(record: Mapping[str, Any], source: str,
                   where: str) -> None:
    """The judged figures a report prints: numbers or none."""
    if not _whole(record['target']) or record['target'] < 1:
        raise _bad('target must be a positive count', source, where)
    if not _finite(record['confidence']) or \
            not 0.5 <= record['confidence'] < 1:
        raise _bad('confidence must be in [0.5, 1)', source, where)
    for name in ('estimate', 'p_canary', 'p_control'):
        if record.get(name) is not None and not _finite(record[name]):
            raise _bad(f'{name} must be a number', source, where)
    interval = record.get('interval')
    if interval is not None and not (
            isinstance(interval, list) and len(interval) == 2
            and all(_finite(v) for v in interval)):
        raise _bad('interval must be two numbers', source, where)
    if interval is not None and record.get('estimate') is None:
        raise _bad('an interval without its estimate', source, where)
    if record.get('verdict', canary.PENDING) not in canary.VERDICTS:
        raise _bad(f'verdict {record.get("verdict")!r} is not one of '
                   + ', '.join(canary.VERDICTS), source, where)
    for name in ('reason', 'workload', 'metric', 'provider'):
        if not isinstance(record.get(name, ''), str):
            raise _bad(f'{name} must be text', source, where)


def section(doc: Mapping[str, Any], source: str = 'state file'
            ) -> dict[str, Any]:
    """The measurements of a state file's dict, checked (an empty
    section when it has none); InputError, one line, for a bad one."""
    data = doc.get(SECTION)
    if data is None:
        return empty()
    if not isinstance(data, dict) or not isinstance(data.get('hosts'), dict):
        raise _bad('must be a mapping with version and hosts', source,
                   'hosts')
    if data.get('version') != VERSION:
        raise InputError(f'measurements version {data.get("version")!r} '
                         f'is not {VERSION}', source=source,
                         key=f'{SECTION}.version',
                         fix='read it with the kvmtune that wrote it')
    for host, entry in data['hosts'].items():
        if not isinstance(entry, dict) or not isinstance(
                entry.get('metrics'), dict):
            raise _bad('a host must hold its metrics', source, host)
        if not isinstance(entry.get('control'), str):
            raise _bad('a host must name its control', source, host)
        accepted = entry.get('accepted')
        if accepted is not None and not (
                isinstance(accepted, dict)
                and isinstance(accepted.get('reason'), str)
                and isinstance(accepted.get('at'), str)):
            raise _bad('accepted must be none or {reason, at}', source,
                       host)
        for name, record in entry['metrics'].items():
            where = f'{host}.{name}'
            if not isinstance(record, dict):
                raise _bad('a record must be a mapping', source, where)
            gone = [k for k in RECORD_KEYS if k not in record]
            if gone:
                raise _bad(f'the record lacks {gone[0]}', source, where)
            _check_samples(record['samples'], source, where)
            _check_figures(record, source, where)
            parse_band(record['band'], source, f'{SECTION}.{where}.band')
    return data


def store(doc: dict[str, Any], data: Mapping[str, Any]) -> dict[str, Any]:
    """``doc`` with ``data`` as its measurements section."""
    doc[SECTION] = dict(data)
    return doc


def _new_samples() -> dict[str, dict[str, list[dict[str, Any]]]]:
    return {side: {moment: [] for moment in canary.MOMENTS}
            for side in canary.SIDES}


def begin(data: dict[str, Any], host: str, control: str, workload: str,
          metric: str, measure: Measure, *, provider: str,
          plan_hash: str, facts_hash: str) -> dict[str, Any]:
    """The record of ``host``'s ``metric``, made when absent. An existing
    one is kept (resume) when the plan, the facts and the control are
    the same; else its samples are dropped, as they measured another
    host or plan."""
    entry = data['hosts'].setdefault(
        host, {'control': control, 'accepted': None, 'metrics': {}})
    name = key(workload, metric)
    record: dict[str, Any] | None = entry['metrics'].get(name)
    same = (record is not None and entry['control'] == control
            and record['plan_hash'] == plan_hash
            and record['facts_hash'] == facts_hash)
    if record is not None and same:
        return record
    entry['control'] = control
    entry['accepted'] = None
    record = {'workload': workload, 'metric': metric, 'provider': provider,
              'band': str(measure.bands[metric]),
              'confidence': measure.confidence, 'target': measure.samples,
              'plan_hash': plan_hash, 'facts_hash': facts_hash,
              'samples': _new_samples(), 'verdict': canary.PENDING,
              'reason': 'measuring'}
    entry['metrics'][name] = record
    return record


def _pending(record: dict[str, Any], reason: str) -> None:
    """The record back to pending: a figure judged on other samples is
    no longer the record's."""
    record['verdict'], record['reason'] = canary.PENDING, reason
    for name in ('estimate', 'interval', 'p_canary', 'p_control'):
        if name in record:
            record[name] = None


def add(record: dict[str, Any], side: str, moment: str,
        values: Iterable[tuple[str, int, float]]) -> int:
    """Add (vm, repeat, value) samples; a (vm, repeat) held already is
    skipped (a measure step made again). Returns how many were added."""
    if side not in canary.SIDES or moment not in canary.MOMENTS:
        raise ValueError(f'no sample list {side} {moment}')
    held = record['samples'][side][moment]
    seen = {(v['vm'], v['repeat']) for v in held}
    added = 0
    for vm, repeat, value in values:
        if (vm, repeat) in seen:
            continue
        held.append({'vm': vm, 'repeat': repeat, 'value': value})
        seen.add((vm, repeat))
        added += 1
    if added:
        _pending(record, 'measuring')
    return added


def values(record: Mapping[str, Any]) -> dict[str, dict[str, list[float]]]:
    """The sample values, by side and moment."""
    return {side: {moment: [v['value']
                            for v in record['samples'][side][moment]]
                   for moment in canary.MOMENTS}
            for side in canary.SIDES}


def missing(record: Mapping[str, Any]) -> dict[tuple[str, str], int]:
    """How many values each side and moment still needs to reach the
    record's target (only those that need some)."""
    out = {}
    for side in canary.SIDES:
        for moment in canary.MOMENTS:
            short = record['target'] - len(record['samples'][side][moment])
            if short > 0:
                out[(side, moment)] = short
    return out


def judge(record: dict[str, Any],
          resamples: int = canary.DEFAULT_RESAMPLES) -> str:
    """Judge a complete record in place
    (kvmtune.rollout.canary.judge); a record still short of its target
    stays pending. Returns the verdict."""
    short = missing(record)
    if short:
        (side, moment), n = sorted(short.items())[0]
        _pending(record, f'measuring: {side} {moment} needs {n} more '
                         'values')
        return canary.PENDING
    record.update(canary.judge(values(record), parse_band(record['band']),
                               record['confidence'], resamples=resamples))
    verdict: str = record['verdict']
    return verdict


def next_action(record: Mapping[str, Any], max_samples: int) -> str:
    """What the measure step does next: ``measure`` (samples missing),
    ``judge``, ``done`` (pass or fail), ``more`` (inconclusive below the
    cap: raise the target with ``more``), ``person`` (inconclusive at the
    cap, refused or an error: stop for a person, --accept HOST)."""
    if missing(record):
        return MEASURE
    verdict = record.get('verdict')
    if verdict == canary.PENDING:
        return JUDGE
    if verdict in (PASS, FAIL):
        return DONE
    if verdict == INCONCLUSIVE and record['target'] < max_samples:
        return MORE
    return PERSON


def more(record: dict[str, Any], step: int, max_samples: int) -> int:
    """Raise an inconclusive record's target by ``step`` values a side,
    up to ``max_samples``; the new target."""
    record['target'] = min(max_samples, record['target'] + step)
    _pending(record, f'inconclusive: measuring up to {record["target"]}')
    target: int = record['target']
    return target


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        '%Y-%m-%dT%H:%M:%SZ')


def accept(data: dict[str, Any], host: str, reason: str,
           now: str | None = None) -> None:
    """A person's decision to let ``host`` go on whatever its verdicts
    (--accept HOST), with the reason, kept in the record."""
    if host not in data['hosts']:
        raise InputError(f'no measurement of {host} to accept',
                         source=host, key='--accept',
                         fix='name a host the gate measured '
                             '(kvmtune rollout report STATE)')
    if not reason or not reason.strip():
        raise InputError('an acceptance needs its reason', source=host,
                         key='--reason',
                         fix='say why the host may go on (it is kept in '
                             'the state file)')
    data['hosts'][host]['accepted'] = {'reason': ' '.join(reason.split()),
                                       'at': now or _now()}


def host_verdict(data: Mapping[str, Any], host: str) -> str:
    """The host's verdict: its worst metric's, or ``accepted`` when a
    person accepted it."""
    entry = data['hosts'][host]
    if entry.get('accepted'):
        return 'accepted'
    return canary.worst([r.get('verdict', canary.PENDING)
                         for r in entry['metrics'].values()])


def families(data: Mapping[str, Any]) -> list[textfile.Family]:
    """The textfile's series: per host and metric the measured ratio and
    its interval's bounds (a record not judged has none), and the
    verdict as a 1 labelled by it."""
    ratio = textfile.Family(
        'kvmtune_canary_ratio',
        'Difference-in-differences ratio of medians of the canary gate: '
        '(canary after / before) / (control after / before)')
    low = textfile.Family('kvmtune_canary_ratio_low',
                          'Lower bound of the canary ratio\'s interval')
    high = textfile.Family('kvmtune_canary_ratio_high',
                           'Upper bound of the canary ratio\'s interval')
    verdict = textfile.Family(
        'kvmtune_canary_verdict',
        'The canary gate\'s verdict per host and metric (1, the verdict '
        'in its label)')
    for host, entry in sorted(data['hosts'].items()):
        for name, record in sorted(entry['metrics'].items()):
            labels = {'hostname': host, 'metric': name}
            if record.get('interval'):
                ratio.add(record['estimate'], **labels)
                low.add(record['interval'][0], **labels)
                high.add(record['interval'][1], **labels)
            verdict.add(1, **labels, verdict=record.get(
                'verdict', canary.PENDING))
    return [ratio, low, high, verdict]
