"""The inventory hosts whose trees are on this machine, read and planned
here for --check (kvmtune.rollout.check), as kvmtune.rollout.remote asks
the others over Ansible.

A host is on this machine when the inventory says so
(``ansible_connection=local``; ``kvmtune_root`` a capture or a mounted
root, as ``--root`` elsewhere). ``read(hosts, profile, config_files)``
reads each tree the way the rollout's apply step would, and changes
nothing: its facts once, boot apply's dry run on them
(``kvmtune.boot.apply.apply(..., dry_run=True)``, the plan through the
front door, kvmtune.tuning.plan.for_host), the options of the plan
nova-compute reads that its nova.conf does not have with that value
(kvmtune.tuning.novaconf.update.planned_changes), and the reasons a run
before left pending (kvmtune.boot.record). From PARALLEL_FROM hosts on,
in WORKERS processes: reading a tree's facts is most of a host's time
(benchmarks/rollout_check.py). Hosts whose facts are alike are planned
once (_Planner). A host that does not plan is one InputError naming it:
the first in inventory order.

``Early`` is what --check prepares while ansible-inventory lists the
hosts.
"""

from collections.abc import Sequence
import dataclasses
import os
from typing import Any

from kvmtune.errors import InputError
from kvmtune.errors import KvmtuneError
from kvmtune.rollout import inventory
from kvmtune.rollout import remote

# Hosts read on this machine are planned in WORKERS processes from
# PARALLEL_FROM hosts on: two, not every core, as the controller has other
# work (and ansible-playbook to run).
WORKERS = min(2, os.cpu_count() or 1)
PARALLEL_FROM = 32


@dataclasses.dataclass
class Reading:
    """One host read here (kvmtune.rollout.check makes its HostCheck).

    staged      ``kvmtune boot apply --dry-run -f json``'s document
    earlier     {reason: [what is not booted]} a run before left pending
    conf        [{'kind': 'nova.conf', ...}] the options nova.conf lacks
    notes       what the document says of the host besides
    facts, plan, conf_text: what the cloud's preflight judges on
    """
    staged: dict[str, Any]
    earlier: dict[str, list[str]]
    conf: list[dict[str, Any]]
    notes: list[str]
    facts: Any
    plan: Any
    conf_text: str | None


def no_nova_conf(path: str) -> str:
    """The note of a host without the nova.conf ``path``."""
    return (f'no nova.conf at {path}: the apply step leaves nova.conf alone '
            'here (set kvmtune_nova_conf to the file nova-compute reads)')


def _nova_conf(host: inventory.Host, plan: Any, text: str | None
               ) -> tuple[list[dict[str, Any]], list[str]]:
    """(changes, notes) of the host's nova.conf ``text`` for ``plan``."""
    from kvmtune.tuning.novaconf import services
    from kvmtune.tuning.novaconf import update

    path = host.in_root(host.nova_conf)
    wanted, _ = services.split(plan.nova_conf, services.COMPUTE)
    if not wanted:
        return [], []
    if text is None:
        return [], [no_nova_conf(path)]
    ini = update.parse_config(path, text)
    changes = []
    for section, options in update.planned_changes(path, wanted).items():
        for option, value in options.items():
            current: Any = ini.get_all(section, option) \
                if isinstance(value, list) else ini.get(section, option)
            if current != value:
                changes.append({'kind': 'nova.conf', 'path': host.nova_conf,
                                'section': section, 'option': option,
                                'from': current, 'to': value})
    return changes, []


class _Planner:
    """The plans of one --check: ``profile`` (a Profile loaded once for
    every host) on each host's facts, through the front door
    (kvmtune.tuning.plan.for_host), each distinct content planned once.

    A fleet's hosts are mostly alike: hosts whose facts are the same but
    for ``source`` (the path they were read from) get the same plan
    (build_plan reads only the facts, the profile, the release and
    ``config_files``: the same for the whole run), a copy of it with
    their own ``facts_source``. The key is the facts' repr, so only equal
    content (types too) matches; a plan that is refused is not kept, so
    each host's refusal names its own source."""

    def __init__(self, profile: Any, config_files: Sequence[str]) -> None:
        self.profile = profile
        self.config_files = config_files
        self._plans: dict[str, Any] = {}

    def plan(self, facts: Any) -> Any:
        import copy

        from kvmtune.tuning import plan as plans

        key = repr({k: v for k, v in facts.items() if k != 'source'})
        found = self._plans.get(key)
        if found is None:
            found, = plans.for_host([self.profile], facts=facts,
                                    config_files=self.config_files)
            self._plans[key] = found
        copied = copy.deepcopy(found)
        copied.facts_source = facts.get('source')
        return copied


def _read(host: inventory.Host, planner: _Planner) -> Reading:
    """The Reading of a host whose tree is on this machine."""
    from kvmtune.boot import apply
    from kvmtune.boot import record
    from kvmtune import facts as host_facts
    from kvmtune.tuning.novaconf import update

    if not os.path.isdir(host.root):
        raise InputError(f'kvmtune_root {host.root}: no such directory, '
                         'so the host cannot be reached here',
                         source=f'inventory host {host.name}',
                         fix='give the tree of the host (kvmtune host '
                             'capture), or the connection Ansible reaches '
                             'it by')
    try:
        # the facts once; boot apply's dry run plans on them through the
        # front door (kvmtune.tuning.plan.for_host) and compares
        facts = host_facts.resolve(root=host.root)
        staged = apply.apply(planner.profile, root=host.root, facts=facts,
                             config_files=planner.config_files,
                             dry_run=True, plan=planner.plan(facts))
        path = host.in_root(host.nova_conf)     # read once, by apply's reader
        conf_text = update.read_config(path) if os.path.isfile(path) else None
        conf, notes = _nova_conf(host, staged.plan, conf_text)
        earlier = record.pending(host.root)
    except KvmtuneError as exc:
        raise remote.host_error(host.name, exc) from None
    return Reading(staged=staged.to_dict(), earlier=earlier, conf=conf,
                   notes=notes, facts=facts, plan=staged.plan,
                   conf_text=conf_text)


# the _Planner of a worker process of read() (its pool's initializer
# sets it): one for all the hosts the worker plans
_planner: _Planner | None = None


def _start_worker(planner: _Planner) -> None:
    global _planner
    _planner = planner


def _read_or_error(host: inventory.Host,
                   planner: _Planner) -> 'Reading | KvmtuneError':
    """The host's Reading, or the error that says why it does not plan."""
    try:
        return _read(host, planner)
    except KvmtuneError as exc:
        return exc


def _read_in_worker(host: inventory.Host) -> 'Reading | KvmtuneError':
    assert _planner is not None, 'a worker of read()'
    return _read_or_error(host, _planner)


def read(hosts: Sequence[inventory.Host], profile: Any,
         config_files: Sequence[str]) -> 'list[Reading | KvmtuneError]':
    """The Reading of each host, in order, ``profile`` a Profile loaded
    once for every host; from PARALLEL_FROM hosts on, in WORKERS
    processes, each with its own _Planner. A host that does not plan has
    its error (naming it) in its place: every such host is listed."""
    planner = _Planner(profile, config_files)
    if len(hosts) < PARALLEL_FROM or WORKERS < 2:
        return [_read_or_error(host, planner) for host in hosts]
    from concurrent import futures

    with futures.ProcessPoolExecutor(max_workers=WORKERS,
                                     initializer=_start_worker,
                                     initargs=(planner,)) as pool:
        return list(pool.map(_read_in_worker, hosts,
                             chunksize=max(1, len(hosts) // (WORKERS * 8))))


class Early:
    """What --check does while ansible-inventory lists the hosts (the
    ``meanwhile`` of kvmtune.rollout.inventory.load; then
    kvmtune.rollout.check.plan(..., early=)): the modules a host is
    planned with imported, so the worker processes of read() start with
    them, and the profile loaded. A profile that does not load is loaded
    again by check.plan(), which says why where it always did (after the
    inventory, and only with a host to plan here)."""

    def __init__(self, profile: str, config_files: Sequence[str]) -> None:
        self.profile = profile
        self.config_files = list(config_files)
        self.loaded: Any = None

    def __call__(self) -> None:
        from kvmtune.boot import apply  # noqa: F401
        from kvmtune import facts  # noqa: F401
        from kvmtune.tuning.novaconf import update  # noqa: F401
        from kvmtune.tuning import profiles

        try:
            self.loaded = profiles.load(self.profile, profiles.configured_dirs(
                self.config_files))
        except KvmtuneError:
            self.loaded = None
