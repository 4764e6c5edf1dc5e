"""A rollout run again: which hosts it takes up, and the cloud its later
batches will find.

``to_roll`` keeps the hosts with something to do and those the run took
out and has not put back (``started``, read from the state file,
kvmtune.rollout.state, after ``start_over`` has forgotten the steps of
the hosts done with the run and changed since); ``back_by_then`` is the
preflight's snapshot as a later batch finds the cloud, the hosts of
earlier batches enabled again.
"""

from collections.abc import Sequence
import dataclasses
import os
from typing import Any


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


def started(state_file: str | None, checks: Sequence[Any]
            ) -> dict[str, bool]:
    """{host: taken out by the state file's run and not put back}: its
    service disabled by the run and not enabled again. A query: it reads
    the state file, never writes it (``start_over`` does, first)."""
    if state_file is None or not os.path.exists(state_file):
        return {}
    from kvmtune.rollout import state as states

    found = states.load(state_file)
    return {check.host: (found.done(check.host, 'disable')
                         and not found.done(check.host, 'enable'))
            for check in checks}


def start_over(state_file: str | None, checks: Sequence[Any]
               ) -> list[str]:
    """Forget, in the state file, the steps of each host that is done
    with its run (enabled again) and has something to do again (its
    check's action is not ``none``: changed since), so the run takes it
    up from its first step: disabled and drained again, never rebooted
    under the guests it took back. Called once, where a run starts,
    before ``started`` is asked. Returns those hosts."""
    if state_file is None or not os.path.exists(state_file):
        return []
    from kvmtune.rollout import state as states

    found = states.load(state_file)
    again = [check.host for check in checks
             if found.done(check.host, 'enable') and check.action != 'none']
    for host in again:
        found.forget(host)
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
