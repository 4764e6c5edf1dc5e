"""bench local, --compare and bench nested files read as Runs of Rows."""

import json
import os

import pytest

from kvmtune.errors import InputError
from kvmtune.results import bench
from kvmtune.results import kinds
from kvmtune.results import read
from kvmtune.results import row as rows
from tests import paths

# `kvmtune bench local --vms 2 --workload fio-randread-4k --runtime 5
# --json` of kvmtune before the one result model (schema 1: each guest's
# parsed result), under QEMU TCG on the development machine, 2026-11-25
SCHEMA1 = os.path.join(paths.FIXTURES, 'outputs',
                       'bench-local-2vm-fio-randread-4k-tcg-schema1.json')


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
    """A `kvmtune bench local --json` file's document: a Row per guest
    (row.COLUMNS, ``vm``, ``signal_s``)."""
    guests = [rows.from_result(f'i-{i}', 'client', r) for i, r in
              enumerate(results)]
    guests += [rows.failed(f'x-{i}', 'client', 'late', 'ready at 9')
               for i in range(failed)]
    return {'schema': 2, 'kind': 'kvmtune-bench-local',
            'workload': workload, 'emulated': True,
            'rows': [{'vm': i, **g.flat(), 'signal_s': None}
                     for i, g in enumerate(guests)],
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


def test_a_recorded_file_of_schema_1_reads_as_the_same_rows():
    """bench local's files before the one result model held each guest's
    parsed result (MB/s printed from bytes/s, ms from ns): read once into
    Rows of the one unit set, every figure as recorded."""
    with open(SCHEMA1) as f:
        doc = json.load(f)
    assert doc['schema'] == 1 and 'result' in doc['rows'][0]
    run, = read.load(SCHEMA1)
    guests, = run.iterations[2]
    for guest, old in zip(guests, doc['rows']):
        res = old['result']
        assert guest.ok and guest.instance == old['instance_id']
        assert (guest.iops, guest.bw_bytes_s, guest.cpu_pct) == (
            res['iops'], res['bw_bytes_s'], res['cpu_pct'])
        assert guest.lat_ns == rows.Latency(**res['lat_ns'])
        assert (guest.ready_s, guest.start_s, guest.seen_ready_s,
                guest.seconds) == (old['ready_s'], old['start_s'],
                                   old['seen_ready_s'], old['seconds'])
        assert guest.emulated and guest.accel == 'emulated (TCG)'
    # the file's own aggregate, computed by bench local then, is what
    # the analysis of its Rows gives now
    from kvmtune.results import analysis
    p, = analysis.analyse([run]).points[run.label]
    total = doc['aggregate']
    assert p.aggregate == total['iops'] and p.valid == total['vms_ok']
    assert p.sums['bw_bytes_s'] == total['bw_bytes_s']
    assert (p.lat_mean_ns, p.lat_tail_ns) == (
        total['lat_mean_ns'], total['lat_p99_ns'])
    assert p.cpu_pct == total['cpu_pct']


def test_a_network_server_serves_and_is_left_out():
    doc = bench_doc([result(1000.0)])
    doc['rows'].insert(0, dict(rows.failed('s', 'server', 'server',
                                           '').flat(), vm=9))
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
    (lambda d: d['rows'][0].update(iops=-5.0),
     'rows[0].iops: -5.0 is below 0'),
    (lambda d: d['rows'][0].update(iops='fast'),
     "'fast' is not a number"),
    (lambda d: d['rows'][0].update(lat_mean_ns=True),
     'True is not a number'),
    (lambda d: d['rows'][0].update(status='fine'), "unknown status 'fine'"),
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


def test_what_bench_writes_is_what_the_reader_reads():
    # each file's shape as written (local_doc, compare_doc, nested_doc)
    # read back by runs_of: the writer and the reader live together
    written = bench_doc([result(1000.0), result(1200.0)])
    doc = bench.local_doc('fio-randread-4k', 2, 'tcg', {'cache': 'none'},
                          written['rows'], written['record'])
    assert doc == dict(written, vms=2, accel='tcg',
                       settings={'cache': 'none'})
    run, = bench.runs_of(json.loads(json.dumps(doc)), '/x/one.json')
    assert [g.iops for g in run.iterations[2][0]] == [1000.0, 1200.0]
    column = {'label': 'cache=none', 'settings': {'cache': 'none'},
              'rows': written['rows']}
    doc = bench.compare_doc('fio-randread-4k', 2, 'tcg', [column], None,
                            written['record'])
    assert (doc['schema'], doc['kind']) == (bench.LOCAL_SCHEMA,
                                            kinds.FILE_BENCH_COMPARE)
    assert [r.label for r in bench.runs_of(doc, '/x/c.json')] == [
        'cache=none']
    levels = nested_doc()['runs']
    doc = bench.nested_doc('sysbench-cpu', 10, None, 1, 1024, 'tcg', 'why',
                           'EPYC', '/images', 12.5, levels)
    assert doc['l1_cpu'] == 'EPYC' and doc['emulated'] is True
    assert [r.label for r in bench.runs_of(doc, '/x/n.json')] == [
        'bare host', 'L1', 'L2']
