"""A step's time budget read from real Rally results: the 1/6/10-guest
disk sweep (m1.bench.baseline, fio-randread-4k, 10 s) on the test cloud
under QEMU TCG (emulated), once with the signal start (issue 15) and its
1-guest step once in the old start_at mode, `rally task report --json`."""

import os

from kvmtune.report import rally_results
from kvmtune.report import render
from kvmtune.report import scaling
from tests import paths

SIGNAL = os.path.join(paths.FIXTURES, 'outputs',
                      'rally-disk-sweep-1-6-10-signal-tcg.json')
OLD = os.path.join(paths.FIXTURES, 'outputs', 'rally-disk-sweep-1-at-tcg.json')


def test_budget_of_each_step_from_its_atomic_actions():
    sweep, = rally_results.load(SIGNAL)
    assert [n for n, _ in sweep.budgets] == [1, 6, 10]
    doc = rally_results.read(SIGNAL)
    (_, _, data, _), = rally_results.workloads(doc)
    for (vms, b), it in zip(sweep.budgets, data):
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
    assert [round(b['slowest_ready'], 2) for _, b in sweep.budgets] == [
        18.58, 59.57, 98.08]


def test_the_signal_run_met_its_target_every_guest_valid():
    sweep, = rally_results.load(SIGNAL)
    assert not sweep.failures
    for vms, b in sweep.budgets:
        assert b['wall'] <= b['slowest_ready'] + 10 + 20


def test_old_mode_step_has_no_ready_phase():
    sweep, = rally_results.load(OLD)
    (vms, b), = sweep.budgets
    assert vms == 1 and b['ready'] == 0.0 and b['slowest_ready'] is None
    # its wait was the guessed margin: 45 + 20 s before the 10 s run
    assert b['workload'] > 45 + 20 + 10 - 5


def test_report_text_closes_each_sweep_with_its_budget():
    sweep, = rally_results.load(SIGNAL)
    out = render.text([(sweep, scaling.analyse(sweep))])
    lines = out.splitlines()
    start = lines.index(next(x for x in lines
                             if x.startswith('step time budget')))
    assert [x.split(':')[0].strip() for x in lines[start + 1:start + 4]] \
        == ['1 VMs', '6 VMs', '10 VMs']
    assert 'slowest ready 98.1' in lines[start + 3]
    assert 'emulated' in out


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
