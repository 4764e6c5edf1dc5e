"""The density cost of a plan on one host: per flavor, how many guests
the host holds empty, now and under the plan's CPU sets and huge page
pools (the guests a rollout gives up on that host for good).

Counted as ``kvmtune capacity`` counts: Placement's inventory (PCPU one
per ``cpu_dedicated_set`` CPU, VCPU one per ``cpu_shared_set`` CPU at the
node's allocation ratio; nova/virt/libvirt/driver.py update_provider_tree)
and, for a flavor with a NUMA topology, Nova's fit loop on the host's
NUMA cells (kvmtune.capacity.numa), which needs the host's facts.
"""

from collections.abc import Mapping
import dataclasses
from typing import Any
from typing import TYPE_CHECKING

from kvmtune import capacity
from kvmtune.capacity import cells
from kvmtune.capacity import numa
from kvmtune.capacity import request as requests
from kvmtune.rollout import inplace
from kvmtune.rollout import snapshot as snapshots

if TYPE_CHECKING:
    from kvmtune.capacity.placement import Host
    from kvmtune.tuning.plan import Plan


def planned_facts(facts: Mapping[str, Any], plan: 'Plan') -> dict[str, Any]:
    """The facts with the plan's huge page pools in place of today's: new
    NUMA node dicts and page lists, the rest shared with ``facts`` (read
    only here; a deep copy of the whole facts a host was most of the
    density's time, benchmarks/rollout_check.py)."""
    changed = dict(facts)
    changed['numa'] = {**facts['numa'], 'nodes': [
        dict(node) for node in facts['numa']['nodes']]}
    for pool in plan.hugepages:
        for node in changed['numa']['nodes']:
            if node['id'] != pool['node']:
                continue
            pages = [p for p in node.get('hugepages') or ()
                     if p['size_kb'] != pool['size_kb']]
            pages.append({'size_kb': pool['size_kb'], 'total': pool['count'],
                          'free': pool['count']})
            node['hugepages'] = pages
    return changed


def _empty_count(node: 'Host', wanted: requests.Request,
                 facts: Mapping[str, Any] | None,
                 dedicated: set[int] | None,
                 shared: set[int] | None) -> int | None:
    """Guests of ``wanted`` on the node emptied (None: not known)."""
    empty = dataclasses.replace(node, usages={})
    count, _ = capacity.placement_fit(empty, wanted)
    if count == 0 or wanted.numa is None:
        return count
    if facts is None or (dedicated is None and wanted.numa.pcpus) or \
            (shared is None and any(c[1] for c in wanted.numa.cells)):
        return None
    found, _ = numa.fit(cells.host_nodes(facts, dedicated or set(), (),
                                         shared or set()),
                        wanted.numa, capacity.filter_limits(node))
    return None if found is None else min(count, found)


def flavors(snapshot: snapshots.Snapshot) -> dict[str, Any]:
    """{flavor name: a server of it}: the flavors of the snapshot's
    servers, the last server of each name."""
    return {s.flavor_name: s for guests in snapshot.servers.values()
            for s in guests}


def density(snapshot: snapshots.Snapshot, host: str, plan: 'Plan | None',
            flavors_of: Mapping[str, Any] | None = None
            ) -> list[dict[str, Any]]:
    """[{host, flavor, before, after}]: guests of each of the batch's
    flavors the empty host holds now and under ``plan`` (None: unknown).
    ``flavors_of``: flavors(snapshot), for a caller that asks for many
    hosts of one snapshot (read once, not once a host)."""
    node = snapshot.node(host)
    if flavors_of is None:
        flavors_of = flavors(snapshot)
    if node is None:
        return []
    facts = snapshot.of(snapshot.facts, node)
    dedicated = capacity.cpu_sets(node, facts or {}, None,
                                  snapshot.of(snapshot.dedicated, node))
    shared = capacity.shared_cpus(node, facts or {}, dedicated or set())
    # its own inventories, the one thing changed below
    after_node = dataclasses.replace(node, inventories={
        rc: dict(inv) for rc, inv in node.inventories.items()})
    new_dedicated = new_shared = None
    if plan is not None and facts is not None:
        online = set((facts.get('cpu') or {}).get('online') or ())
        new_dedicated = inplace.planned_set(
            plan, 'cpu_dedicated_set') or set()
        new_shared = inplace.planned_set(plan, 'cpu_shared_set')
        if new_shared is None:
            new_shared = online - new_dedicated
        for rc, cpus in (('PCPU', new_dedicated), ('VCPU', new_shared)):
            if cpus:
                inv = after_node.inventories.setdefault(
                    rc, {'allocation_ratio': 1.0 if rc == 'PCPU' else 4.0})
                inv.update(total=len(cpus), reserved=0, max_unit=len(cpus))
            else:
                after_node.inventories.pop(rc, None)
    # the facts under the plan, once for every flavor (_empty_count only
    # reads them)
    after_facts = planned_facts(facts, plan) \
        if plan is not None and facts is not None and flavors_of else None
    rows = []
    for name, server in sorted(flavors_of.items()):
        wanted = snapshots.request_of(server)
        after = None
        if after_facts is not None:
            after = _empty_count(after_node, wanted, after_facts,
                                 new_dedicated, new_shared)
        rows.append({'host': host, 'flavor': name,
                     'before': _empty_count(node, wanted, facts, dedicated,
                                            shared), 'after': after})
    return rows
