"""Result records: what produced a result, so results compare like with like.

Every result file kvmtune writes (``kvmtune bench local --json``,
``kvmtune baseline``) carries a ``record``; a Rally sweep carries one in
its scenario output when the task passed it (the main job does), and
``kvmtune report`` makes one from the task's own arguments otherwise::

    {"kvmtune_version": "0.0.1", "time": "2026-11-22T20:01:02Z",
     "kind": "bench-local | bench-compare | baseline | rally-sweep",
     "host": {"digest": "sha256 of the identity facts below",
              "hostname", "cpu_model", "cpus", "sockets", "nodes",
              "memory_mb", "kernel", "virt": "kvm | tcg",
              "why": "how guests run here (bench.qemu.choose_accel)"},
     "facts_digest": "sha256 of the whole facts document, or null",
     "accel": "kvm | tcg | bare",   "emulated": true,
     "profile": "pinned-hugepages | null",
     "settings": {"cache": "none", ...},      # what the run varied/fixed
     "nova_conf": {...} | null, "extra_specs": {...} | null,
     "workload": {"name", "tool", "params", "runtime", "command"}}

``host.digest`` covers what identifies a machine (host name, CPU model,
CPU and NUMA topology, memory size), not what tuning changes (huge pages,
kernel arguments, nova.conf): a before/after on one host keeps it, and
``facts_digest`` tells whether anything else in the facts moved.

``kvmtune.results.compare`` checks records before results are compared.
"""

import dataclasses
import datetime
import hashlib
import json
from typing import Any
from typing import cast
from typing import NoReturn
from typing import Sequence
from typing import TypedDict

from kvmtune.errors import InputError
from kvmtune.results import kinds


class HostRecord(TypedDict, total=False):
    """``record.host`` (module docstring); a file may leave keys out."""
    digest: str
    hostname: str | None
    cpu_model: str | None
    cpus: int
    sockets: int | None
    nodes: int
    memory_mb: int | None
    kernel: str | None
    virt: str | None
    why: str | None


class WorkloadRecord(TypedDict, total=False):
    """``record.workload`` (module docstring)."""
    name: str | None
    tool: str | None
    params: dict[str, Any]
    runtime: int | float | None
    command: list[str] | None


class Record(TypedDict, total=False):
    """A result's record (module docstring): the run's provenance, of the
    shape ``validate`` checks; a file may leave keys out."""
    kvmtune_version: str | None
    time: str | None
    kind: str
    host: HostRecord | None
    facts_digest: str | None
    accel: str | None
    emulated: bool
    profile: str | None
    settings: dict[str, Any]
    nova_conf: dict[str, Any] | None
    extra_specs: dict[str, Any] | None
    workload: WorkloadRecord


def version() -> str:
    """kvmtune's installed version (the wheel's metadata)."""
    from importlib import metadata

    try:
        return metadata.version('kvmtune')
    except metadata.PackageNotFoundError:
        return 'unknown'


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec='seconds').replace('+00:00', 'Z')


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(',', ':'))
    return hashlib.sha256(text.encode()).hexdigest()


def host(facts: Any, virt: str | None = None,
         why: str | None = None) -> HostRecord | None:
    """The host part of a record from a facts document (design.md 1).

    :param virt: ``kvm`` or ``tcg``: how guests run on this host, as the
        caller chose it (``kvmtune.bench.qemu.choose_accel``), and ``why``
    """
    if not isinstance(facts, dict):
        return None
    cpu = facts.get('cpu') or {}
    numa = (facts.get('numa') or {}).get('nodes') or []
    identity = {
        'hostname': facts.get('hostname'),
        'cpu_model': cpu.get('model_name'),
        'cpus': len(cpu.get('online') or []),
        'sockets': cpu.get('sockets'),
        'nodes': len(numa),
        'memory_mb': (facts.get('memory') or {}).get('total_mb'),
    }
    return cast(HostRecord, dict(
        identity, digest=_digest(identity),
        kernel=(facts.get('kernel') or {}).get('release'), virt=virt,
        why=why))


def facts_digest(facts: Any) -> str | None:
    """sha256 of the facts without what changes from second to second
    (free huge pages) or with the place they were read from."""
    if not isinstance(facts, dict):
        return None
    stable = json.loads(json.dumps(facts))
    stable.pop('source', None)
    for node in (stable.get('numa') or {}).get('nodes') or []:
        for pool in node.get('hugepages') or []:
            pool.pop('free', None)
    return _digest(stable)


@dataclasses.dataclass(frozen=True)
class Conditions:
    """How a result was made, as its record states it (module docstring).

    params, runtime, command  the workload's parameters, seconds, argv
    settings                  what the run varied or fixed (cache, ...)
    profile, nova_conf, extra_specs
                              the tuning the guests ran under
    virt, why                 ``kvm`` or ``tcg``: how guests run on this
                              host as the caller chose it
                              (``kvmtune.bench.qemu.choose_accel``), and why
    """
    params: dict[str, Any] | None = None
    runtime: int | float | None = None
    command: list[str] | None = None
    settings: dict[str, Any] | None = None
    profile: str | None = None
    nova_conf: dict[str, Any] | None = None
    extra_specs: dict[str, Any] | None = None
    virt: str | None = None
    why: str | None = None


def make(kind: str, workload: Any, facts: Any, accel: str,
         conditions: Conditions = Conditions()) -> Record:
    """A record (module docstring) for a result made on this host.

    :param workload: a ``kvmtune.workloads.Workload``
    :param accel: ``kvm``, ``tcg`` (guests) or ``bare`` (the bare host)
    """
    if kind not in kinds.RECORD_KINDS:
        raise ValueError(kind)
    c = conditions
    params, runtime, command = c.params, c.runtime, c.command
    settings, profile = c.settings, c.profile
    nova_conf, extra_specs, virt, why = (c.nova_conf, c.extra_specs,
                                         c.virt, c.why)
    return {
        'kvmtune_version': version(), 'time': now(), 'kind': kind,
        'host': host(facts, virt, why), 'facts_digest': facts_digest(facts),
        'accel': accel, 'emulated': accel == 'tcg',
        'profile': profile, 'settings': dict(settings or {}),
        'nova_conf': nova_conf, 'extra_specs': extra_specs,
        'workload': {'name': workload.name, 'tool': workload.tool,
                     'params': dict(params or {}),
                     'runtime': runtime, 'command': command},
    }


def for_sweep(profile: str, facts: Any, accel: str, workload: str,
              runtime: int | float | None = None,
              params: dict[str, Any] | None = None,
              dirs: Sequence[str] | None = None) -> Record:
    """The record a Rally task passes for one flavor's sweep (the main
    job does): the profile's plan on the compute's facts gives the
    nova.conf options and flavor extra specs; facts None (an operator's
    cloud without --compute-facts) leaves the host and plan unknown.

    :param profile: the profile name the flavor was made from
    :param workload: the workload name
    :param dirs: the profile search path (profiles.configured_dirs)
    """
    from kvmtune.tuning import plan as plans
    from kvmtune.tuning import profiles

    nova_conf = extra_specs = None
    if facts is not None:
        # the front door: a plan that withheld values gives no record
        [plan] = plans.for_host(
            [profiles.load(profile, dirs or profiles.search_dirs())],
            facts=facts)
        made = plan.to_dict()
        nova_conf, extra_specs = made['nova_conf'], made['extra_specs']
    return {
        'kvmtune_version': version(), 'time': now(), 'kind': kinds.RALLY_SWEEP,
        'host': host(facts, accel if accel in ('kvm', 'tcg') else None),
        'facts_digest': facts_digest(facts), 'accel': accel,
        'emulated': accel == 'tcg', 'profile': profile, 'settings': {},
        'nova_conf': nova_conf, 'extra_specs': extra_specs,
        'workload': {'name': workload, 'tool': None,
                     'params': dict(params or {}), 'runtime': runtime,
                     'command': None},
    }


def from_rally(args: dict[str, Any],
               started: str | None = None) -> dict[str, Any]:
    """A record for a Rally sweep made from the scenario's arguments.

    The task may pass its own ``record`` argument (the main job does:
    profile, nova.conf, extra specs and the compute host's facts); what it
    does not say stays null. Rally runs elsewhere than the compute host,
    so no facts are read here.
    """
    record = args.get('record')
    given: dict[str, Any] = record if isinstance(record, dict) else {}
    flavor = args.get('flavor')
    if isinstance(flavor, dict):
        flavor = flavor.get('name') or flavor.get('regex')
    workload = args.get('workload')
    return {
        'kvmtune_version': given.get('kvmtune_version'),
        'time': given.get('time') or started,
        'kind': kinds.RALLY_SWEEP,
        'host': given.get('host'),
        'facts_digest': given.get('facts_digest'),
        'accel': given.get('accel') or (
            'tcg' if args.get('emulated') else None),
        'emulated': bool(args.get('emulated') or given.get('emulated')),
        'profile': given.get('profile'),
        'settings': dict(given.get('settings') or {}, flavor=flavor),
        'nova_conf': given.get('nova_conf'),
        'extra_specs': given.get('extra_specs'),
        'workload': {'name': workload, 'tool': None,
                     'params': dict(args.get('params') or {}),
                     'runtime': args.get('runtime'), 'command': None},
    }


# The shape of a record, checked before any field is read
# (tests/unit/test_hostile.py: a hand-edited record of the wrong shape was an
# internal error).
_SHAPE: dict[str, Any] = {
    'kind': str, 'accel': str, 'time': str, 'profile': str,
    'kvmtune_version': str, 'facts_digest': str, 'emulated': bool,
    'host': dict, 'settings': dict, 'workload': dict,
    'nova_conf': dict, 'extra_specs': dict}
_HOST_SHAPE: dict[str, Any] = {
    'digest': str, 'hostname': str, 'cpu_model': str, 'virt': str,
    'why': str}
_WORKLOAD_SHAPE: dict[str, Any] = {
    'name': str, 'tool': str, 'params': dict, 'runtime': (int, float),
    'command': list}


def validate(record: Any, source: str) -> Record | None:
    """``record`` when it is None or of the module docstring's shape;
    else the one InputError naming the first wrong key."""
    if record is None:
        return None

    def wrong(key: str, want: Any) -> NoReturn:
        name = {dict: 'a mapping', str: 'a string', list: 'a list',
                bool: 'true or false'}.get(want, 'a number')
        raise InputError(f'must be {name} or null', source=source,
                         key=key, fix='give the file kvmtune or Rally '
                                      'wrote, unedited')

    if not isinstance(record, dict):
        wrong('record', dict)
    for part, shape, prefix in ((record, _SHAPE, 'record.'),
                                (record.get('host'), _HOST_SHAPE,
                                 'record.host.'),
                                (record.get('workload'), _WORKLOAD_SHAPE,
                                 'record.workload.')):
        for key, want in shape.items():
            value = (part or {}).get(key)
            if value is not None and (
                    not isinstance(value, want) or
                    (want != bool and isinstance(value, bool))):
                wrong(prefix + key, want)
    return cast(Record, record)
