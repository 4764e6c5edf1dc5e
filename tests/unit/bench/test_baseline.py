"""Baseline files: saved, read back, refused when broken (the target
checks that protect data: tests/unit/bench/test_targets.py)."""

import json
import os

import pytest
import re

from kvmtune.bench import baseline
from kvmtune.errors import InputError

RESULT = {'tool': 'fio', 'workload': 'fio-randread-4k', 'iops': 100.0,
          'bw_bytes_s': 409600.0,
          'lat_ns': {'mean': 1.0, 'p50': 1.0, 'p95': 2.0, 'p99': 3.0},
          'gbit_s': None, 'tps': None, 'cpu_pct': 5.0, 'emulated': False}


def doc(**changes):
    d = {'schema': 1, 'kind': 'kvmtune-baseline',
         'time': '2026-11-21T20:00:00Z', 'workload': 'fio-randread-4k',
         'emulated': False, 'result': dict(RESULT), 'facts': None}
    d.update(changes)
    return d


def test_save_then_load_round_trips(tmp_path):
    path = str(tmp_path / 'b.json')
    baseline.save(doc(), path)
    assert baseline.load(path) == doc()
    # no temp file left (kvmtune.fileio keeps its lock file beside it)
    assert [n for n in os.listdir(tmp_path)
            if not n.endswith('.kvmtune.lock')] == ['b.json']


@pytest.mark.parametrize('change,key', [
    ({'kind': 'other'}, 'kind'),
    ({'schema': 2}, 'schema'),
    ({'emulated': True}, 'emulated'),
    ({'result': dict(RESULT, iops='fast')}, 'result.iops'),
    ({'result': {k: v for k, v in RESULT.items() if k != 'tps'}},
     'result.tps'),
    ({'result': dict(RESULT, lat_ns={'mean': 'x'})}, 'result.lat_ns'),
    ({'result': dict(RESULT, iops=None, bw_bytes_s=None)}, 'result'),
])
def test_load_names_the_broken_key(tmp_path, change, key):
    path = tmp_path / 'b.json'
    path.write_text(json.dumps(doc(**change)))
    with pytest.raises(InputError,
                       match=f'b\\.json: {re.escape(key)}: ') as exc:
        baseline.load(str(path))
    assert exc.value.key == key


def test_load_of_non_json(tmp_path):
    path = tmp_path / 'b.json'
    path.write_text('{"schema": 1,')
    with pytest.raises(InputError, match='not JSON'):
        baseline.load(str(path))


def test_size_bytes():
    assert baseline.size_bytes('64M') == 64 * 1024 ** 2
    assert baseline.size_bytes('1g') == 1024 ** 3
    assert baseline.size_bytes(4096) == 4096


def test_the_bare_column_of_a_compare(tmp_path):
    from kvmtune import workloads

    fio = workloads.get('fio-randread-4k')
    assert baseline.for_compare('none', fio, {}, 5) == (
        None, 'no bare-host column (--baseline none)')
    # a network workload measures no bare host here: by default none, and
    # run is refused with the way to make one
    net = workloads.get('iperf3-tcp-stream')
    assert baseline.for_compare(None, net, {}, 5)[0] is None
    bare, why = baseline.for_compare('run', net, {}, 5)
    assert bare is None and 'needs a peer' in why
    path = str(tmp_path / 'b.json')
    baseline.save(doc(), path)
    assert baseline.for_compare(path, fio, {}, 5) == (doc(), None)
    with pytest.raises(InputError) as exc:
        baseline.for_compare(path, workloads.get('sysbench-cpu'), {}, 5)
    assert exc.value.key == 'workload'
