"""A rollout's run id and its state file: which step each host has done.

The file is JSON, written whole and atomically (kvmtune.fileio.write_atomic)
under the file's writers' lock, so the hosts of one batch, whose steps run
at the same time, each add their step without losing another's::

    {"run_id": "20261127T153012Z-3f2a9c", "profile": "pinned-hugepages",
     "hosts": {"compute-2": {"disable": "2026-11-27T15:31:02Z",
                             "drain": "2026-11-27T15:32:40Z",
                             "apply": "2026-11-27T15:33:05Z"}},
     "plans": {"compute-2": {"profile": "pinned-hugepages", ...}}}

A rollout that was killed or stopped is run again with the same file: it
keeps the run id (the disabled_reason of the hosts it took out names it)
and continues with each host's first step not done. A host whose every
step is done is finished: run again, the rollout disables, migrates and
reboots nothing there.

``plans`` holds, per host, the plan its apply step applied (as ``kvmtune
plan -f json`` prints one), recorded once with that step
(``record_plan``) and dropped with its enable step. Until then, a run
again applies and gates that plan (``applied``), not one made again from
the host's facts after its reboot: those would take a huge page pool
that came up short as planned. ``replan`` forgets it, for an operator who wants
another plan.
"""

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import datetime
import os
import secrets
from typing import Any

from kvmtune.errors import InputError
from kvmtune.rollout import vocabulary

# The steps of one host the file records, in order (the step table,
# kvmtune.rollout.vocabulary: reboot, restart, verify and textfile are
# not recorded, a run again makes them when they are needed).
STEPS = vocabulary.RECORDED
# The steps a host made with the plan applied, before it is enabled:
# ``replan`` forgets them with the plan.
WITH_THE_PLAN = STEPS[STEPS.index('apply'):STEPS.index('enable')]


def new_run_id(now: datetime.datetime | None = None) -> str:
    """'20261127T153012Z-3f2a9c': when, and six hex digits apart from
    another run started in the same second."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    return f'{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}'


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        '%Y-%m-%dT%H:%M:%SZ')


class State:
    """One rollout's state, read from (and written to) ``path``."""

    def __init__(self, path: str, run_id: str, profile: str | None,
                 hosts: dict[str, dict[str, str]] | None = None,
                 plans: dict[str, dict[str, Any]] | None = None,
                 inventory: str | None = None) -> None:
        self.path = path
        self.run_id = run_id
        self.profile = profile
        # the inventory the run rolls (its absolute path), when known
        self.inventory = inventory
        self.hosts: dict[str, dict[str, str]] = hosts or {}
        # {host: the plan its apply step applied}
        self.plans: dict[str, dict[str, Any]] = plans or {}

    def to_dict(self) -> dict[str, Any]:
        extra = {} if self.inventory is None else {
            'inventory': self.inventory}
        return {'run_id': self.run_id, 'profile': self.profile, **extra,
                'hosts': {h: dict(steps) for h, steps
                          in sorted(self.hosts.items())},
                'plans': dict(sorted(self.plans.items()))}

    def done(self, host: str, step: str) -> bool:
        return step in self.hosts.get(host, {})

    def finished(self, host: str) -> bool:
        """The host is done with the run: its last recorded step (enable,
        after its gate passed) is done. A step its mode does not make
        (drain, in in-place mode) is never recorded."""
        return self.done(host, vocabulary.LAST)

    def taken_out(self, host: str) -> bool:
        """The run disabled the host and has not enabled it again."""
        return self.done(host, 'disable') and not self.done(host, 'enable')

    def applied(self, host: str) -> dict[str, Any] | None:
        """The plan the run applied to ``host`` while it is not enabled
        again (its apply step done, its enable step not), else None."""
        if self.done(host, 'apply') and not self.done(host, 'enable'):
            return self.plans.get(host)
        return None

    def next_step(self, host: str) -> str | None:
        """The host's first step not done, or None (finished)."""
        if self.finished(host):
            return None
        return next((s for s in STEPS if not self.done(host, s)), None)

    def pending(self, hosts: Iterable[str]) -> list[str]:
        """The hosts among ``hosts`` that are not finished, in order."""
        return [h for h in hosts if not self.finished(h)]

    def _reread(self) -> None:
        """The file as it is now (under its lock): another host's step
        may have been written since this State was read."""
        current = _read(self.path)
        if current is not None:
            self.hosts, self.plans = current.hosts, current.plans

    def mark(self, host: str, step: str) -> None:
        """Record that ``host`` did ``step`` (written at once). Enabled
        again, the host's plan is dropped: nothing applies it any more
        (``applied``), and every write re-reads, checks and writes the
        plans the file holds."""
        from kvmtune import fileio

        if step not in STEPS:
            raise ValueError(f'unknown step {step!r}')
        with fileio.lock(self.path):
            self._reread()
            self.hosts.setdefault(host, {}).setdefault(step, _now())
            if step == 'enable':
                self.plans.pop(host, None)
            _write(self)

    def record_plan(self, host: str, plan: Mapping[str, Any]
                    ) -> tuple[dict[str, Any], bool]:
        """Record that ``host``'s apply step applied ``plan`` (a plan as
        ``kvmtune plan -f json`` prints it): the plan and the step, in one
        write. Once: a plan recorded before, and not forgotten since
        (``replan``, ``forget``), is kept.

        :returns: (the plan recorded, whether it was recorded now)
        """
        from kvmtune import fileio

        with fileio.lock(self.path):
            self._reread()
            if self.done(host, 'apply') and host in self.plans:
                return self.plans[host], False
            self.plans[host] = dict(plan)
            self.hosts.setdefault(host, {}).setdefault('apply', _now())
            _write(self)
        return self.plans[host], True

    def replan(self, host: str) -> bool:
        """Forget the plan ``host``'s apply step applied and the steps
        made with it (apply, reboot, gate; written at once): run again,
        the apply step plans the host again, from the profile on its
        facts then. Its steps before (preflight, disable, drain) stay
        done. Whether there was a plan to forget."""
        from kvmtune import fileio

        with fileio.lock(self.path):
            self._reread()
            had = self.plans.pop(host, None) is not None
            steps = self.hosts.get(host, {})
            for step in WITH_THE_PLAN:
                steps.pop(step, None)
            _write(self)
        return had

    def forget(self, *hosts: str) -> None:
        """Forget every step ``hosts`` did and the plans applied to them
        (written at once, when there was something): their rollout starts
        over."""
        from kvmtune import fileio

        if not hosts:
            return
        with fileio.lock(self.path):
            self._reread()
            gone = [self.hosts.pop(host, None) is not None for host in hosts]
            gone += [self.plans.pop(host, None) is not None
                     for host in hosts]
            if any(gone):
                _write(self)


def _check(data: Any, path: str) -> State:
    def bad(key: str, what: str) -> InputError:
        return InputError(what, source=path, key=key,
                          fix='give the state file the rollout wrote, or '
                              'remove it to start a new run')
    if not isinstance(data, dict):
        raise bad('(top)', 'not a JSON object')
    run_id = data.get('run_id')
    if not isinstance(run_id, str) or not run_id:
        raise bad('run_id', 'missing or not a string')
    profile = data.get('profile')
    if profile is not None and not isinstance(profile, str):
        raise bad('profile', 'not a string')
    inventory = data.get('inventory')
    if inventory is not None and not isinstance(inventory, str):
        raise bad('inventory', 'not a string')
    hosts = data.get('hosts', {})
    if not isinstance(hosts, dict):
        raise bad('hosts', 'not an object')
    for host, steps in hosts.items():
        if not isinstance(steps, dict) or not all(
                isinstance(v, str) for v in steps.values()):
            raise bad(f'hosts.{host}', 'not an object of step: time')
        unknown = sorted(set(steps) - set(STEPS))
        if unknown:
            raise bad(f'hosts.{host}.{unknown[0]}',
                      f'not a step (steps: {", ".join(STEPS)})')
    plans = data.get('plans', {})
    if not isinstance(plans, dict):
        raise bad('plans', 'not an object')
    for host, plan in plans.items():
        if 'apply' not in hosts.get(host, {}):
            raise bad(f'plans.{host}', 'a plan without its host\'s apply '
                                       'step')
        _check_plan(plan, path, f'plans.{host}', bad)
    return State(path, run_id, profile,
                 {h: dict(s) for h, s in hosts.items()}, dict(plans),
                 inventory)


def _check_plan(data: Any, path: str, key: str,
                bad: Callable[[str, str], InputError]) -> None:
    """A recorded plan is a plan (kvmtune.tuning.plan.from_dict)."""
    from kvmtune.tuning import plan

    try:
        plan.from_dict(data, source=f'{path}: {key}')
    except InputError as exc:
        raise bad(key, f'not a plan: {exc.key + ": " if exc.key else ""}'
                       f'{exc.problem}') from None


def _read(path: str) -> State | None:
    from kvmtune import inputs

    if not os.path.exists(path):
        return None
    return _check(inputs.load_json(path), path)


def _write(state: State) -> None:
    from kvmtune import fileio
    from kvmtune import jsonout

    fileio.write_atomic(state.path,
                        jsonout.dumps(state.to_dict(), source=state.path)
                        + '\n', mode=0o644)


def load(path: str) -> State:
    """The state in ``path``.

    :raises InputError: no such file, or not a rollout's state
    """
    found = _read(path)
    if found is None:
        raise InputError('no such state file', source=path,
                         fix='give the file the rollout wrote')
    return found


def open_run(path: str, profile: str | None = None,
             run_id: str | None = None,
             inventory: str | None = None) -> tuple[State, bool]:
    """The run of ``path``: the one it holds (a rollout run again goes
    on), else a new one (written now), with ``run_id`` when given, else a
    new run id.

    :returns: (state, whether the run was started now)
    :raises InputError: the file holds another run than ``run_id``,
        another profile than ``profile`` or another inventory than
        ``inventory`` (its absolute path)
    """
    from kvmtune import fileio

    with fileio.lock(path):
        found = _read(path)
        if found is None:
            state = State(path, run_id or new_run_id(), profile,
                          inventory=inventory)
            _write(state)
            return state, True
    if run_id is not None and found.run_id != run_id:
        raise InputError(f'holds run {found.run_id}, not {run_id}',
                         source=path, key='run_id',
                         fix=f'give --run-id {found.run_id} to continue '
                             'that run, or another state file')
    if profile is not None and found.profile not in (None, profile):
        raise InputError(f'is a rollout of profile {found.profile}, not '
                         f'{profile}', source=path, key='profile',
                         fix='finish that rollout first, or give another '
                             'state file')
    if inventory is not None and found.inventory not in (None, inventory):
        raise InputError(f'is a rollout of inventory {found.inventory}, not '
                         f'{inventory}', source=path, key='inventory',
                         fix='give that inventory, or another state file')
    return found, False


def summary(state: State, hosts: Sequence[str]) -> list[list[str]]:
    """[host, last step done, next step] for each host."""
    rows = []
    for host in hosts:
        done = [s for s in STEPS if state.done(host, s)]
        rows.append([host, done[-1] if done else '',
                     state.next_step(host) or 'finished'])
    return rows
