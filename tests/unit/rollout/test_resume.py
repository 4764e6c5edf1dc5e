"""kvmtune.rollout.resume: a rollout run again."""

import os

from kvmtune.rollout import resume


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
    checks = [check.HostCheck('inv-3', '/', None, action='none')]
    assert resume.started(run, checks) == {'inv-3': False}
    assert resume.started(run, checks, {'inv-3': 'nova-3'}) == \
        {'inv-3': True}


def test_later_batches_find_the_hosts_a_rollout_took_out_back():
    from kvmtune.capacity import placement
    from kvmtune.rollout import nova
    from kvmtune.rollout import preflight

    def service(host, status, why=None):
        return nova.Service(id=host, host=host, status=status, state='up',
                            disabled_reason=why)

    off = frozenset({'COMPUTE_STATUS_DISABLED', 'HW_CPU_X86_AVX2'})
    snapshot = preflight.Snapshot(
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
