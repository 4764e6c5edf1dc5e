"""How many more guests of each flavor fit, per host and in all.

``for_hosts(cloud, flavor_names, facts_dir=..., profiles=...)`` is the
front door (``kvmtune capacity`` and the rollout call it): it reads the
nodes' facts and nova.conf files (kvmtune.capacity.nodefacts), plans each
node's CPU sets from its own facts, and counts with ``compute``.

``compute(cloud, flavor_names, ...)`` reads each compute node once
(kvmtune.capacity.placement), turns each flavor into the scheduler's
request (kvmtune.capacity.request) and counts, per node and flavor:

1. Placement: for each requested class, ``floor((capacity - used) /
   amount)`` with ``capacity = int((total - reserved) x
   allocation_ratio)``, 0 when the amount is outside min_unit..max_unit or
   not a multiple of step_size (Placement's own rules); a required trait
   the node lacks, or a forbidden one it has (``COMPUTE_STATUS_DISABLED``:
   a disabled compute), is 0 with the trait as the limit;
2. with the node's facts (``--facts-dir``) and CPU sets: the NUMA fit
   (kvmtune.capacity.numa), guest after guest as Nova's scheduler and
   claims place them, with the NUMATopologyFilter's limits (the node's
   VCPU and MEMORY_MB allocation ratios).

The count is the smaller, and its limit the first thing to run out:
``PCPU``, ``VCPU``, ``MEMORY_MB``, ``DISK_GB``, ``trait:<NAME>``,
``!trait:<NAME>``, ``pages:<size>``, ``numa:PCPU``, ``numa:VCPU``,
``numa:MEMORY_MB``, ``numa:nodes``. A node that could not be read, a
NUMA flavor without the node's facts or CPU sets, or a NUMA count past
its work bound is marked partial with the reason, never counted as 0 or
as room. A flavor Nova refuses to boot is an InputError naming Nova's
rule (kvmtune.tuning.flavor_topology).
"""

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import dataclasses
import math
from typing import Any
from typing import cast
from typing import TYPE_CHECKING

from kvmtune.capacity import cells
from kvmtune.capacity import numa as numa_fit
from kvmtune.capacity import request as requests
from kvmtune.errors import CloudError
from kvmtune.errors import InputError
from kvmtune.tuning import flavor_topology

if TYPE_CHECKING:
    from kvmtune.capacity.placement import Host
    from kvmtune.tuning.plan import Plan


@dataclasses.dataclass
class Fit:
    """How many more instances of one flavor fit on one compute node."""
    host: str
    flavor: str
    count: int | None = None   # None: not known (partial, see reason)
    limit: str | None = None
    reason: str | None = None
    aggregates: list[str] = dataclasses.field(default_factory=list)
    # Nova's service host of the node (``host`` is its hypervisor name,
    # which may differ, e.g. an FQDN): the textfile's hostname label
    service_host: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Capacity:
    """Every (host, flavor) fit, and the totals."""
    fits: list[Fit]
    calls: int = 0

    @property
    def partial(self) -> bool:
        return any(fit.count is None for fit in self.fits)

    def by_flavor(self) -> dict[str, tuple[int, bool]]:
        """{flavor: (instances that fit in all, partial?)}."""
        totals: dict[str, tuple[int, bool]] = {}
        for fit in self.fits:
            count, partial = totals.get(fit.flavor, (0, False))
            totals[fit.flavor] = (count + (fit.count or 0),
                                  partial or fit.count is None)
        return totals

    def by_aggregate(self) -> dict[tuple[str, str], tuple[int, bool]]:
        """{(aggregate, flavor): (instances, partial?)}."""
        totals: dict[tuple[str, str], tuple[int, bool]] = {}
        for fit in self.fits:
            for aggregate in fit.aggregates:
                key = (aggregate, fit.flavor)
                count, partial = totals.get(key, (0, False))
                totals[key] = (count + (fit.count or 0),
                               partial or fit.count is None)
        return totals

    def to_dict(self) -> dict[str, Any]:
        return {
            'fits': [fit.to_dict() for fit in self.fits],
            'totals': {flavor: {'count': count, 'partial': partial}
                       for flavor, (count, partial)
                       in sorted(self.by_flavor().items())},
            'aggregates': [{'aggregate': a, 'flavor': f, 'count': count,
                            'partial': partial}
                           for (a, f), (count, partial)
                           in sorted(self.by_aggregate().items())],
            'partial': self.partial,
            'api_calls': self.calls,
        }


def placement_fit(host: 'Host', request: requests.Request
                  ) -> tuple[int, str | None]:
    """(count, limit) from the node's Placement view alone."""
    # a forbidden trait first: COMPUTE_STATUS_DISABLED (a disabled
    # compute) is the reason before anything the flavor asks for
    for trait in sorted(request.forbidden):
        if trait in host.traits:
            return 0, f'!trait:{trait}'
    for trait in sorted(request.required):
        if trait not in host.traits:
            return 0, f'trait:{trait}'
    best: tuple[int, str] | None = None
    for rc, amount in sorted(request.resources.items()):
        inv = host.inventories.get(rc)
        if inv is None:
            return 0, rc
        if amount < inv.get('min_unit', 1) or \
                amount > inv.get('max_unit', amount) or \
                amount % (inv.get('step_size') or 1):
            return 0, rc
        raw = (inv['total'] - inv.get('reserved', 0)) * inv.get(
            'allocation_ratio', 1.0)
        if not math.isfinite(raw):
            # finite figures whose product is not
            # (tests/unit/cmd/test_formats.py, the overflow test)
            raise CloudError(
                f'{rc}: (total - reserved) x allocation_ratio is beyond '
                'any number', source=f'resource provider {host.name}',
                key='inventories',
                fix='correct the compute node\'s inventory in Placement')
        capacity = int(raw)
        free = capacity - host.usages.get(rc, 0)
        count = max(free, 0) // amount
        if best is None or count < best[0]:
            best = (count, rc)
    return best if best is not None else (0, None)


def filter_limits(host: 'Host') -> tuple[float, float]:
    """(cpu_allocation_ratio, ram_allocation_ratio) as the
    NUMATopologyFilter passes them (nova/scheduler/filters/
    numa_topology_filter.py: the HostState's ratios, which are the
    compute node's, the ones it reports to Placement)."""
    ratios = []
    for rc in ('VCPU', 'MEMORY_MB'):
        inv = host.inventories.get(rc) or {}
        ratios.append(float(inv.get('allocation_ratio') or 1.0))
    return ratios[0], ratios[1]


def cpu_sets(host: 'Host', facts: Mapping[str, Any],
             plans: Sequence['Plan'] | None,
             dedicated: Iterable[int] | None = None) -> set[int] | None:
    """The node's dedicated CPUs for the NUMA fit, or None (unknown).

    The node's own ``[compute] cpu_dedicated_set`` when given (its
    nova.conf), else the plans of the profiles it was tuned with, else:
    all online CPUs when Placement's PCPU total says every CPU is
    dedicated, none when the node reports no PCPU.
    """
    from kvmtune.facts.cpulist import parse_cpu_spec
    if dedicated is not None:
        return set(dedicated)
    for plan in plans or ():
        value = plan.nova_conf.get('compute', {}).get('cpu_dedicated_set')
        if value is not None:   # a single-valued option: a string
            return set(parse_cpu_spec(cast(str, value)))
    online = set((facts.get('cpu') or {}).get('online') or ())
    pcpu = host.inventories.get('PCPU')
    if pcpu is None:
        return set()
    if online and pcpu['total'] == len(online):
        return online
    return None


def shared_cpus(host: 'Host', facts: Mapping[str, Any],
                dedicated: set[int]) -> set[int] | None:
    """The node's ``[compute] cpu_shared_set`` as Nova uses it, or None
    (unknown): none when Placement has no VCPU inventory for it (Nova
    reports none when only cpu_dedicated_set is set), the online CPUs not
    dedicated when Placement's VCPU total is their number."""
    inv = host.inventories.get('VCPU')
    if inv is None:
        return set()
    online = set((facts.get('cpu') or {}).get('online') or ())
    rest = online - dedicated
    if rest and inv['total'] == len(rest):
        return rest
    return None


def host_fit(host: 'Host', request: requests.Request,
             facts: Mapping[str, Any] | None = None,
             plans: Sequence['Plan'] | None = None,
             servers: Sequence[tuple[Any, Any]] | None = None,
             dedicated: Iterable[int] | None = None) -> Fit:
    """One Fit for a node already read."""
    fit = Fit(host=host.name, flavor=request.flavor,
              aggregates=list(host.aggregates),
              service_host=host.service_host)
    if host.error:
        fit.reason = host.error
        return fit
    count, limit = placement_fit(host, request)
    if count == 0 or request.numa is None:
        fit.count, fit.limit = count, limit
        return fit
    if facts is None:
        fit.reason = (f'{request.describe()}: the NUMA fit needs the '
                      f'host\'s facts (--facts-dir DIR with {host.name}.json'
                      '); Placement alone allows ' + str(count))
        return fit
    dedicated = cpu_sets(host, facts, plans, dedicated)
    if dedicated is None and request.numa.pcpus:
        fit.reason = ('which CPUs are dedicated is not known (give the '
                      f'host\'s nova.conf as {host.name}.conf beside its '
                      'facts, or the --profile it was tuned with); '
                      f'Placement alone allows {count}')
        return fit
    shared = shared_cpus(host, facts, dedicated or set())
    if shared is None and any(cell[1] for cell in request.numa.cells):
        fit.reason = ('which CPUs are shared is not known (Placement\'s '
                      'VCPU total is not the online CPUs left after the '
                      'dedicated ones); Placement alone allows '
                      f'{count}')
        return fit
    nodes = cells.host_nodes(facts, dedicated or set(), servers or (),
                             shared or set())
    numa_count, numa_limit = numa_fit.fit(nodes, request.numa,
                                          filter_limits(host))
    if numa_count is None:
        fit.reason = (f'{request.describe()}: the NUMA fit could not be '
                      f'made: {numa_limit}; Placement alone allows {count}')
        return fit
    if numa_count < count:
        fit.count, fit.limit = numa_count, numa_limit
    else:
        fit.count, fit.limit = count, limit
    return fit


def compute(cloud: Any, flavor_names: Sequence[str] | None = None, *,
            facts_by_host: Mapping[str, Any] | None = None,
            hosts: Sequence[str] | None = None,
            aggregates: Sequence[str] | None = None,
            plans_for: Callable[[Any], Sequence['Plan']] | None = None,
            dedicated_by_host: Mapping[str, set[int]] | None = None
            ) -> Capacity:
    """The capacity of the cloud for the flavors named (default: every
    flavor with kvmtune's mark).

    :param facts_by_host: {hypervisor hostname: facts} for the NUMA fit
    :param hosts: only these compute nodes (hypervisor or service host)
    :param aggregates: only nodes in these Nova aggregates
    :param plans_for: facts -> [Plan] (the profiles the hosts run), or None
    :param dedicated_by_host: {host: set of CPUs}, each host's own
        ``[compute] cpu_dedicated_set`` (its nova.conf)
    :raises InputError: an unknown flavor, host or aggregate; facts for a
        host Nova does not know
    """
    from kvmtune.capacity import placement
    from kvmtune.openstack import flavors as cloud_flavors

    facts_by_host = facts_by_host or {}
    reader = placement.Reader(cloud)
    listing = reader.flavors()
    if flavor_names:
        chosen = [listing.get(name) for name in flavor_names]
    else:
        chosen = [f for f in listing.all()
                  if cloud_flavors.made_by_kvmtune(f)]
        if not chosen:
            raise InputError('no flavor carries kvmtune\'s mark',
                             source=f'cloud {cloud.name}', key='--flavor',
                             fix='name the flavors with --flavor F')
    wanted = []
    for flavor in chosen:
        try:
            wanted.append(requests.from_flavor(flavor))
        except flavor_topology.Refused as exc:
            raise InputError(f'Nova refuses to boot it ({exc.rule}): '
                             f'{exc.why}', source=f'flavor {flavor["name"]}',
                             fix='fix the flavor\'s extra specs, or leave '
                             'it out') from None
        except requests.Unsupported as exc:
            raise InputError(f'cannot count it: {exc}',
                             source=f'flavor {flavor["name"]}',
                             fix='leave this flavor out') from None
    nodes = reader.hosts()
    names = {n.name for n in nodes} | {n.service_host for n in nodes}
    for name in sorted(set(facts_by_host) - names):
        raise InputError(f'facts for {name}, which is no compute node in '
                         f'Nova (compute nodes: {", ".join(sorted(names))})',
                         key='--facts-dir', fix=f'remove {name}.json or '
                         'rename it as Nova names the host')
    for name in hosts or ():
        if name not in names:
            raise InputError(f'no compute node named {name!r}', key='--host',
                             fix='choose from: ' + ', '.join(sorted(names)))
    known = {a for n in nodes for a in n.aggregates}
    for name in aggregates or ():
        if name not in known:
            raise InputError(f'no aggregate named {name!r} with a compute '
                             'node', key='--aggregate',
                             fix='choose from: ' + (', '.join(sorted(known))
                                                    or 'none'))
    nodes = [n for n in nodes
             if (not hosts or n.name in hosts or n.service_host in hosts)
             and (not aggregates or set(n.aggregates) & set(aggregates))]
    fits = []
    for node in nodes:
        facts = facts_by_host.get(node.name) or \
            facts_by_host.get(node.service_host)
        servers = None
        if facts is not None and not node.error and \
                any(r.numa for r in wanted):
            from kvmtune.errors import CloudError
            try:
                servers = reader.servers(node)
            except CloudError as exc:
                node.error = exc.line()
        plans = plans_for(facts) if plans_for and facts else None
        own = (dedicated_by_host or {}).get(node.name)
        if own is None:
            own = (dedicated_by_host or {}).get(node.service_host)
        for req in wanted:
            fits.append(host_fit(node, req, facts, plans, servers, own))
    return Capacity(fits=fits, calls=reader.calls)


def for_hosts(cloud: Any, flavor_names: Sequence[str] | None = None, *,
              facts_dir: str | None = None,
              profiles: Sequence[str] | None = None,
              config_files: Iterable[str] = (),
              hosts: Sequence[str] | None = None,
              aggregates: Sequence[str] | None = None) -> Capacity:
    """The capacity of the cloud, with what is known of its nodes.

    :param facts_dir: HOST.json (facts) and HOST.conf (its nova.conf) per
        compute node (kvmtune.capacity.nodefacts), for the NUMA fit
    :param profiles: the profiles the nodes were tuned with: each node's
        cpu_dedicated_set is planned from its own facts
    :param config_files: kvmtune.conf files (where profiles are found)
    :param hosts: only these compute nodes; ``aggregates``: only nodes in
        these aggregates (``compute``)
    """
    from kvmtune.capacity import nodefacts

    by_host, dedicated = (nodefacts.read_dir(facts_dir) if facts_dir
                          else ({}, {}))
    chosen, files = list(profiles or ()), list(config_files)

    def plans_for(facts: Any) -> Sequence['Plan']:
        """Each node's plans (its CPU sets), from its own facts."""
        from kvmtune.tuning import plan

        return plan.for_host(chosen, facts=facts, config_files=files)

    return compute(cloud, flavor_names, facts_by_host=by_host, hosts=hosts,
                   aggregates=aggregates,
                   plans_for=plans_for if chosen else None,
                   dedicated_by_host=dedicated)
