"""The job a benchmark guest runs (doc/design.md section 6).

``build`` returns the JSON-ready dict; ``encode`` the one-line JSON the
guest init reads with sed (config drive ``openstack/latest/user_data``) and
``cmdline`` its ``kvmtune.job=<base64>`` kernel argument. Strings in a job
never hold quotes, backslashes or blanks inside one argument, so the
busybox init needs no JSON parser.
"""

import base64
from collections.abc import Iterable
from collections.abc import Mapping
import json
import re
from typing import Any
from typing import cast
from typing import TypedDict

from kvmtune.errors import InputError
from kvmtune.workloads import commands
from kvmtune.workloads import Workload

SAFE_ARG = re.compile(r'^[A-Za-z0-9@._:/=,+%-]+\Z')
ROLES = ('client', 'server')
# How a client starts besides start_at (design.md 6): on an NMI.
START_MODES = (None, 'nmi')


class _Job(TypedDict):
    workload: str
    tool: str
    target: str | None
    peer: str | None
    role: str
    start_at: int | None
    runtime: int
    hold: bool
    params: dict[str, Any]
    command: str


class Job(_Job, total=False):
    """One guest's job (doc/design.md 6), as build() makes it."""

    start: str
    start_timeout: int
    address: str
    ports: str


def build(workload: Workload, role: str = 'client',
          target: str | None = None, peer: str | None = None,
          start_at: float | None = None, runtime: int | str | None = None,
          hold: bool = False, params: Mapping[str, Any] | None = None,
          address: str | None = None, ports: Iterable[int] | None = None,
          start: str | None = None,
          start_timeout: int | None = None) -> Job:
    """The job dict for one guest.

    :param workload: a ``kvmtune.workloads.Workload``
    :param target: the guest's data disk, e.g. ``/dev/vdb`` (disk
        workloads; never the boot disk, the guest refuses it)
    :param peer: the server's address (network clients)
    :param start_at: epoch seconds of the common start, or None
    :param hold: keep the guest running after the tool (servers)
    :param address: static ``ip/prefix`` for eth0 instead of DHCP
    :param ports: servers only: the ports their clients use
        (``commands.client_ports``); several start one server each
    :param start: ``"nmi"``: the client says ``ready`` and starts when it
        takes an NMI (Nova's trigger_crash_dump, the scenarios' start
        signal; design.md 6); None: at ``start_at``, or at once
    :param start_timeout: seconds a ``"nmi"`` client waits for its signal
        after ready before it reports ``late`` (the guest's default: 900)
    """
    if role not in ROLES:
        raise InputError(f'unknown role {role!r}', key='role',
                         fix=f'one of {", ".join(ROLES)}')
    if start not in START_MODES:
        raise InputError(f'unknown start {start!r}', key='start',
                         fix='"nmi", or none for start_at')
    if start and start_at is not None:
        raise InputError('a job starts on a signal or at start_at, not '
                         'both', key='start', fix='drop start_at')
    listened = sorted(set(ports or ()))
    if listened and role != 'server':
        raise InputError('only a server listens on ports', key='ports',
                         fix='give clients their port in params')
    if len(listened) == 1:
        params = dict(params or {}, port=listened[0])
    elif listened:
        params = dict(params or {}, port=commands.PORT)
    settings = workload.settings(params)
    seconds = int(runtime or settings.get('runtime', 10))
    argv = commands.argv(workload, role, target, peer, seconds, params)
    bad = [a for a in argv + ([address] if address else [])
           if not SAFE_ARG.match(a)]
    if bad:
        raise InputError(f'unsafe value {bad[0]!r} in the command',
                         source=workload.name,
                         fix='letters, digits and @._:/=,+%- only')
    # cast: mypy reads the optional keys' ** spreads as maybe-missing
    # required ones
    return cast(Job, {
        'workload': workload.name, 'tool': workload.tool,
        'target': target, 'peer': peer, 'role': role,
        'start_at': int(start_at) if start_at is not None else None,
        'runtime': seconds, 'hold': bool(hold),
        'params': dict(params or {}), 'command': ' '.join(argv),
        **({'start': start} if start else {}),
        **({'start_timeout': int(start_timeout)}
           if start and start_timeout is not None else {}),
        **({'address': address} if address else {}),
        **({'ports': ','.join(map(str, listened))}
           if len(listened) > 1 else {}),
    })


def roles(workload: Workload) -> tuple[str, ...]:
    # disk and CPU/memory (target none) workloads have no server
    return ('client',) if workload.target in ('disk', 'none') else ROLES


def templates(workloads: Mapping[str, Workload]) -> dict[str, str]:
    """{"<workload>.<role>": command} with @TARGET@, @PEER@, @RUNTIME@
    left for the guest: the image carries these, so a job holding only the
    design.md keys (no ``command``) runs the workload's defaults."""
    found: dict[str, str] = {}
    for workload in workloads.values():
        for role in roles(workload):
            found[f'{workload.name}.{role}'] = ' '.join(commands.argv(
                workload, role, target='@TARGET@', peer='@PEER@',
                runtime='@RUNTIME@'))
    return found


def encode(job: Job | Mapping[str, Any]) -> str:
    """One line of JSON, as the guest init expects."""
    return json.dumps(job, sort_keys=True, separators=(', ', ': '))


def cmdline(job: Job | Mapping[str, Any]) -> str:
    return 'kvmtune.job=' + base64.b64encode(encode(job).encode()).decode()
