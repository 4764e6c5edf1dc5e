"""bench local, --compare and bench nested files read as Runs of Rows."""

import json

import pytest

from kvmtune.errors import InputError
from kvmtune.results import bench
from kvmtune.results import read


def result(iops=None, events=None, lat=1000.0, p99=None, mx=None,
           workload='fio-randread-4k', emulated=True):
    """A parsed result (kvmtune.workloads.parsers shape)."""
    return {'tool': 'fio' if iops else 'sysbench', 'workload': workload,
            'iops': iops, 'events_s': events,
            'bw_bytes_s': iops * 4096.0 if iops else None,
            'lat_ns': {'mean': lat, 'p50': None, 'p95': None, 'p99': p99},
            'lat_max_ns': mx, 'gbit_s': None, 'tps': None, 'cpu_pct': None,
            'emulated': emulated}


def bench_doc(results, workload='fio-randread-4k', digest='h1',
              settings=None, failed=0):
    """A `kvmtune bench local --json` file's document."""
    rows = [{'vm': i, 'status': 'ok', 'reason': '', 'result': r,
             'instance_id': f'i-{i}'} for i, r in enumerate(results)]
    rows += [{'vm': len(rows) + i, 'status': 'late', 'reason': 'ready at 9',
              'result': None, 'instance_id': f'x-{i}'}
             for i in range(failed)]
    return {'schema': 1, 'kind': 'kvmtune-bench-local',
            'workload': workload, 'emulated': True, 'rows': rows,
            'record': {'kind': 'bench-local', 'accel': 'tcg',
                       'settings': settings or {},
                       'host': {'digest': digest, 'hostname': digest,
                                'cpu_model': 'cpu'},
                       'workload': {'name': workload, 'params': {},
                                    'runtime': 10}}}


def baseline_doc(res, workload='fio-randread-4k'):
    """A `kvmtune baseline` file's document."""
    return {'schema': 1, 'kind': 'kvmtune-baseline', 'time': 'T',
            'workload': workload, 'params': {}, 'runtime': 10,
            'emulated': False, 'result': dict(res, emulated=False),
            'record': {'kind': 'baseline', 'accel': 'bare',
                       'host': {'digest': 'h1', 'hostname': 'h1',
                                'cpu_model': 'cpu'},
                       'workload': {'name': workload, 'params': {},
                                    'runtime': 10}}}


def nested_doc(l1_row=None):
    """A `kvmtune bench nested -o` document: host, L1, L2 (sysbench)."""
    def flat(level, events, status='ok'):
        return {'instance': level, 'role': 'client', 'status': status,
                'reason': '' if status == 'ok' else 'why',
                'workload': 'sysbench-cpu', 'tool': 'sysbench',
                'emulated': level != 'host',
                'events_s': events if status == 'ok' else None,
                'lat_mean_ns': 1e6 if status == 'ok' else None}
    return {'kind': 'kvmtune-bench-nested', 'schema': 1,
            'workload': 'sysbench-cpu', 'runtime': 10, 'params': {},
            'accel': 'tcg', 'emulated': True,
            'runs': [{'level': 'host', 'row': flat('host', 1000.0)},
                     {'level': 'L1', 'row': l1_row or flat('L1', 400.0)},
                     {'level': 'L2', 'row': flat('L2', 100.0)}]}


def write(tmp_path, name, doc):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def test_a_bench_local_file_is_one_run_of_its_guests():
    doc = bench_doc([result(1000.0, p99=3e6), result(1200.0)], failed=1)
    run, = bench.runs_of(doc, '/x/before.json')
    assert run.label == 'before' and run.kind == 'bench-local'
    guests, = run.iterations[3]
    assert [g.iops for g in guests] == [1000.0, 1200.0, None]
    assert guests[0].lat_ns.p99 == 3e6 and guests[0].emulated
    assert run.failures == ['3 VMs: x-0: late (ready at 9)']


def test_a_network_server_serves_and_is_left_out():
    doc = bench_doc([result(1000.0)])
    doc['rows'].insert(0, {'vm': 9, 'role': 'server', 'status': 'server',
                           'reason': '', 'result': None})
    run, = bench.runs_of(doc, 'a.json')
    assert list(run.iterations) == [1]


def test_a_compare_file_is_one_run_per_column_and_the_bare_host():
    doc = {'schema': 1, 'kind': 'kvmtune-bench-compare', 'emulated': True,
           'record': bench_doc([])['record'],
           'runs': [dict(bench_doc([result(1000.0)]), label='cache=none',
                         settings={'cache': 'none'}),
                    {'label': 'hugepages=on', 'skipped': 'no pages'},
                    dict(bench_doc([result(1500.0)]),
                         label='cache=writeback',
                         settings={'cache': 'writeback'})],
           'baseline': baseline_doc(result(4000.0))}
    runs = bench.runs_of(doc, 'c.json')
    assert [r.label for r in runs] == ['cache=none', 'cache=writeback',
                                       'bare host']
    assert runs[1].record['settings'] == {'cache': 'writeback'}
    assert runs[2].bare and runs[2].rows[0].iops == 4000.0


def test_a_nested_file_is_one_run_per_level_the_host_bare():
    runs = bench.runs_of(nested_doc(), 'n.json')
    assert [(r.label, r.kind) for r in runs] == [
        ('bare host', 'baseline'), ('L1', 'bench-nested'),
        ('L2', 'bench-nested')]
    assert runs[1].rows[0].events_s == 400.0 and runs[1].emulated
    assert runs[2].record['settings'] == {'level': 'L2'}


def test_a_nested_file_of_the_old_row_shape_is_read_in_the_one_unit_set():
    old = {'instance': 'L1', 'role': 'client', 'status': 'ok',
           'reason': '', 'workload': 'sysbench-cpu', 'events_s': 400.0,
           'lat_mean_us': 2.5, 'bw_MiB_s': 1.5, 'emulated': True}
    _, l1, _ = bench.runs_of(nested_doc(old), 'n.json')
    row, = l1.rows
    assert row.lat_ns.mean == 2500.0 and row.bw_bytes_s == 1.5 * 1048576


@pytest.mark.parametrize('change,match', [
    (lambda d: d.update(rows='x'), 'malformed result file'),
    (lambda d: d.update(rows=[1, 2]), 'malformed result file'),
    (lambda d: d['rows'][0]['result'].update(iops=-5.0),
     'rows[0].iops: -5.0 is below 0'),
    (lambda d: d['rows'][0]['result'].update(iops='fast'),
     "'fast' is not a number"),
    (lambda d: d['rows'][0]['result']['lat_ns'].update(mean=True),
     'True is not a number'),
    (lambda d: d['record'].update(host=['x']), 'record.host'),
])
def test_a_broken_file_is_one_input_error(tmp_path, change, match):
    doc = bench_doc([result(1000.0)])
    change(doc)
    path = write(tmp_path, 'bad.json', doc)
    with pytest.raises(InputError) as caught:
        read.load(path)
    assert caught.value.line().startswith(f'{path}: ')
    assert match in caught.value.line()
