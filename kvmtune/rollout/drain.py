"""The drain: every server leaves a disabled compute host.

As StackHPC's nova-compute-drain role and OSISM's ``manage compute
migrate`` do it (osism/python-osism, osism/commands/compute.py): ``ACTIVE``
guests by live migration (``os-migrateLive``, ``block_migration: auto``, the
scheduler picks the destination), ``SHUTOFF`` ones by cold migration
(``migrate``), whose resize is confirmed (``confirmResize``) once it is
``VERIFY_RESIZE``; a cold migration away from the host that a killed drain
left unconfirmed is found in ``GET /os-migrations`` and confirmed too. Any
other status (ERROR, PAUSED, SUSPENDED, SHELVED, RESCUE) is refused before
anything moves: the operator decides about those guests. The drain polls
in bounded time and ends by asserting the host is empty; a migration that
fails (the server back on the host, idle) is one line naming the server
and the migration's status. Every request goes through kvmtune's cloud
connection (reads retried, writes once: run the drain again, it
converges).
"""

from collections.abc import Callable
from collections.abc import Sequence
import dataclasses
import time
from typing import Any

from kvmtune.errors import CloudError
from kvmtune.rollout import nova
from kvmtune.rollout.nova import Server

# How long a drain waits for the host's servers to leave, and how often it
# looks. A live migration of a large guest can take minutes: the caller
# (the rollout's drain step) may give more.
DRAIN_TIMEOUT = 900.0
POLL_INTERVAL = 2.0

LIVE = 'live-migrate'
COLD = 'cold-migrate'
CONFIRM = 'confirm-resize'
# Nova's server status -> what the drain does (nova/api/openstack/common.py
# _STATE_MAP for the status names)
MOVES = {'ACTIVE': LIVE, 'SHUTOFF': COLD, 'VERIFY_RESIZE': CONFIRM}
# statuses a move passes through: wait
MOVING = ('MIGRATING', 'RESIZE', 'REBOOT', 'BUILD')


@dataclasses.dataclass
class Move:
    """One server the drain moved (or found moving)."""
    id: str
    name: str
    flavor: str
    status_before: str
    action: str
    status_after: str | None = None
    host_after: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def refused(found: Sequence[Server]) -> list[Server]:
    """The servers the drain does not move: neither ACTIVE nor SHUTOFF nor
    waiting for a confirm, and not on their way (a task running)."""
    return [s for s in found if s.status not in MOVES
            and s.status not in MOVING and not s.task_state]


def next_actions(found: Sequence[Server], asked: dict[str, int]
                 ) -> tuple[list[tuple[Server, str]], list[Server],
                            list[Server]]:
    """What one pass of the drain does with the host's servers.

    :param found: the servers on the host now
    :param asked: {server id: moves asked for it so far} (this drain)
    :returns: (actions [(server, LIVE|COLD|CONFIRM)], servers to wait for,
        servers whose move failed: asked to move, yet back on the host
        with no task running)
    """
    actions: list[tuple[Server, str]] = []
    waiting: list[Server] = []
    failed: list[Server] = []
    for server in found:
        action = MOVES.get(server.status)
        if server.task_state or server.status in MOVING:
            waiting.append(server)
        elif action == CONFIRM:
            actions.append((server, CONFIRM))
        elif action is None:
            failed.append(server)
        elif asked.get(server.id):
            failed.append(server)
        else:
            actions.append((server, action))
    return actions, waiting, failed


_BODIES = {
    # compute API 2.25+: block_migration "auto"; 2.30-2.67 force; at 2.68+
    # host is required (null: the scheduler chooses)
    LIVE: {'os-migrateLive': {'block_migration': 'auto', 'host': None}},
    COLD: {'migrate': None},
    CONFIRM: {'confirmResize': None},
}


def _act(cloud: Any, server_id: str, action: str) -> None:
    cloud.compute('POST', f'/servers/{server_id}/action', _BODIES[action])


def _failure(cloud: Any, host: str, server: Server) -> CloudError:
    migration = None
    try:
        migration = nova.last_migration(cloud, server.id)
    except CloudError:
        pass
    what = (f'migration {migration.get("id")} is {migration.get("status")}'
            if migration else 'no migration was recorded')
    return CloudError(
        f'server {server.id} ({server.name}, {server.status}) did not '
        f'leave: {what}', source=f'host {host}', key='drain',
        fix=f'see "openstack server event list {server.id}" for why; '
            'move or stop it by hand, then run the drain again (the host '
            'stays disabled)')


def drain(cloud: Any, host: str, *, timeout: float = DRAIN_TIMEOUT,
          poll: float = POLL_INTERVAL,
          clock: Callable[[], float] = time.monotonic,
          sleep: Callable[[float], None] = time.sleep) -> list[Move]:
    """Move every server off ``host`` and return what moved.

    The host's nova-compute must be disabled first (else the scheduler
    may put new guests there while it drains).

    :raises CloudError: the service is enabled; a server is in a status
        the drain does not move (named, before anything moves); a move
        failed; the host is not empty after ``timeout`` seconds
    """
    item = nova.service(cloud, host)
    if item.status != 'disabled':
        raise CloudError('nova-compute is enabled: new guests could land '
                         'while it drains', source=f'host {host}',
                         key='drain', fix='disable it first (the rollout\'s '
                         'disable step)')
    found = nova.servers(cloud, host)
    stuck = refused(found)
    if stuck:
        names = ', '.join(f'{s.id} ({s.name}, {s.status})' for s in stuck)
        raise CloudError(
            f'{len(stuck)} server(s) the drain does not move: {names}',
            source=f'host {host}', key='drain',
            fix='start, stop, unpause or delete them (the drain moves '
                'ACTIVE guests live and SHUTOFF guests cold), then run the '
                'drain again; nothing was moved')
    moves: dict[str, Move] = {}
    _confirm(cloud, host, moves)
    asked: dict[str, int] = {}
    deadline = clock() + timeout
    while True:
        for server in found:
            busy = server.task_state or server.status in MOVING
            moves.setdefault(server.id, Move(
                server.id, server.name, server.flavor_name, server.status,
                'wait' if busy else MOVES.get(server.status) or 'wait'))
        actions, waiting, failed = next_actions(found, asked)
        if failed:
            raise _failure(cloud, host, failed[0])
        for server, action in actions:
            _act(cloud, server.id, action)
            if action != CONFIRM:
                asked[server.id] = asked.get(server.id, 0) + 1
        _confirm(cloud, host, moves)
        if not found:
            break
        if clock() >= deadline:
            names = ', '.join(f'{s.id} ({s.status}/{s.task_state})'
                              for s in found)
            raise CloudError(
                f'not empty after {timeout:.0f} s: {names}',
                source=f'host {host}', key='drain',
                fix='see "openstack server migration list --host HOST"; '
                    'run the drain again to wait longer (it converges)')
        sleep(poll)
        found = nova.servers(cloud, host)
    _settle(cloud, host, moves, clock, deadline, sleep, poll)
    if nova.servers(cloud, host):
        raise CloudError('not empty after the drain', source=f'host {host}',
                         key='drain', fix='run the drain again')
    return sorted(moves.values(), key=lambda m: m.id)


def _confirm(cloud: Any, host: str, moves: dict[str, Move]) -> None:
    """Confirm every cold migration away from ``host`` that waits for it:
    its status ``finished`` and its server VERIFY_RESIZE with no task.
    Nova's finish_resize saves the migration ``finished`` before the
    server's vm_state ``resized``, and refuses a confirm in between (HTTP
    409, seen on the test cloud): such a one waits for the next pass.
    Nova marks the migration ``confirming`` before it answers, so a
    migration is confirmed once, however often this runs."""
    for migration in nova.unconfirmed(cloud, host):
        uuid = migration.get('instance_uuid')
        if not uuid:
            continue
        moves.setdefault(uuid, Move(uuid, '', '', 'VERIFY_RESIZE', CONFIRM))
        server = Server.from_api(
            cloud.compute('GET', f'/servers/{uuid}')['server'])
        if server.status == 'VERIFY_RESIZE' and not server.task_state:
            _act(cloud, uuid, CONFIRM)


def _settle(cloud: Any, host: str, moves: dict[str, Move],
            clock: Callable[[], float], deadline: float,
            sleep: Callable[[float], None], poll: float) -> None:
    """Wait until every moved server is in a still status on its new host
    (a cold-migrated one confirmed: SHUTOFF again), and record it."""
    pending = dict(moves)
    while pending:
        _confirm(cloud, host, pending)
        for uuid in list(pending):
            body = cloud.compute('GET', f'/servers/{uuid}')['server']
            server = Server.from_api(body)
            move = pending[uuid]
            move.name = move.name or server.name
            move.flavor = move.flavor if move.flavor not in ('', '?') \
                else server.flavor_name
            if server.task_state or server.status in MOVING or \
                    server.status == 'VERIFY_RESIZE':
                continue
            move.status_after, move.host_after = server.status, server.host
            del pending[uuid]
        if not pending:
            return
        if clock() >= deadline:
            raise CloudError(
                'moved servers did not settle: ' + ', '.join(sorted(pending)),
                key='drain', fix='run the drain again (it converges)')
        sleep(poll)
