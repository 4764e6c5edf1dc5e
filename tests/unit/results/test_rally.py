"""Rally: the per-VM Table the scenarios write (Rows, one unit set), the
tables of older runs (MiB/s, us), both Rally result formats, and a step's
time budget read from real Rally results: the 1/6/10-guest disk sweep
(m1.bench.baseline, fio-randread-4k, 10 s) on the test cloud under QEMU
TCG (emulated), once with the signal start and its 1-guest
step once in the old start_at mode, `rally task report --json`."""

import json
import os

import pytest

from kvmtune.errors import InputError
from kvmtune.results import rally as rally_results
from kvmtune.results import row as rows
from tests import paths

SIGNAL = os.path.join(paths.FIXTURES, 'outputs',
                      'rally-disk-sweep-1-6-10-signal-tcg.json')
OLD = os.path.join(paths.FIXTURES, 'outputs', 'rally-disk-sweep-1-at-tcg.json')


def fio(iops, emulated=True):
    """A parsed fio result (kvmtune.workloads.parsers shape)."""
    return {'tool': 'fio', 'workload': 'fio-randread-4k', 'iops': iops,
            'bw_bytes_s': iops * 4096.0,
            'lat_ns': {'mean': 1e9 / iops, 'p50': 1.0, 'p95': 1.0,
                       'p99': 2e9 / iops},
            'gbit_s': None, 'tps': None, 'cpu_pct': 10.0,
            'emulated': emulated}


def legacy_table(results, bad=()):
    """The per-VM table as kvmtune wrote it before the Row (MiB/s, us,
    rounded to 0.001), for the reader of older Rally runs."""
    cols = ['instance', 'role', 'status', 'reason', 'workload', 'tool',
            'iops', 'bw_MiB_s', 'lat_mean_us', 'lat_p99_us', 'gbit_s',
            'tps', 'events_s', 'lat_max_us', 'emulated', 'ready_s',
            'start_s', 'seen_ready_s']
    data = [[f'vm-{i}', 'client', 'ok', '', r['workload'], r['tool'],
             r['iops'], round(r['bw_bytes_s'] / 1048576.0, 3),
             round(r['lat_ns']['mean'] / 1000.0, 3),
             round(r['lat_ns']['p99'] / 1000.0, 3), None, None, None, None,
             r['emulated'], None, None, None]
            for i, r in enumerate(results)]
    data += [[f'bad-{i}', 'client', status, why, 'fio-randread-4k'] +
             [None] * 13 for i, (status, why) in enumerate(bad)]
    return {'title': rally_results.TITLE, 'chart_plugin': 'Table',
            'data': {'cols': cols, 'rows': data}}


def iteration(figures, bad=(), legacy=False):
    """One Rally iteration whose guests measured ``figures`` IOPS, and
    ``bad`` [(status, reason)] guests without a result."""
    if legacy:
        table = legacy_table([fio(v) for v in figures], bad)
    else:
        table = rally_results.table_output(
            [rows.from_result(f'vm-{i}', 'client', fio(v))
             for i, v in enumerate(figures)] +
            [rows.failed(f'bad-{i}', 'client', status, why,
                         'fio-randread-4k')
             for i, (status, why) in enumerate(bad)], True)
    error = ['GuestResultsMissing', 'x'] if bad else []
    return {'duration': 1.0, 'timestamp': 0, 'idle_duration': 0,
            'error': error, 'atomic_actions': [],
            'output': {'additive': [], 'complete': [table]}}


SWEEPS = {
    'm1.bench.baseline': [[1000.0], [800.0, 820.0], [600.0, 610.0, 590.0]],
    'm1.bench.pinned-hugepages-ept': [[1100.0], [1000.0, 1000.0],
                                      [900.0, 910.0, 890.0]],
}


def new_format(sweeps=SWEEPS, extra=(), legacy=False):
    """`rally task report --json` of one task, one workload per flavor."""
    workloads = [{'scenario': {'KvmTune.disk_scaling': {
                     'flavor': {'name': flavor}, 'image': {'name': 'img'},
                     'workload': 'fio-randread-4k',
                     'vm_counts': [1, 2, 3]}},
                  'data': [iteration(f, legacy=legacy) for f in steps] +
                  list(extra),
                  'sla_results': {'sla': []}}
                 for flavor, steps in sweeps.items()]
    workloads.append({'scenario': {'Dummy.dummy': {}}, 'data': [],
                      'sla_results': {}})
    return {'info': {}, 'tasks': [{'subtasks': [{'workloads': workloads}]}]}


def old_format(sweeps=SWEEPS):
    """`rally task results` of the same."""
    return [{'key': {'name': 'KvmTune.disk_scaling', 'pos': i,
                     'kw': {'args': {'flavor': {'name': flavor},
                                     'workload': 'fio-randread-4k'}}},
             'result': [iteration(f) for f in steps], 'sla': []}
            for i, (flavor, steps) in enumerate(sweeps.items())]


def write(tmp_path, doc, name='results.json'):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def baseline_file(tmp_path, workload='fio-randread-4k'):
    """A file as `kvmtune baseline` writes it (kvmtune.bench.baseline)."""
    result = fio(2000.0, emulated=False)
    result['workload'] = workload
    path = tmp_path / 'bm.json'
    path.write_text(json.dumps({
        'schema': 1, 'kind': 'kvmtune-baseline',
        'time': '2026-11-21T20:00:00Z', 'workload': workload,
        'emulated': False, 'result': result}))
    return str(path)


@pytest.mark.parametrize('doc', [new_format(), old_format(),
                                 new_format(legacy=True)])
def test_every_rally_format_and_table_gives_the_same_runs(doc):
    runs = rally_results.runs_from(doc, 'r.json')
    assert [r.flavor for r in runs] == list(SWEEPS)
    assert [r.label for r in runs] == [f'r:{f}' for f in SWEEPS]
    assert sorted(runs[0].iterations) == [1, 2, 3]
    assert runs[0].emulated
    two, = runs[0].iterations[2]
    assert [r.iops for r in two] == [800.0, 820.0]
    # one unit set whatever the table held: bytes/s and ns
    assert two[0].bw_bytes_s == pytest.approx(800.0 * 4096, rel=1e-6)
    assert two[0].lat_ns.mean == pytest.approx(1e9 / 800.0, rel=1e-6)
    assert two[0].lat_ns.p99 == pytest.approx(2e9 / 800.0, rel=1e-6)


def test_the_table_holds_the_rows_in_their_own_units():
    row = rows.from_result('vm-0', 'client', fio(1000.0))
    table = rally_results.table_output([row], True)
    assert table['data']['cols'] == list(rows.COLUMNS)
    assert 'emulated' in table['description']
    back, = rally_results.rows_of({'complete': [table]})
    assert back == row
    assert rally_results.rows_of({'complete': []}) is None


def test_a_sweep_of_one_flavor_is_labelled_by_its_file():
    doc = new_format({'m1.a': [[1000.0]]})
    run, = rally_results.runs_from(doc, '/x/before.json')
    assert run.label == 'before'
    run, = rally_results.runs_from(doc, '/x/before.json', many=True)
    assert run.label == 'before:m1.a'
    assert run.record['settings'] == {'flavor': 'm1.a'}


def test_failed_iterations_and_guests_are_listed():
    doc = new_format({'f': [[1000.0]]}, extra=[
        iteration([500.0], bad=[('late', 'ready after start_at')]),
        {'output': {'complete': []}, 'error': ['Timeout', 'too\nlong']}])
    run, = rally_results.runs_from(doc, 'r.json')
    assert run.failures == ['2 VMs: bad-0: late (ready after start_at)',
                            'iteration failed: Timeout: too long']


@pytest.mark.parametrize('doc, words', [
    ({'some': 'dict'}, 'not a Rally task result'),
    ([1, 2], 'not a Rally task result'),
    (new_format({}), 'holds no KvmTune scaling workload'),
])
def test_what_is_not_a_sweep(doc, words):
    with pytest.raises(InputError, match=words):
        rally_results.runs_from(doc, 'r.json')


def test_budget_of_each_step_from_its_atomic_actions():
    run, = rally_results.load(SIGNAL)
    assert [n for n, _ in run.budgets] == [1, 6, 10]
    doc = rally_results.read(SIGNAL)
    (_, _, data, _), = rally_results.workloads(doc)
    for (vms, b), it in zip(run.budgets, data):
        seconds = rally_results.action_seconds(it['atomic_actions'])
        assert b['boot'] == (seconds['kvmtune.create_servers'] +
                             seconds['kvmtune.wait_active'] +
                             seconds['nova.create_server_group'])
        assert b['ready'] == seconds['kvmtune.wait_ready']
        assert b['workload'] == (seconds['kvmtune.start'] +
                                 seconds['kvmtune.wait_results'])
        assert b['delete'] == seconds['kvmtune.delete_servers']
        phases = sum(b[p] for p, _ in rally_results.BUDGET)
        assert phases <= b['wall'] < phases + 2.0    # Rally's own is small
        # the workload phase holds the 10 s run and the verdicts' reading
        assert 10.0 <= b['workload'] < 10.0 + 20.0
    # the host saw the last guest ready this long after the create calls
    assert [round(b['slowest_ready'], 2) for _, b in run.budgets] == [
        18.58, 59.57, 98.08]


def test_the_signal_run_met_its_target_every_guest_valid():
    run, = rally_results.load(SIGNAL)
    assert not run.failures
    # a table of the old columns: read once, into the one unit set
    one, = run.iterations[1][0]
    assert one.ok and one.iops > 0 and one.lat_ns.mean > 1000.0
    for vms, b in run.budgets:
        assert b['wall'] <= b['slowest_ready'] + 10 + 20


def test_old_mode_step_has_no_ready_phase():
    run, = rally_results.load(OLD)
    (vms, b), = run.budgets
    assert vms == 1 and b['ready'] == 0.0 and b['slowest_ready'] is None
    # its wait was the guessed margin: 45 + 20 s before the 10 s run
    assert b['workload'] > 45 + 20 + 10 - 5


def test_old_format_sums_an_action_timed_twice():
    # The network scenario creates and waits for its server, then its
    # clients: Rally's own old-format exporter keys the second ones
    # "name (2)"; both formats give the same seconds and boot phase.
    from rally.plugins.task.exporters import old_json_results

    actions = []
    t = 100.0
    for name, took in (('nova.create_server_group', 0.5),
                       ('kvmtune.create_servers', 1.0),
                       ('kvmtune.wait_active', 3.0),
                       ('kvmtune.create_servers', 2.0),
                       ('kvmtune.wait_active', 6.0),
                       ('kvmtune.wait_results', 10.0)):
        actions.append({'name': name, 'started_at': t,
                        'finished_at': t + took, 'children': []})
        t += took
    old = old_json_results._to_old_atomic_actions_format(actions)
    assert 'kvmtune.wait_active (2)' in old
    new_seconds = rally_results.action_seconds(actions)
    assert rally_results.action_seconds(dict(old)) == new_seconds
    assert new_seconds['kvmtune.wait_active'] == 9.0
    iteration = {'duration': t - 100.0, 'idle_duration': 0.0,
                 'timestamp': 100.0, 'output': {'additive': [],
                                                'complete': []}}
    boot = [rally_results.budget(dict(iteration, atomic_actions=a))['boot']
            for a in (actions, dict(old))]
    assert boot == [12.5, 12.5]
