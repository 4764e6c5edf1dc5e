"""kvmtune.rollout.resume: a rollout run again."""

import os

import pytest

from kvmtune.rollout import resume
from kvmtune.rollout import snapshot as snapshots
from tests import paths


def test_hosts_with_nothing_to_do_are_left_alone_unless_started():
    actions = {'c1': 'none', 'c2': 'reboot', 'c3': 'none', 'c4': 'restart'}
    assert resume.to_roll(actions, {}) == ['c2', 'c4']
    # c3 was taken out by the run (disabled, not enabled again): it goes
    # on whatever it needs now (after its reboot, nothing)
    assert resume.to_roll(actions, {'c3': True, 'c1': False}) == \
        ['c2', 'c3', 'c4']
    assert resume.to_roll({'c1': 'none'}, {}) == []


def test_started_hosts_from_the_state_file(tmp_path):
    from kvmtune.rollout import check
    from kvmtune.rollout import state

    path = str(tmp_path / 'rollout.json')
    run, _ = state.open_run(path, profile='p', run_id='R')
    for step in ('preflight', 'disable', 'drain'):
        run.mark('mid', step)
    for step in state.STEPS:
        run.mark('done', step)
        run.mark('again', step)
    checks = [check.HostCheck(host, '/', None, action=action) for host,
              action in (('mid', 'none'), ('done', 'none'),
                         ('again', 'reboot'), ('new', 'reboot'))]
    with open(path) as f:
        before = f.read()
    # the run start reads the file once (open_run); started asks that
    # State: a query, the file as it was
    read, _ = state.open_run(path, profile='p')
    assert resume.started(read, checks) == {
        'mid': True, 'done': False, 'again': False, 'new': False}
    with open(path) as f:
        assert f.read() == before
    assert state.load(path).done('again', 'enable')
    # where the run starts: done with the run and changed since, it
    # starts over (disabled and drained again, never rebooted under the
    # guests it took back); done and unchanged, it stays done
    assert resume.start_over(read, checks) == ['again']
    assert state.load(path).next_step('again') == 'preflight'
    assert state.load(path).done('done', 'enable')
    # the State start_over wrote is the file: started reads nothing more
    os.rename(path, path + '.moved')
    assert resume.started(read, checks) == {
        'mid': True, 'done': False, 'again': False, 'new': False}
    os.rename(path + '.moved', path)
    assert resume.start_over(read, checks) == []
    assert resume.started(None, checks) == {}
    assert resume.start_over(None, checks) == []


def test_hosts_named_otherwise_in_nova_are_keyed_by_their_nova_name(
        tmp_path):
    """The steps are recorded under a host's name in Nova
    (kvmtune_nova_host); the checks name it as the inventory does."""
    from kvmtune.rollout import check
    from kvmtune.rollout import state

    run, _ = state.open_run(str(tmp_path / 'rollout.json'), 'p', 'R')
    for step in ('preflight', 'disable', 'drain', 'apply'):
        run.mark('nova-3', step)
    run.plans['nova-3'] = {'profile': 'p'}
    checks = [check.HostCheck('inv-3', '/', None, action='none')]
    assert resume.started(run, checks) == {'inv-3': False}
    assert resume.started(run, checks, {'inv-3': 'nova-3'}) == \
        {'inv-3': True}
    assert resume.applied(run, ['inv-3'], {'inv-3': 'nova-3'}) == \
        {'nova-3': {'profile': 'p'}}


def _applied(tmp_path, hosts=('c2', 'c3')):
    """A run that applied a plan to each of ``hosts`` (left disabled, as
    a stopped rollout leaves a host whose gate failed)."""
    from kvmtune.rollout import state
    from kvmtune.tuning import plan

    path = str(tmp_path / 'rollout.json')
    run, _ = state.open_run(path, profile='io-tuned', run_id='R')
    applied = plan.for_host(['io-tuned'], root=os.path.join(
        paths.HOSTS, 'intel-2s-smt-ept-1g'))[0].to_dict()
    for host in hosts:
        for step in ('preflight', 'disable', 'drain'):
            run.mark(host, step)
        run.record_plan(host, applied)
    return path, applied


def test_a_run_again_applies_the_plan_applied_until_enabled(tmp_path):
    from kvmtune.rollout import state

    path, applied = _applied(tmp_path)
    run, _ = state.open_run(path, profile='io-tuned')
    assert resume.applied(run, ['c2', 'c3', 'c4']) == {'c2': applied,
                                                       'c3': applied}
    # enabled: its run is done, the plan stays on record but is not
    # applied again (a host changed since starts over, its plan forgotten)
    run.mark('c3', 'gate')
    run.mark('c3', 'enable')
    assert resume.applied(state.load(path), ['c2', 'c3']) == {'c2': applied}
    state.load(path).forget('c3')
    assert 'c3' not in state.load(path).plans


def test_replan_forgets_the_plan_and_its_steps_only(tmp_path):
    """--replan HOST: the plan the run applied and the steps made with it
    are forgotten; the host stays taken out (its disable and drain done),
    so the run goes on with it from its apply step."""
    from kvmtune.rollout import state

    path, applied = _applied(tmp_path)
    run, _ = state.open_run(path, profile='io-tuned')
    run.mark('c2', 'gate')      # a gate step that passed, then a stop
    nova = {'inv-2': 'c2', 'c3': 'c3'}
    assert resume.replan(run, ['inv-2'], nova) == ['inv-2']
    again = state.load(path)
    assert again.next_step('c2') == 'apply' and again.taken_out('c2')
    assert 'c2' not in again.plans and again.applied('c2') is None
    assert again.applied('c3') == applied
    # by its name in Nova too
    assert resume.replan(again, ['c3'], nova) == ['c3']
    assert resume.applied(state.load(path), ['inv-2', 'c3'], nova) == {}
    assert resume.replan(run, [], nova) == []


@pytest.mark.parametrize('asked, nova, with_state, words', [
    (['c9'], {'c2': 'c2'}, True,
     "--replan: c9 is not a host of this rollout (fix: give a host of the "
     "inventory and --limit, as the rollout names it)"),
    (['c2'], {'c2': 'c2'}, True,
     '--replan: c2 has no plan applied by run R that it has not finished '
     '(fix: give a host the stopped rollout left disabled after its apply '
     'step, or drop --replan)'),
    (['c2'], {'c2': 'c2'}, False,
     "--replan: the plan a run applied is in its state file (fix: give "
     "the rollout's --state FILE)"),
])
def test_replan_refuses_what_it_cannot_forget(tmp_path, asked, nova,
                                              with_state, words):
    from kvmtune.errors import InputError
    from kvmtune.rollout import state

    path = str(tmp_path / 'rollout.json')
    run, _ = state.open_run(path, profile='p', run_id='R')
    for step in ('preflight', 'disable', 'drain'):
        run.mark('c2', step)
    with open(path) as f:
        before = f.read()
    with pytest.raises(InputError) as err:
        resume.replan(run if with_state else None, asked, nova)
    assert err.value.line().endswith(words)
    with open(path) as f:
        assert f.read() == before


def test_later_batches_find_the_hosts_a_rollout_took_out_back():
    from kvmtune.capacity import placement
    from kvmtune.rollout import nova
    from kvmtune.rollout import preflight

    def service(host, status, why=None):
        return nova.Service(id=host, host=host, status=status, state='up',
                            disabled_reason=why)

    off = frozenset({'COMPUTE_STATUS_DISABLED', 'HW_CPU_X86_AVX2'})
    snapshot = snapshots.Snapshot(
        nodes=[placement.Host(f'{h}.node', h, f'u-{h}', traits=off)
               for h in ('c1', 'c2', 'c3')]
        + [placement.Host('c4.node', 'c4', 'u-c4')],
        services={
            'c1': service('c1', 'disabled', 'kvmtune rollout R1: pinning'),
            'c2': service('c2', 'disabled', 'hardware repair'),
            'c3': service('c3', 'disabled', 'kvmtune rollout R1: pinning'),
            'c4': service('c4', 'enabled')},
        servers={})
    later = resume.back_by_then(snapshot, ['c1', 'c2'])
    assert {h: s.status for h, s in later.services.items()} == {
        'c1': 'enabled', 'c2': 'disabled', 'c3': 'disabled',
        'c4': 'enabled'}
    assert [n.traits for n in later.nodes] == [
        {'HW_CPU_X86_AVX2'}, off, off, frozenset()]
    assert [n.name for n in preflight.targets(later, ['c4'])] == \
        ['c1.node']
    # a copy: the snapshot itself is as read
    assert snapshot.services['c1'].status == 'disabled'
    assert snapshot.nodes[0].traits == off
