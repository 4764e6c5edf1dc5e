"""Processes of the test cloud: start, record, find, stop.

``down`` must stop exactly what ``up`` started, even after ``up`` died
half-way, and never match by process name. So:

- every service starts as a session leader and its PID goes into a ledger
  (run/pids) at once; its children (gunicorn workers, privsep daemons)
  stay in its session;
- everything started also gets ``KVMTUNE_CLOUD_OWNER=<state dir>`` in its
  environment, which finds daemons that leave the session (libvirtd -d).
  Not enough alone: gunicorn and the nova services rewrite their
  /proc/<pid>/environ with their process titles.
"""

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
import json
import os
import signal
import subprocess
import time
from typing import Any
from typing import TYPE_CHECKING

from kvmtune import venvs

if TYPE_CHECKING:
    from kvmtune.testcloud.config import Layout

OWNER_ENV = 'KVMTUNE_CLOUD_OWNER'
# how progress lines are told (print, a log's, or say nothing)
Say = Callable[[str], object]


def wait_until(predicate: Callable[[], object], timeout: float, what: str,
               interval: float = 0.5) -> None:
    """Poll ``predicate`` until true; TimeoutError naming ``what`` after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError('%s not ready after %d s' % (what, timeout))
        time.sleep(interval)


def _environment(layout: 'Layout', env: Mapping[str, str] | None
                 ) -> dict[str, str]:
    """What start() and run() give a process: kvmtune.venvs.program_env,
    ``env``, and this cloud's owner marker."""
    full_env = venvs.program_env()
    full_env.update(env or {})
    full_env[OWNER_ENV] = layout.root
    return full_env


def start(layout: 'Layout', name: str, argv: Sequence[str],
          env: Mapping[str, str] | None = None) -> int:
    """Start ``argv`` detached, output to log/<name>.log; return its pid."""
    full_env = _environment(layout, env)
    with open(layout.log_file(name), 'ab') as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=full_env,
                                start_new_session=True)
    with open(layout.ledger, 'a') as ledger:
        ledger.write('%s %d\n' % (name, proc.pid))
    return proc.pid


def ledger_pids(layout: 'Layout') -> set[int]:
    try:
        with open(layout.ledger) as f:
            return {int(line.split()[1]) for line in f if line.strip()}
    except FileNotFoundError:
        return set()


def run(layout: 'Layout', name: str, argv: Sequence[str],
        env: Mapping[str, str] | None = None) -> None:
    """Run ``argv`` to completion, output appended to log/<name>.log."""
    full_env = _environment(layout, env)
    with open(layout.log_file(name), 'ab') as log:
        log.write(('$ %s\n' % ' '.join(argv)).encode())
        log.flush()
        rc = subprocess.call(argv, stdout=log, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, env=full_env)
    if rc:
        raise RuntimeError('%s failed (exit %d): see %s' % (
            ' '.join(argv[:3]), rc, layout.log_file(name)))


def _session(pid: int) -> int:
    with open('/proc/%d/stat' % pid) as f:
        return int(f.read().rsplit(')', 1)[1].split()[3])


def owned_pids(layout: 'Layout') -> list[int]:
    """Live PIDs in a ledger session or with this cloud's marker."""
    sessions = ledger_pids(layout)
    marker = ('%s=%s' % (OWNER_ENV, layout.root)).encode()
    pids = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        pid = int(entry)
        try:
            if _session(pid) in sessions and alive(pid):
                pids.append(pid)
                continue
            with open('/proc/%s/environ' % entry, 'rb') as f:
                if marker in f.read().split(b'\0') and alive(pid):
                    pids.append(pid)
        except (OSError, ValueError, IndexError):
            continue
    return pids


def alive(pid: int) -> bool:
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().split(')')[-1].split()[0] != 'Z'
    except OSError:
        return False


# A SIGKILLed process is gone at once, but not at the very moment the
# signal is sent: wait at most this long for it to have exited.
KILL_WAIT = 5


def terminate(pids: Sequence[int], timeout: float) -> list[int]:
    """SIGTERM, then SIGKILL what is still alive after ``timeout`` s;
    returns once those are gone too (or KILL_WAIT s later)."""
    for pid in pids:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.2)
    killed = [p for p in pids if alive(p)]
    for pid in killed:
        _signal(pid, signal.SIGKILL)
    deadline = time.monotonic() + KILL_WAIT
    while time.monotonic() < deadline and any(alive(p) for p in killed):
        time.sleep(0.05)
    return killed


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def memory_kb(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of one process in KiB, from smaps_rollup."""
    values: dict[str, int] = {}
    try:
        with open('/proc/%d/smaps_rollup' % pid) as f:
            for line in f:
                key, _, rest = line.partition(':')
                if key in ('Rss', 'Pss'):
                    values[key] = int(rest.split()[0])
    except OSError:
        pass
    return values.get('Rss', 0), values.get('Pss', 0)


def cmdline(pid: int) -> str:
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as f:
            return f.read().replace(b'\0', b' ').decode().strip()
    except OSError:
        return ''


def load_state(layout: 'Layout') -> dict[str, Any]:
    """The running cloud's state ({} when none runs); a truncated, empty
    or garbage state file (a crash, a full disk, a hand edit) is one
    line naming it, not a JSONDecodeError (tests/unit/test_hostile.py)."""
    from kvmtune.errors import InputError
    from kvmtune import inputs

    if not os.path.lexists(layout.state):
        return {}
    fix = (f'stop what the cloud left running (pkill -f {layout.venv}; '
           f'ovs-appctl exit if Open vSwitch runs), remove {layout.state}, '
           'then kvmtune cloud up')
    try:
        state = inputs.load_json(layout.state)
    except InputError as exc:
        raise InputError(f'the cloud\'s state file is damaged: '
                         f'{exc.problem}', source=layout.state,
                         fix=fix) from None
    if not isinstance(state, dict):
        raise InputError('the cloud\'s state file is damaged: not a JSON '
                         'object', source=layout.state, fix=fix)
    return state


def save_state(layout: 'Layout', state: Mapping[str, Any]) -> None:
    write_file(layout.state, json.dumps(state, indent=2, sort_keys=True))


def write_file(path: str, text: str, mode: int = 0o644) -> None:
    """Write ``text`` with kvmtune's one writer (kvmtune.fileio: atomic,
    fsync'ed), creating the directories; the file ends with ``mode``
    (the cloud's secrets and configuration files are 0600)."""
    from kvmtune import fileio

    os.makedirs(os.path.dirname(path), exist_ok=True)
    fileio.write_atomic(path, text, mode=mode)
    os.chmod(path, mode)


def write_if_changed(path: str, text: str, mode: int = 0o644) -> bool:
    """``write_file`` unless ``path`` already holds ``text``; True when it
    wrote (a copied driver or facts file that changed means a restart)."""
    from kvmtune import fileio

    os.makedirs(os.path.dirname(path), exist_ok=True)
    if not fileio.write_if_changed(path, text, mode=mode):
        return False
    os.chmod(path, mode)
    return True


def tree_rss_kb(pid: int) -> int:
    """VmRSS of ``pid`` and of all its descendants, summed, in KiB (0 when
    it is gone): what a nova-compute and its helpers (privsep daemons)
    hold in memory, shared library pages counted in each."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as f:
                ppid = int(f.read().rsplit(')', 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    total, todo, seen = 0, [pid], set[int]()
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        total += _vm_rss_kb(current)
        todo.extend(children.get(current, ()))
    return total


def _vm_rss_kb(pid: int) -> int:
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def computes_of(state: Mapping[str, Any], layout: 'Layout'
                ) -> list[dict[str, Any]]:
    """Every nova-compute of the cloud in ``state``, the first one first,
    as [{'host', 'driver', 'service', 'conf', 'facts', 'provider', ...}].

    The first compute keeps its original keys (``compute_host``,
    ``provider``, ``facts``, ``services['nova-compute']``, the file
    ``layout.compute_conf``); ``state['computes']`` holds computes 2..N
    (``--computes N``). A state file written before that key existed is
    a cloud with one compute.
    """
    if not state.get('mode'):
        return []
    first = {'index': 1, 'host': state.get('compute_host'),
             'driver': state['mode'], 'service': 'nova-compute',
             'conf': layout.compute_conf, 'facts': state.get('facts'),
             'provider': state.get('provider')}
    return [first] + [dict(extra) for extra in state.get('computes') or ()]


# --- the clouds on this machine ------------------------------------------
# Clouds in different state directories run side by side (config.Layout
# names their databases, vhost and lock after the directory) and share
# MariaDB and RabbitMQ. `up` registers its cloud here, `down` removes it;
# `down` stops a shared service only when no other registered cloud is in
# use (it has a process, or its `up` still runs).
CLOUDS_DIR = '/run/kvmtune-testcloud'


def _entry(layout: 'Layout') -> str:
    return os.path.join(CLOUDS_DIR, 'cloud%s.json' % (layout.suffix or
                                                      '_default'))


def register(layout: 'Layout') -> None:
    """Record this cloud (its state directory and the pid of the `up`
    that starts it) as one that may use the shared services."""
    os.makedirs(CLOUDS_DIR, exist_ok=True)
    write_file(_entry(layout), json.dumps({'root': layout.root,
                                           'up_pid': os.getpid()}))


def unregister(layout: 'Layout') -> None:
    try:
        os.remove(_entry(layout))
    except FileNotFoundError:
        pass


def other_clouds(layout: 'Layout') -> list[str]:
    """The state directories of the other registered clouds in use: a
    process of theirs alive (ledger or marker, owned_pids) or their `up`
    still running. A stale entry (nothing alive) is removed."""
    from kvmtune.testcloud.config import Layout

    try:
        names = sorted(os.listdir(CLOUDS_DIR))
    except FileNotFoundError:
        return []
    found = []
    for name in names:
        path = os.path.join(CLOUDS_DIR, name)
        if not name.startswith('cloud') or path == _entry(layout):
            continue
        try:
            with open(path) as f:
                entry = json.load(f)
            root, up_pid = str(entry['root']), int(entry['up_pid'])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if (up_pid != os.getpid() and alive(up_pid)) or \
                owned_pids(Layout(root)):
            found.append(root)
        else:
            unregister(Layout(root))
    return found


def shared_left(started: Sequence[str] = ()) -> list[str]:
    """The shared services (``mariadb``, ``rabbitmq``) a cloud's `up`
    started and a `down` left running for other clouds, plus
    ``started``: recorded, for the last cloud's `down` to stop."""
    path = os.path.join(CLOUDS_DIR, 'shared-started.json')
    try:
        with open(path) as f:
            left = set(json.load(f))
    except (OSError, ValueError, TypeError):
        left = set()
    left |= set(started)
    if started:
        os.makedirs(CLOUDS_DIR, exist_ok=True)
        write_file(path, json.dumps(sorted(left)))
    return sorted(left)


def clear_shared_left() -> None:
    try:
        os.remove(os.path.join(CLOUDS_DIR, 'shared-started.json'))
    except FileNotFoundError:
        pass
