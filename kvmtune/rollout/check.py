"""``kvmtune rollout --check``: what the rollout would do, host by host.

``plan(hosts, profile, batch)`` plans ``profile`` on every inventory host
the way the rollout's apply step would, and changes nothing:

- the boot-time side through ``kvmtune.boot.apply.apply(..., dry_run=True)``
  (the front door kvmtune.tuning.plan.for_host on the host's facts, then
  the booted state: kvmtune.boot.changes, and the reboot record,
  kvmtune.boot.record): the files it would write, the boot loader
  commands, and the reasons a reboot is needed (``cmdline``,
  ``hugepages``, ``module``);
- nova.conf: the options of the plan nova-compute reads
  (kvmtune.tuning.novaconf.services) that the host's file does not have
  with that value (kvmtune.tuning.novaconf.update.planned_changes: the
  values ``kvmtune nova-conf apply`` would write);
- the action: ``reboot`` when a reason is pending (staged now, or staged
  by a run before and not booted since), else ``restart`` (nova-compute)
  when nova.conf or a modprobe file changes, else ``none``.

A host's tree is read here when the inventory says it is on this machine
(``ansible_connection=local``; ``kvmtune_root`` a capture or a mounted
root, as ``--root`` elsewhere: kvmtune.rollout.local). Any other host is
asked over its connection, by Ansible (kvmtune.rollout.remote).

Without a cloud the cloud's checks are not made, and the answer names
them (CLOUD_CHECKS). A host that does not plan (a withheld plan, an
unknown boot loader, a tree that is not there, a host Ansible cannot
reach) is one InputError naming the host: nothing is planned for the
others, nothing is changed anywhere.
"""

from collections.abc import Iterable
from collections.abc import Sequence
import dataclasses
import os
from typing import Any
from typing import TYPE_CHECKING

from kvmtune.errors import InputError
from kvmtune.errors import KvmtuneError
from kvmtune.rollout import inventory
from kvmtune.rollout import local
from kvmtune.rollout import remote
from kvmtune.rollout import resume
from kvmtune.rollout import vocabulary

if TYPE_CHECKING:
    from kvmtune.rollout.preflight import Report

# the rollout's actions (kvmtune.rollout.vocabulary)
ACTIONS = vocabulary.ACTIONS
ROLLED = vocabulary.ROLLED
# (name, what it checks): the cloud's part of the preflight, made only
# with --os-cloud (kvmtune.rollout.preflight, kvmtune rollout-step).
CLOUD_CHECKS = (
    ('nova-service-known',
     'each host is a nova-compute service Nova knows, under that name'),
    ('preflight-capacity',
     'the rest of the fleet has room for the guests of each batch '
     '(drain mode)'),
    ('in-place-hold',
     'no guest would lose its pinned CPUs or huge pages when its host '
     'reboots in place (in-place mode)'),
)


@dataclasses.dataclass
class HostCheck:
    """What the rollout would do on one host."""

    host: str
    root: str
    connection: str | None
    batch: int = 0
    action: str = 'none'
    # {reason: [what is not booted]}, every reason of record.REASONS
    reasons: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    # [{'kind': 'file'|'command'|'nova.conf', ...}]
    changes: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    kernel_args: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    # the nova.conf the plan has options for is not there to be read
    unseen: bool = False
    # the host's facts, plan and nova.conf text (the cloud's preflight
    # judges on them; not in the document)
    facts: Any = dataclasses.field(default=None, repr=False)
    plan: Any = dataclasses.field(default=None, repr=False)
    nova_conf_text: str | None = dataclasses.field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {field.name: getattr(self, field.name)
                for field in dataclasses.fields(self)
                if field.name not in ('facts', 'plan', 'nova_conf_text',
                                      'unseen')}


@dataclasses.dataclass
class DryRun:
    """The whole --check answer (``-f json`` prints ``to_dict()``)."""

    profile: str
    inventory: str
    mode: str
    batch_size: int
    cloud: str | None
    hosts: list[HostCheck]
    skipped: list[dict[str, str]]
    # the cloud's preflight per batch (kvmtune.rollout.preflight.Report
    # .to_dict()), with a cloud
    reports: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    # the preflight's refusals, every batch's, as raised (problem, where,
    # fix): the reports hold their lines (not in the document twice)
    refused: list[KvmtuneError] = dataclasses.field(default_factory=list,
                                                    repr=False)
    # the hosts that do not plan, each its one error, in inventory order
    unplanned: list[KvmtuneError] = dataclasses.field(default_factory=list,
                                                      repr=False)

    @property
    def batches(self) -> list[list[str]]:
        """The run's batches: the hosts it rolls (ROLLED), in inventory
        order; a host left alone is in none (its batch 0)."""
        out: list[list[str]] = []
        for host in self.hosts:
            if not host.batch:
                continue
            if len(out) < host.batch:
                out.append([])
            out[host.batch - 1].append(host.host)
        return out

    def unplanned_error(self) -> KvmtuneError | None:
        """The one line of the hosts that do not plan: the first one's
        error (naming it, with its fix) and how many more (None: every
        host plans)."""
        if not self.unplanned:
            return None
        first = self.unplanned[0]
        if len(self.unplanned) == 1:
            return first
        return InputError(f'{first.problem} (and {len(self.unplanned) - 1} '
                          'more host(s) that do not plan: kvmtune rollout '
                          '--check lists them)', source=first.source,
                          key=first.key, fix=first.fix)

    def to_dict(self) -> dict[str, Any]:
        counts = {action: sum(h.action == action for h in self.hosts)
                  for action in ACTIONS}
        return {'profile': self.profile, 'inventory': self.inventory,
                'mode': self.mode, 'batch_size': self.batch_size,
                'cloud': self.cloud,
                'preflight': {'cloud_checks_skipped': self.skipped,
                              'batches': self.reports,
                              'ok': not self.refused},
                'batches': [{'batch': n, 'hosts': names} for n, names
                            in enumerate(self.batches, 1)],
                'hosts': [host.to_dict() for host in self.hosts],
                'summary': {'hosts': len(self.hosts), **counts}}


def _from_reading(host: inventory.Host, reading: local.Reading
                  ) -> HostCheck:
    """The HostCheck of a host read on this machine
    (kvmtune.rollout.local)."""
    found = HostCheck(host=host.name, root=host.root,
                      connection=host.connection, notes=reading.notes)
    _fill(found, reading.staged, reading.earlier)
    found.changes += reading.conf
    found.unseen = any(note.startswith('no nova.conf at ')
                       for note in reading.notes)
    _decide(found)
    found.facts, found.plan = reading.facts, reading.plan
    found.nova_conf_text = reading.conf_text
    return found


def _fill(found: HostCheck, staged: dict[str, Any],
          earlier: dict[str, list[str]]) -> None:
    """The boot side of ``found`` from ``kvmtune boot apply --dry-run -f
    json``'s document ``staged`` and the reasons still pending from an
    earlier run (``earlier``)."""
    from kvmtune.boot import record

    found.kernel_args = list(staged.get('kernel_args') or [])
    reasons = {reason: list(staged.get('reasons', {}).get(reason) or [])
               for reason in record.REASONS}
    for reason, items in earlier.items():
        reasons[reason] += [i for i in items if i not in reasons[reason]]
    found.reasons = reasons
    found.changes += [{'kind': 'file', 'path': f['path']}
                      for f in staged.get('files') or ()
                      if f.get('status') == 'would write']
    found.changes += [{'kind': 'command', 'argv': c['argv']}
                      for c in staged.get('commands') or ()]
    if earlier:
        found.notes.append('a reboot staged before is still pending '
                           '(its reboot record): '
                           + ', '.join(sorted(earlier)))


def _decide(found: HostCheck) -> None:
    found.action = ('reboot' if any(found.reasons.values())
                    else 'restart' if found.changes
                    else 'unknown' if found.unseen else 'none')


def _from_answer(host: inventory.Host, answer: 'remote.Answer',
                 profile: str, config_files: Sequence[str]) -> HostCheck:
    """The HostCheck of a host asked over Ansible (kvmtune.rollout.remote);
    its plan made here from the facts it sent (the front door)."""
    from kvmtune.tuning import plan as plans

    found = HostCheck(host=host.name, root=host.root,
                      connection=host.connection)
    _fill(found, answer.staged, {})
    found.facts = answer.facts
    found.nova_conf_text = answer.conf_text
    try:
        found.plan, = plans.for_host([profile], facts=answer.facts,
                                     config_files=config_files)
    except KvmtuneError as exc:
        raise remote.host_error(host.name, exc) from None
    if answer.nova_conf is None and _compute_options(found.plan):
        found.notes.append(local.no_nova_conf(host.in_root(host.nova_conf)))
        found.unseen = True
    found.changes += [{'kind': 'nova.conf', 'path': host.nova_conf,
                       'diff': line} for line in answer.nova_conf or ()]
    _decide(found)
    return found


def _compute_options(plan: Any) -> bool:
    """The plan has options for nova-compute's nova.conf."""
    from kvmtune.tuning.novaconf import services

    return bool(services.split(plan.nova_conf, services.COMPUTE)[0])


def _unplanned(host: inventory.Host, exc: KvmtuneError) -> HostCheck:
    return HostCheck(host=host.name, root=host.root,
                     connection=host.connection, action='unplanned',
                     notes=[exc.line()])


def _cloud_checks(cloud: str, hosts: Sequence[inventory.Host],
                  checks: Sequence[HostCheck],
                  grouped: Sequence[Sequence[str]], mode: str,
                  config_files: Sequence[str]) -> list['Report']:
    """The cloud's preflight of every batch (kvmtune.rollout.preflight),
    judged on one read of the cloud (GET requests only): the API calls
    grow with the hosts, not with hosts times batches. Every host a
    nova-compute Nova knows (else InputError), room on the rest of the
    fleet for a batch's guests (drain), the plan holding the guests that
    stay (in-place). The batches are judged each on the cloud as it is
    now; the rollout's own preflight reads it again before each batch.
    The hosts' facts and nova.conf as --check read them, by their names
    in Nova, in memory (what kvmtune.capacity.nodefacts reads)."""
    from kvmtune.capacity import nodefacts
    from kvmtune.capacity import placement
    from kvmtune.openstack.connection import Cloud
    from kvmtune.rollout import density
    from kvmtune.rollout import preflight

    by_name = {h.name: h for h in hosts}
    connection = Cloud.connect(cloud)
    snapshot = preflight.read(connection, [h.nova_host for h in hosts])
    plans = {}
    for found in checks:
        host = by_name[found.host]
        if found.plan is not None:
            plans[host.nova_host] = found.plan
        if found.facts is not None:
            snapshot.facts[host.nova_host] = found.facts
        try:
            if found.nova_conf_text is not None:
                snapshot.dedicated[host.nova_host] = nodefacts.dedicated_set(
                    host.in_root(host.nova_conf), found.nova_conf_text)
        except KvmtuneError as exc:
            raise remote.host_error(host.name, exc) from None
    if snapshot.topologies:
        # the servers of every node with facts, for their NUMA use: here
        # every node may be outside one batch
        reader = placement.Reader(connection)
        for node in snapshot.nodes:
            if snapshot.of(snapshot.facts, node) is not None:
                snapshot.residents[node.name] = reader.servers(node)
    reports = []
    earlier: list[str] = []
    # the servers' flavors, once: every batch's snapshot has the same
    flavors = density.flavors(snapshot)
    for names in grouped:
        batch = [by_name[n].nova_host for n in names]
        judge_mode = 'in-place' if mode == 'in-place' else 'drain'
        judged = resume.back_by_then(snapshot, earlier)
        reports.append(preflight.judge(
            judged, batch, judge_mode,
            {h: plans[h] for h in batch if h in plans}, flavors))
        earlier += batch
    return reports


def write_facts(hosts: Sequence[inventory.Host],
                checks: Sequence[HostCheck], directory: str) -> None:
    """Each host's facts (HOST.json) and nova.conf (HOST.conf, HOST its
    name in Nova) into the preflight's ``--facts-dir`` ``directory``."""
    from kvmtune import fileio
    from kvmtune import jsonout

    by_name = {h.name: h for h in hosts}
    for found in checks:
        name = by_name[found.host].nova_host
        if found.facts is not None:
            fileio.write_atomic(
                os.path.join(directory, f'{name}.json'),
                jsonout.dumps(found.facts, source=found.host), mode=0o600)
        if found.nova_conf_text is not None:
            fileio.write_atomic(os.path.join(directory, f'{name}.conf'),
                                found.nova_conf_text, mode=0o600)


def batches(names: Sequence[str], size: int) -> list[list[str]]:
    """``names`` in batches of ``size``, in inventory order (Ansible's
    ``serial: size``)."""
    if size < 1:
        raise InputError(f'must be at least 1, not {size}', key='--batch',
                         fix='give how many hosts a batch takes')
    return [list(names[i:i + size]) for i in range(0, len(names), size)]


def plan(hosts: Iterable[inventory.Host], profile: str, *, path: str,
         batch: int = 1, mode: str = 'drain', cloud: str | None = None,
         config_files: Sequence[str] = (),
         early: local.Early | None = None) -> DryRun:
    """The rollout's plan for ``hosts`` (inventory order) of the
    inventory ``path``; InputError naming the first host that does not
    plan. ``early``: the local.Early of this profile and config files,
    called already."""
    hosts = list(hosts)
    batches([], batch)      # a batch size that is no size: refused first
    from kvmtune.tuning import profiles

    asked = remote.ask([h for h in hosts if not h.local], path, profile)
    here = [h for h in hosts if h.local]
    # the profile (a name or a file) loaded once for every local host
    loaded = None
    if here and early is not None and early.loaded is not None and \
            (early.profile, early.config_files) == (profile,
                                                    list(config_files)):
        loaded = early.loaded
    elif here:
        loaded = profiles.load(profile, profiles.configured_dirs(
            list(config_files)))
    read = dict(zip([h.name for h in here],
                    local.read(here, loaded, config_files)))
    checks = []
    unplanned: list[KvmtuneError] = []
    for host in hosts:
        try:
            if host.name in asked:
                answer = asked[host.name]
                if isinstance(answer, KvmtuneError):
                    raise answer
                found = _from_answer(host, answer, profile, config_files)
            else:
                reading = read[host.name]
                if isinstance(reading, KvmtuneError):
                    raise reading
                found = _from_reading(host, reading)
        except KvmtuneError as exc:
            # every host that does not plan is listed, with its reason
            unplanned.append(exc)
            found = _unplanned(host, exc)
        checks.append(found)
    # the run's batches: the hosts it rolls, in inventory order
    grouped = batches([c.host for c in checks if c.action in ROLLED], batch)
    number = {name: n for n, names in enumerate(grouped, 1)
              for name in names}
    for found in checks:
        found.batch = number.get(found.host, 0)
    skipped: list[dict[str, str]] = []
    reports: list['Report'] = []
    if unplanned:
        why = 'a host does not plan'
        skipped = [{'check': name, 'what': what, 'why': why}
                   for name, what in CLOUD_CHECKS]
    elif cloud is None or mode == 'stage':
        why = ('no --os-cloud given' if cloud is None
               else 'mode stage disables, drains and reboots nothing')
        skipped = [{'check': name, 'what': what, 'why': why}
                   for name, what in CLOUD_CHECKS]
    else:
        reports = _cloud_checks(cloud, hosts, checks, grouped, mode,
                                config_files)
    return DryRun(profile=profile, inventory=path, mode=mode,
                  batch_size=batch, cloud=cloud, hosts=checks,
                  skipped=skipped,
                  reports=[report.to_dict() for report in reports],
                  refused=[r for report in reports for r in report.refusals],
                  unplanned=unplanned)
