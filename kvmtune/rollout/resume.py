"""A rollout run again: which hosts it takes up, the plans it applies
again, and the cloud its later batches will find.

Where a run starts (kvmtune.rollout.playbook.run) the state file
(kvmtune.rollout.state) is read once, by ``state.open_run``, and that
State is asked here: ``start_over`` forgets, in the file, the steps of
the hosts done with the run and changed since (the one writer here,
first); ``started`` (a query) names the hosts the run took out and has
not put back; ``to_roll`` keeps those and the hosts with something to
do. ``back_by_then`` is the preflight's snapshot as a later batch finds
the cloud, the hosts of earlier batches enabled again.

The state file keys a host by its name in Nova (the steps are made as
``kvmtune rollout-step --host NOVA-NAME``); the checks name it as the
inventory does: ``nova`` maps one to the other (``kvmtune_nova_host``),
a host it leaves out keeps its inventory name.
"""

from collections.abc import Mapping
from collections.abc import Sequence
import dataclasses
from typing import Any
from typing import TYPE_CHECKING

from kvmtune.rollout import vocabulary

if TYPE_CHECKING:
    from kvmtune.rollout.state import State


def to_roll(actions: dict[str, str], started: dict[str, bool]
            ) -> list[str]:
    """The hosts the playbook runs on, in the order of ``actions`` (host:
    the check's action, inventory order): those with something to do,
    and those this run took out and has not put back (``started``: the
    state file shows them disabled and not enabled again), whatever they
    need now. A host with nothing to do is left alone: not disabled, not
    drained, not rebooted."""
    return [host for host, action in actions.items()
            if action in vocabulary.ROLLED or started.get(host, False)]


def started(state: 'State | None', checks: Sequence[Any],
            nova: Mapping[str, str] | None = None) -> dict[str, bool]:
    """{host: taken out by the state's run and not put back}: its
    service disabled by the run and not enabled again. A query of the
    State read where the run started; the file is not read again."""
    if state is None:
        return {}
    nova = nova or {}
    return {check.host: state.taken_out(nova.get(check.host, check.host))
            for check in checks}


def start_over(state: 'State | None', checks: Sequence[Any],
               nova: Mapping[str, str] | None = None) -> list[str]:
    """Forget, in the state file, the steps of each host that is done
    with its run (enabled again) and has something to do again (its
    check's action is not ``none``: changed since), so the run takes it
    up from its first step: disabled and drained again, never rebooted
    under the guests it took back. Called once, where a run starts,
    before ``started`` is asked: ``state`` is written (one locked write
    for them all) and holds the file as written. Returns those hosts."""
    if state is None:
        return []
    nova = nova or {}
    again = [check.host for check in checks
             if state.done(nova.get(check.host, check.host), 'enable')
             and check.action in vocabulary.ROLLED]
    state.forget(*[nova.get(host, host) for host in again])
    return again


def _key(asked: str, nova: Mapping[str, str]) -> tuple[str, str] | None:
    """(inventory name, Nova name) of the host ``asked`` names either way,
    among the run's hosts (``nova``), or None."""
    if asked in nova:
        return asked, nova[asked]
    return next(((name, key) for name, key in nova.items() if key == asked),
                None)


def replan(state: 'State | None', asked: Sequence[str],
           nova: Mapping[str, str]) -> list[str]:
    """Forget, in the state file, the plan the run applied to each host
    of ``asked`` (``kvmtune rollout --replan HOST``: its inventory name or
    its name in Nova) and its steps made with it (kvmtune.rollout.state
    .State.replan): the apply step plans it again, from the profile on
    its facts then, applies that plan and its gate judges it. ``nova``:
    {inventory name: Nova name} of the run's hosts. Called where a run
    starts, before anything else is written. Returns the hosts'
    inventory names.

    :raises InputError: no state file; a host not among the run's; a host
        the run has applied no plan to, or has enabled again
    """
    from kvmtune.errors import InputError

    if not asked:
        return []
    if state is None:
        raise InputError('the plan a run applied is in its state file',
                         key='--replan', fix='give the rollout\'s --state '
                                             'FILE')
    found = []
    for name in asked:
        key = _key(name, nova)
        if key is None:
            raise InputError(f'{name} is not a host of this rollout',
                             key='--replan', fix='give a host of the '
                             'inventory and --limit, as the rollout names '
                             'it')
        if state.applied(key[1]) is None:
            raise InputError(f'{name} has no plan applied by run '
                             f'{state.run_id} that it has not finished',
                             source=state.path, key='--replan',
                             fix='give a host the stopped rollout left '
                                 'disabled after its apply step, or drop '
                                 '--replan')
        found.append(key)
    for _, in_nova in found:
        state.replan(in_nova)
    return [name for name, _ in found]


def applied(state: 'State | None', hosts: Sequence[str],
            nova: Mapping[str, str] | None = None
            ) -> dict[str, dict[str, Any]]:
    """{Nova name: the plan the run applied} of ``hosts`` (inventory
    names) whose run is not finished (kvmtune.rollout.state.State
    .applied): their apply step applies that plan again and their gate
    judges it (the apply role's ``kvmtune_applied_plans``)."""
    if state is None:
        return {}
    nova = nova or {}
    keys = [nova.get(host, host) for host in hosts]
    return {key: plan for key in keys
            if (plan := state.applied(key)) is not None}


def back_by_then(snapshot: Any, earlier: Sequence[str]) -> Any:
    """The preflight's snapshot (kvmtune.rollout.snapshot.Snapshot) as a
    later batch will find the cloud: a host of an earlier batch that a
    kvmtune rollout disabled (a rollout stopped, run again) is enabled
    again by the time the later batch starts, as that batch's own
    preflight step will read it: its service enabled, its node without
    Placement's COMPUTE_STATUS_DISABLED trait."""
    from kvmtune.capacity import request

    services = dict(snapshot.services)
    back = set()
    for host in earlier:
        service = services.get(host)
        if service is not None and service.by_a_rollout():
            services[host] = dataclasses.replace(
                service, status='enabled', disabled_reason=None)
            back.add(host)
    nodes = [dataclasses.replace(node, traits=node.traits - {
        request.DISABLED_TRAIT}) if node.service_host in back else node
        for node in snapshot.nodes]
    return dataclasses.replace(snapshot, services=services, nodes=nodes)
