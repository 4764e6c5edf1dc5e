"""Before a batch is touched: can the cloud do without it, and what does
the change cost?

Pure functions over a ``Snapshot`` (what the cloud said, read once by
``read``), so they run on recorded API answers as well as on a live cloud:

- ``fleet_fit``: the rest of the fleet takes the batch's guests. The
  batch's own servers, each as Nova's scheduler asks for its embedded
  flavor (kvmtune.capacity.request), are placed first fit, host by host,
  on the enabled, up compute nodes outside the batch, on their live
  Placement usages (kvmtune.capacity.placement_fit), and, for a guest
  with a NUMA topology, on the node's NUMA cells with what its servers
  use (kvmtune.capacity.numa.place, Nova's fit loop; it needs the node's
  facts, as ``kvmtune capacity --facts-dir``). Each guest placed adds its
  use. A guest that fits nowhere is a refusal naming its host, server,
  flavor and what ran out on each candidate. First fit is not Nova's
  scheduler (its weighers spread guests): it says whether room exists,
  not where Nova will put each guest.
- in-place mode (kvmtune.rollout.inplace): the plan's new CPU sets and
  page pools still hold the guests that stay on their host;
- the density cost (kvmtune.rollout.density): per batch host and flavor,
  how many guests fit the empty host now and under the plan (its CPU
  sets and pools).
"""

from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
import dataclasses
from typing import Any
from typing import TYPE_CHECKING

from kvmtune import capacity
from kvmtune.capacity import cells
from kvmtune.capacity import numa
from kvmtune.capacity import request as requests
from kvmtune.rollout import density
from kvmtune.rollout import inplace
from kvmtune.rollout import nova
from kvmtune.rollout import snapshot as snapshots
from kvmtune.rollout import vocabulary

if TYPE_CHECKING:
    from kvmtune.capacity.placement import Host
    from kvmtune.tuning.plan import Plan


# the shared types, kept under these names for the preflight's callers


@dataclasses.dataclass
class Placed:
    """One guest of the batch and where first fit put it."""
    host: str
    server: str
    name: str
    flavor: str
    status: str
    target: str | None = None
    why: str | None = None      # fits nowhere: what ran out, per node

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _size(server: nova.Server) -> tuple[int, int]:
    flavor = server.flavor
    return (int(flavor.get('vcpus') or 0), int(flavor.get('ram') or 0))


class _Target:
    """A node outside the batch, with the use the guests placed add."""

    def __init__(self, node: 'Host', snapshot: snapshots.Snapshot) -> None:
        # its own usages, the one thing take() changes; the rest is read
        # only, shared with the snapshot (a deep copy of every node for
        # every batch was most of the preflight's time at 500 hosts,
        # benchmarks/rollout_check.py)
        self.node = dataclasses.replace(node, usages=dict(node.usages))
        self.snapshot = snapshot
        self._cells: list[cells.Node] | None = None
        self._why: str | None = None
        self._sets: tuple[set[int] | None, set[int] | None] | None = None

    def sets(self) -> tuple[set[int] | None, set[int] | None]:
        if self._sets is None:
            facts = self.snapshot.of(self.snapshot.facts, self.node)
            dedicated = capacity.cpu_sets(
                self.node, facts or {}, None,
                self.snapshot.of(self.snapshot.dedicated, self.node))
            shared = capacity.shared_cpus(self.node, facts or {},
                                          dedicated or set())
            self._sets = (dedicated, shared)
        return self._sets

    def cells_for(self, wanted: requests.NumaRequest
                  ) -> tuple[list[cells.Node] | None, str]:
        facts = self.snapshot.of(self.snapshot.facts, self.node)
        if facts is None:
            return None, 'NUMA fit unknown: no facts'
        dedicated, shared = self.sets()
        if dedicated is None and wanted.pcpus:
            return None, 'NUMA fit unknown: dedicated CPUs not known'
        if shared is None and any(c[1] for c in wanted.cells):
            return None, 'NUMA fit unknown: shared CPUs not known'
        if self._cells is None:
            self._cells = cells.host_nodes(
                facts, dedicated or set(),
                self.snapshot.of(self.snapshot.residents, self.node) or (),
                shared or set())
        return self._cells, ''

    def take(self, wanted: requests.Request) -> str | None:
        """Place one guest here (its use added), or say what runs out."""
        count, limit = capacity.placement_fit(self.node, wanted)
        if count < 1:
            return limit or 'no room'
        if wanted.numa is not None:
            nodes, unknown = self.cells_for(wanted.numa)
            if nodes is None:
                return unknown
            why = numa.place(nodes, wanted.numa,
                             capacity.filter_limits(self.node))
            if why:
                return why
        for rc, amount in wanted.resources.items():
            self.node.usages[rc] = self.node.usages.get(rc, 0) + amount
        return None


def targets(snapshot: snapshots.Snapshot,
            batch: Iterable[str]) -> list['Host']:
    """The nodes that may take the batch's guests: outside the batch,
    read, their nova-compute enabled and up."""
    out = set(batch)
    found = []
    for node in snapshot.nodes:
        service = snapshot.services.get(node.service_host)
        if node.service_host in out or node.name in out or node.error:
            continue
        if service is None or service.status != 'enabled' or \
                service.state != 'up':
            continue
        found.append(node)
    return found


def fleet_fit(snapshot: snapshots.Snapshot,
              batch: Sequence[str]) -> list[Placed]:
    """Where first fit puts each guest of the batch on the rest of the
    fleet; a guest with ``target`` None fits nowhere (``why``)."""
    nodes = iter(targets(snapshot, batch))
    made: list[_Target] = []

    def others() -> Iterator[_Target]:
        """The targets in order, each made when first fit first comes to
        it: it mostly stops at the first few, and a target of every node
        for every batch was hosts x batches (benchmarks/rollout_check.py
        at --check with a cloud)."""
        yield from made
        for node in nodes:
            made.append(_Target(node, snapshot))
            yield made[-1]

    placed: list[Placed] = []
    for host in batch:
        guests = sorted(snapshot.servers.get(host, ()),
                        key=lambda s: (_size(s), s.id), reverse=True)
        for server in guests:
            wanted = snapshots.request_of(server)
            entry = Placed(host, server.id, server.name, server.flavor_name,
                           server.status)
            reasons: dict[str, list[str]] = {}
            for target in others():
                why = target.take(wanted)
                if why is None:
                    entry.target = target.node.service_host
                    break
                reasons.setdefault(why, []).append(target.node.service_host)
            if entry.target is None:
                entry.why = _grouped(reasons) or \
                    'no other compute is enabled and up'
            placed.append(entry)
    return placed


def _grouped(reasons: Mapping[str, list[str]], shown: int = 5) -> str:
    """'PCPU on c3, c4; MEMORY_MB on c5': what ran out, on which nodes
    (the first ``shown`` of each, and how many more)."""
    parts = []
    for why, hosts in reasons.items():
        more = f' and {len(hosts) - shown} more' if len(hosts) > shown \
            else ''
        parts.append(f'{why} on {", ".join(hosts[:shown])}{more}')
    return '; '.join(parts)


def refusals(placed: Iterable[Placed]) -> list[snapshots.Refused]:
    return [snapshots.Refused(f'server {p.server} ({p.name}, flavor '
                              f'{p.flavor}) fits on no other enabled '
                              f'compute: {p.why}',
                              source=f'host {p.host}', key='preflight',
                              fix='free room elsewhere or make the batch '
                                  'smaller; nothing was touched')
            for p in placed if p.target is None]


def read(cloud: Any, batch: Sequence[str],
         facts_dir: str | None = None) -> snapshots.Snapshot:
    """The Snapshot of the cloud for ``batch``: GET requests only.

    :raises InputError: a batch host Nova does not know
    """
    from kvmtune.capacity import nodefacts
    from kvmtune.capacity import placement

    known = nova.check_hosts(cloud, batch)
    facts, dedicated = (nodefacts.read_dir(facts_dir) if facts_dir
                        else ({}, {}))
    reader = placement.Reader(cloud)
    snapshot = snapshots.Snapshot(
        nodes=reader.hosts(), services=known,
        servers={h: nova.servers(cloud, h) for h in batch},
        facts=dict(facts), dedicated=dedicated)
    for guests in snapshot.servers.values():
        for server in guests:
            if snapshots.request_of(server).numa is not None:
                snapshot.topologies[server.id] = cloud.compute(
                    'GET', f'/servers/{server.id}/topology')
    numa_wanted = bool(snapshot.topologies)
    for node in targets(snapshot, batch):
        if numa_wanted and snapshot.of(snapshot.facts, node) is not None:
            snapshot.residents[node.name] = reader.servers(node)
    return snapshot


@dataclasses.dataclass
class Report:
    """The preflight of one batch: where its guests go (drain mode), the
    density cost per host, and the refusals (none: the batch may go)."""
    batch: list[str]
    mode: str
    placed: list[Placed]
    density: list[dict[str, Any]]
    refusals: list[snapshots.Refused]

    def to_dict(self) -> dict[str, Any]:
        return {'batch': self.batch, 'mode': self.mode,
                'ok': not self.refusals,
                'placed': [p.to_dict() for p in self.placed],
                'density': self.density,
                'refusals': [r.line() for r in self.refusals]}


MODES = vocabulary.JUDGED


def judge(snapshot: snapshots.Snapshot, batch: Sequence[str], mode: str,
          plans: Mapping[str, 'Plan'],
          flavors: Mapping[str, Any] | None = None) -> Report:
    """The preflight on a snapshot (pure: no call to the cloud).

    :param plans: {batch host: its plan}, where the host's facts are known
    :param flavors: kvmtune.rollout.density.flavors(snapshot), for a
        caller that judges many batches on the servers of one snapshot
    """
    placed = fleet_fit(snapshot, batch) if mode == 'drain' else []
    found = refusals(placed)
    if mode == 'in-place':
        for host in batch:
            found += inplace.in_place(host, snapshot.servers.get(host, []),
                                      snapshot.topologies, plans[host])
    if flavors is None:
        flavors = density.flavors(snapshot)
    rows = [row for host in batch
            for row in density.density(snapshot, host, plans.get(host),
                                       flavors)]
    return Report(list(batch), mode, placed, rows, found)


def run(cloud: Any, batch: Sequence[str], *, mode: str = 'drain',
        profiles: Sequence[str] = (), facts_dir: str | None = None,
        config_files: Sequence[str] = ()) -> Report:
    """Read the cloud once and judge the batch (GET requests only).

    :raises InputError: a batch host Nova does not know; in-place mode
        without the profile or a batch host's facts
    """
    from kvmtune.errors import InputError
    from kvmtune.tuning import plan

    snapshot = read(cloud, batch, facts_dir)
    plans = {}
    for host in batch:
        node = snapshot.node(host)
        facts = snapshot.of(snapshot.facts, node) if node else None
        if profiles and facts is not None:
            plans[host] = plan.for_host(list(profiles), facts=facts,
                                        config_files=config_files)[0]
        elif mode == 'in-place':
            raise InputError(f'in-place mode plans host {host} from its '
                             'facts and the profile', key='--facts-dir',
                             fix=f'give --profile and --facts-dir DIR with '
                                 f'{host}.json')
    return judge(snapshot, batch, mode, plans)
