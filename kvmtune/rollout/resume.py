"""A rollout run again: which hosts it takes up, and the cloud its later
batches will find.

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
            if action != 'none' or started.get(host, False)]


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
             and check.action != 'none']
    state.forget(*[nova.get(host, host) for host in again])
    return again


def back_by_then(snapshot: Any, earlier: Sequence[str]) -> Any:
    """The preflight's snapshot (kvmtune.rollout.preflight.Snapshot) as a
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
