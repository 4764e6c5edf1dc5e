"""The rollout's state file: one run id kept across runs, each host's
steps recorded atomically, a finished host finished, a bad file one line."""

import json
import multiprocessing

import pytest

from kvmtune.errors import InputError
from kvmtune.rollout import state


def test_a_new_run_then_the_same_run_again(tmp_path):
    path = str(tmp_path / 'rollout.json')
    first, started = state.open_run(path, profile='p')
    assert started and first.run_id
    again, started = state.open_run(path, profile='p')
    assert not started and again.run_id == first.run_id
    same, _ = state.open_run(path, run_id=first.run_id)
    assert same.run_id == first.run_id


def test_run_ids_differ():
    assert len({state.new_run_id() for _ in range(50)}) == 50


def test_steps_are_recorded_and_survive_a_new_process(tmp_path):
    path = str(tmp_path / 'rollout.json')
    run, _ = state.open_run(path, profile='p', run_id='R1')
    for step in ('preflight', 'disable', 'drain'):
        run.mark('c2', step)
    loaded = state.load(path)
    assert loaded.done('c2', 'drain') and not loaded.done('c2', 'gate')
    assert loaded.next_step('c2') == 'apply'
    assert loaded.next_step('c3') == 'preflight'
    for step in state.STEPS:
        loaded.mark('c2', step)
    assert state.load(path).finished('c2')
    assert state.load(path).pending(['c2', 'c3']) == ['c3']
    assert state.summary(state.load(path), ['c2', 'c3']) == [
        ['c2', 'enable', 'finished'], ['c3', '', 'preflight']]
    # the time of the first mark stays
    first = json.loads(open(path).read())['hosts']['c2']['disable']
    loaded.mark('c2', 'disable')
    assert json.loads(open(path).read())['hosts']['c2']['disable'] == first


def test_a_host_forgotten_starts_over(tmp_path):
    path = str(tmp_path / 'rollout.json')
    run, _ = state.open_run(path, profile='p', run_id='R1')
    for step in state.STEPS:
        run.mark('c2', step)
    run.mark('c3', 'preflight')
    state.load(path).forget('c2')
    assert state.load(path).next_step('c2') == 'preflight'
    assert state.load(path).done('c3', 'preflight')
    state.load(path).forget('c9')     # not there: nothing written
    assert state.load(path).to_dict()['hosts'] == {
        'c3': {'preflight': state.load(path).hosts['c3']['preflight']}}


def _mark(path, host):
    run = state.load(path)
    for step in state.STEPS:
        run.mark(host, step)


def test_hosts_of_one_batch_write_at_once_and_lose_nothing(tmp_path):
    path = str(tmp_path / 'rollout.json')
    state.open_run(path, profile='p', run_id='R1')
    hosts = [f'c{i}' for i in range(6)]
    with multiprocessing.get_context('fork').Pool(3) as pool:
        pool.starmap(_mark, [(path, h) for h in hosts])
    assert all(state.load(path).finished(h) for h in hosts)


def test_another_run_or_profile_is_refused(tmp_path):
    path = str(tmp_path / 'rollout.json')
    state.open_run(path, profile='p', run_id='R1')
    with pytest.raises(InputError) as exc:
        state.open_run(path, run_id='R2')
    assert exc.value.line().endswith('holds run R1, not R2 (fix: give '
                                     '--run-id R1 to continue that run, or '
                                     'another state file)')
    with pytest.raises(InputError):
        state.open_run(path, profile='q')


PLAN = {'profile': 'p', 'facts_source': None, 'nova_conf': {},
        'nova_conf_services': {}, 'kernel_args': ['isolcpus=2-3'],
        'modprobe': {}, 'extra_specs': {}, 'owned_extra_specs': [],
        'hugepages': [], 'checks': [], 'notes': [], 'withheld': []}


def _plan():
    """A plan as ``kvmtune plan -f json`` prints one, as the state file
    takes it."""
    from kvmtune.tuning import plan
    return plan.from_dict(dict(PLAN)).to_dict()


def test_the_plan_applied_is_recorded_once_with_its_step(tmp_path):
    path = str(tmp_path / 'rollout.json')
    run, _ = state.open_run(path, profile='p', run_id='R1')
    for step in ('preflight', 'disable', 'drain'):
        run.mark('c2', step)
    first = _plan()
    assert run.record_plan('c2', first) == (first, True)
    loaded = state.load(path)
    assert loaded.done('c2', 'apply') and loaded.applied('c2') == first
    # once: a plan made again (after the reboot) does not replace it
    other = dict(first, kernel_args=['isolcpus=4-5'])
    assert state.load(path).record_plan('c2', other) == (first, False)
    assert state.load(path).plans['c2'] == first
    # the other steps of a batch are written beside it, none lost
    run.mark('c3', 'disable')
    assert state.load(path).plans == {'c2': first}
    # replan: the plan and the steps made with it forgotten, the host
    # still taken out
    run.mark('c2', 'gate')
    assert state.load(path).replan('c2')
    again = state.load(path)
    assert again.plans == {} and again.next_step('c2') == 'apply'
    assert again.taken_out('c2')
    assert again.record_plan('c2', other) == (other, True)
    # enabled: its run is done, the plan is not applied again
    again.mark('c2', 'enable')
    assert state.load(path).applied('c2') is None
    # and its plan is dropped from the file, the other host's steps kept
    done = state.load(path)
    assert done.plans == {} and done.done('c3', 'disable')


def test_a_state_file_before_plans_were_recorded_reads(tmp_path):
    path = tmp_path / 'rollout.json'
    path.write_text('{"run_id": "R", "profile": "p", "hosts": {"c2": '
                    '{"disable": "t"}}}')
    found = state.load(str(path))
    assert found.plans == {} and found.taken_out('c2')


@pytest.mark.parametrize('text, key', [
    ('[]', '(top)'), ('{}', 'run_id'), ('{"run_id": "R", "hosts": 3}',
                                        'hosts'),
    ('{"run_id": "R", "hosts": {"c2": {"reboot!": "t"}}}',
     'hosts.c2.reboot!'),
    ('{"run_id": "R", "plans": []}', 'plans'),
    # a plan without its apply step, and one that is not a plan
    ('{"run_id": "R", "hosts": {"c2": {"disable": "t"}}, "plans": {"c2": '
     '{}}}', 'plans.c2'),
    ('{"run_id": "R", "hosts": {"c2": {"apply": "t"}}, "plans": {"c2": '
     '{"profile": "p"}}}', 'plans.c2')])
def test_a_bad_state_file_is_one_line(tmp_path, text, key):
    path = tmp_path / 'rollout.json'
    path.write_text(text)
    with pytest.raises(InputError) as exc:
        state.load(str(path))
    assert exc.value.key == key and '\n' not in exc.value.line()


def test_no_state_file(tmp_path):
    with pytest.raises(InputError):
        state.load(str(tmp_path / 'none.json'))
    with pytest.raises(ValueError):
        state.State(str(tmp_path / 'x.json'), 'R', None).mark('c2', 'bogus')


def test_a_state_file_of_another_inventory_is_refused(tmp_path):
    path = str(tmp_path / 'rollout.json')
    run, new = state.open_run(path, profile='p', inventory='/srv/a.ini')
    assert new and state.load(path).inventory == '/srv/a.ini'
    again, new = state.open_run(path, profile='p', inventory='/srv/a.ini')
    assert not new and again.run_id == run.run_id
    with pytest.raises(InputError) as err:
        state.open_run(path, profile='p', inventory='/srv/b.ini')
    assert err.value.line() == (
        f'{path}: inventory: is a rollout of inventory /srv/a.ini, not '
        '/srv/b.ini (fix: give that inventory, or another state file)')
    # the one a state file written before it kept no inventory takes any
    old = str(tmp_path / 'old.json')
    state.open_run(old, profile='p')
    assert state.open_run(old, inventory='/srv/b.ini')[0].inventory is None
    # edited by hand into something else: one line naming the key
    with open(path, 'w') as f:
        f.write('{"run_id": "R", "inventory": 7}')
    with pytest.raises(InputError) as err:
        state.load(path)
    assert err.value.key == 'inventory' and '\n' not in err.value.line()
