"""The bare-host baseline: the same workload, same command line, no guest.

File shape (JSON, schema 1)::

    {"schema": 1, "kind": "kvmtune-baseline",
     "time": "2026-...Z",
     "workload": "fio-randread-4k", "params": {}, "runtime": 10,
     "target": "/var/tmp/...", "scratch": true,
     "peer": null, "command": ["fio", ...],
     "emulated": false, "result": {<kvmtune.workloads.parsers shape>},
     "facts": {<kvmtune.facts.gather()>},
     "record": {<kvmtune.report.records shape>}}
"""

import contextlib
import datetime
import json
import math
import os
import shutil
import tempfile

from kvmtune.errors import InputError

KIND = 'kvmtune-baseline'
SCHEMA = 1
RESULT_KEYS = ('tool', 'workload', 'iops', 'bw_bytes_s', 'lat_ns',
               'gbit_s', 'tps', 'cpu_pct', 'emulated')
LAT_KEYS = ('mean', 'p50', 'p95', 'p99')
SCRATCH_DIR = '/var/tmp'   # not tmpfs: fio needs O_DIRECT
_UNITS = {'': 1, 'K': 1024, 'M': 1024 ** 2, 'G': 1024 ** 3}


def size_bytes(size):
    text = str(size).upper()
    unit = text[-1] if text[-1] in _UNITS else ''
    return int(text[:-1] if unit else text) * _UNITS[unit]


@contextlib.contextmanager
def scratch_file(size, fill):
    """A fresh file of ``size`` bytes, removed afterwards.

    :param fill: write real blocks (read workloads: reads of holes are
        answered without I/O and would flatter the host)
    """
    tmpdir = tempfile.mkdtemp(prefix='kvmtune-baseline-', dir=SCRATCH_DIR)
    path = os.path.join(tmpdir, 'scratch.img')
    try:
        with open(path, 'wb') as f:
            if fill:
                block = os.urandom(1024 * 1024)
                for _ in range(size_bytes(size) // len(block)):
                    f.write(block)
            f.flush()
            os.fsync(f.fileno())
        yield path
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def _facts():
    try:
        from kvmtune import facts
    except ImportError:
        return None
    return facts.gather()


def run(workload, target=None, peer=None, runtime=None, params=None,
        destroy_data=False):
    """Run ``workload`` on this host and return the baseline document."""
    from kvmtune.bench import hostrun
    from kvmtune.bench import targets

    settings = workload.settings(params)
    scratch = workload.target == 'disk' and not target
    if workload.target == 'peer':
        target = None
        if not peer:
            raise InputError('a network workload needs --peer', key='--peer',
                             fix=f'start "{workload.tool}" as a server '
                                 'there and give its address')
        argv, result = hostrun.run(workload, peer=peer, runtime=runtime,
                                   params=params)
    elif workload.target == 'none':    # CPU, memory: nothing to name
        target = None
        argv, result = hostrun.run(workload, runtime=runtime, params=params)
    elif scratch:
        with scratch_file(settings['size'],
                          fill=not workload.writes(params)) as target:
            argv, result = hostrun.run(workload, target=target,
                                       runtime=runtime, params=params)
    else:
        why = targets.refusal(target, workload.writes(params))
        if why and not destroy_data:
            raise InputError(f'refusing to write to {why}', source=target,
                             key='--target', fix='name an empty file, or '
                             'pass --destroy-data if its data may go')
        argv, result = hostrun.run(workload, target=target, runtime=runtime,
                                   params=params)
    facts = _facts()
    runtime = int(runtime or settings.get('runtime', 10))
    return {
        'schema': SCHEMA, 'kind': KIND,
        'time': datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec='seconds').replace('+00:00', 'Z'),
        'workload': workload.name, 'params': dict(params or {}),
        'runtime': runtime,
        'target': target, 'scratch': scratch, 'peer': peer,
        'command': argv,
        'emulated': False, 'result': result, 'facts': facts,
        'record': record(workload, facts, params, runtime, argv),
    }


def record(workload, facts, params, runtime, argv):
    """The result record (kvmtune.report.records) of a bare-host run."""
    from kvmtune.bench import qemu
    from kvmtune.report import records

    virt = why = None
    if facts:
        virt, why = qemu.choose_accel('auto', facts.get('virt') or {})
    return records.make('baseline', workload, facts, 'bare',
                        params=params, runtime=runtime, command=argv,
                        virt=virt, why=why)


def save(doc, path):
    """Write atomically (kvmtune.fileio, the one writer)."""
    from kvmtune import fileio

    fileio.write_atomic(path, json.dumps(doc, indent=2, sort_keys=True)
                        + '\n')


def _number_or_none(value):
    """None, or a finite figure that is not negative (a NaN, inf or
    negative baseline made every share of bare metal meaningless)."""
    return value is None or (isinstance(value, (int, float)) and
                             not isinstance(value, bool) and
                             math.isfinite(value) and value >= 0)


def validate(doc, source):
    """Raise InputError naming the first key that breaks the shape."""
    def bad(key, problem, fix='make it again with kvmtune baseline'):
        raise InputError(problem, source=source, key=key, fix=fix)

    if not isinstance(doc, dict):
        bad(None, 'not a JSON object')
    if doc.get('kind') != KIND:
        bad('kind', f'not a kvmtune baseline (kind {doc.get("kind")!r})')
    if doc.get('schema') != SCHEMA:
        bad('schema', f'unsupported schema {doc.get("schema")!r}')
    for key in ('workload', 'time'):
        if not isinstance(doc.get(key), str):
            bad(key, 'missing or not a string')
    if doc.get('emulated') is not False:
        bad('emulated', 'a baseline is measured on the bare host: must be '
            'false')
    result = doc.get('result')
    if not isinstance(result, dict):
        bad('result', 'missing or not an object')
    for key in RESULT_KEYS:
        if key not in result:
            bad(f'result.{key}', 'missing')
    for key in ('iops', 'bw_bytes_s', 'gbit_s', 'tps', 'cpu_pct'):
        if not _number_or_none(result[key]):
            bad(f'result.{key}', 'not a finite, non-negative number')
    if not isinstance(result['lat_ns'], dict) or not all(
            _number_or_none(result['lat_ns'].get(k)) for k in LAT_KEYS):
        bad('result.lat_ns', 'not an object of numbers (mean p50 p95 p99)')
    if not _number_or_none(result.get('events_s')):
        bad('result.events_s', 'not a number')
    if all(result.get(k) is None for k in ('iops', 'bw_bytes_s', 'gbit_s',
                                           'tps', 'events_s')):
        bad('result', 'holds no measured figure')
    if doc.get('facts') is not None and not isinstance(doc['facts'], dict):
        bad('facts', 'not an object')
    return doc


def load(path):
    """Read a baseline file back, validating its shape."""
    from kvmtune import inputs

    return validate(inputs.load_json(path), path)
