"""The test cloud's nova-computes: computes 2..N (the NUMA fake driver
under their own host names: their shapes, CPU sets and files), what
Placement says of each, and restarting one after its file was edited
(api.restart_compute)."""

from collections.abc import Iterable
from collections.abc import Mapping
import json
import os
import time
from typing import Any
from typing import TYPE_CHECKING

from kvmtune.errors import CloudError
from kvmtune.errors import InputError
from kvmtune.testcloud import config
from kvmtune.testcloud import procs
from kvmtune.testcloud import rest
from kvmtune.testcloud import services
from kvmtune.testcloud import stop

if TYPE_CHECKING:
    from kvmtune.facts.types import Facts

EXTRA_HOST_PREFIX = 'kvmtune-compute-'
MAX_COMPUTES = 8
# Host shapes of computes 2, 3, 4 (then again from the first), facts JSON
# from `kvmtune host inspect --root tests/fixtures/hosts/<tree>` shipped in
# files/hosts/ (the fixture trees are not installed): a 2-socket Intel
# with 1 GiB pages, a 1-socket AMD EPYC in NPS4 (4 nodes) with 2 MiB
# pages, a real 2-socket Intel capture (hwloc's) with 2 MiB pages.
EXTRA_SHAPES = ('intel-2s-smt-ept-1g.json', 'amd-epyc-npt.json',
                '32intel64-2p8co2t.json')


def extra_host(index: int) -> str:
    """[DEFAULT] host of compute ``index`` (2, 3, ...)."""
    return '%s%d' % (EXTRA_HOST_PREFIX, index)


def extra_service(index: int) -> str:
    """Its name in the state file's services and the ledger, and its
    log (log/<name>.log)."""
    return 'nova-compute-%d' % index


def default_extra_facts(index: int, files_dir: str) -> str:
    """The shipped facts file for compute ``index`` (2, 3, ...)."""
    return os.path.join(files_dir, 'hosts', EXTRA_SHAPES[
        (index - 2) % len(EXTRA_SHAPES)])


def extra_cpu_sets(facts: Mapping[str, Any]) -> tuple[str, str]:
    """([compute] cpu_shared_set, cpu_dedicated_set) of an extra compute,
    as CPU lists, from its facts: the lowest online CPU of a NUMA node and
    its thread siblings are shared (VCPU), every other online CPU of a
    node is dedicated (PCPU), so that a host has both. ValueError when
    the facts leave no CPU for one of them.
    """
    from kvmtune.facts import cpulist

    cpu = facts.get('cpu') or {}
    online = set(cpu.get('online') or ())
    usable: set[int] = set()
    for node in (facts.get('numa') or {}).get('nodes') or ():
        usable |= set(node.get('cpus') or ())
    if online:
        usable &= online
    if not usable:
        raise ValueError('no online CPU in a NUMA node')
    first = min(usable)
    shared = {first}
    for group in cpu.get('thread_siblings') or ():
        if first in group:
            shared |= set(group) & usable
    dedicated = usable - shared
    if not dedicated:
        raise ValueError('only CPU %s: nothing left to dedicate'
                         % cpulist.format_cpulist(shared))
    return cpulist.format_cpulist(shared), cpulist.format_cpulist(dedicated)


def check_extra_facts(facts: Any) -> str | None:
    """The problem that keeps the NUMA fake driver from using ``facts``
    (a parsed facts JSON), or None."""
    if not isinstance(facts, dict):
        return 'not a JSON object'
    nodes = (facts.get('numa') or {}).get('nodes') if isinstance(
        facts.get('numa'), dict) else None
    if not nodes or not isinstance(nodes, list):
        return 'no numa.nodes'
    for node in nodes:
        if not isinstance(node, dict) or not isinstance(
                node.get('memory_mb'), int) or not node.get('cpus') or \
                not isinstance(node.get('id'), int):
            return 'a NUMA node without id, cpus or memory_mb'
    try:
        extra_cpu_sets(facts)
    except (ValueError, TypeError) as exc:
        return 'no CPU sets: %s' % exc
    return None


def extra_compute(layout: config.Layout, index: int, shared: str,
                  dedicated: str) -> config.Conf:
    """nova-compute's own file for compute ``index`` (2, 3, ...) on the
    NUMA fake driver, read after nova.conf like ``compute()``'s: that
    file's settings plus its host name, its state path (compute_id,
    instances, locks) and its CPU sets."""
    conf = config.compute(layout, 'fake', None)
    state = layout.extra_state_path(index)
    conf['DEFAULT'].update({'host': extra_host(index), 'state_path': state})
    conf['compute'] = {'cpu_shared_set': shared,
                       'cpu_dedicated_set': dedicated}
    conf['oslo_concurrency'] = {'lock_path': os.path.join(state, 'lock')}
    return conf


def extra_facts(computes: int, compute_facts: Iterable[str] | None
                ) -> list[tuple[int, str, 'Facts']]:
    """[(index, path, facts)] of computes 2..``computes``: the files given
    first, then the shipped shapes (EXTRA_SHAPES); InputError for
    a count out of range, a missing, unreadable or shapeless file."""
    from kvmtune import facts as facts_mod

    if isinstance(computes, bool) or not isinstance(computes, int) or \
            not 1 <= computes <= MAX_COMPUTES:
        raise InputError('--computes %r out of range' % (computes,),
                         key='computes',
                         fix='give 1 to %d (each extra compute takes ~150 '
                             'MB)' % MAX_COMPUTES)
    given = list(compute_facts or ())
    if len(given) > computes - 1:
        raise InputError('%d --compute-facts files for %d extra computes'
                         % (len(given), computes - 1),
                         key='compute_facts',
                         fix='give at most one file per extra compute '
                             '(--computes N has N-1), or raise --computes')
    extras: list[tuple[int, str, 'Facts']] = []
    for index in range(2, computes + 1):
        if given:
            path = os.path.abspath(given.pop(0))
        else:
            path = default_extra_facts(index, services.FILES)
        if not os.path.isfile(path):
            raise InputError('no such facts file', source=path,
                             fix='give a file from kvmtune host inspect '
                                 '--format json')
        facts = facts_mod.load(path)    # InputError naming the problem
        problem = check_extra_facts(facts)
        if problem:
            raise InputError('facts unusable for a fake compute: %s'
                             % problem, source=path,
                             fix='give a file from kvmtune host inspect '
                                 '--format json of a host with NUMA nodes')
        extras.append((index, path, facts))
    return extras


def check_host_name(name: str, indexes: Iterable[int]) -> None:
    """The first compute takes this machine's host name: an extra compute
    must not have it too."""
    taken = [extra_host(i) for i in indexes
             if extra_host(i) == name]
    if taken:
        raise InputError('this machine is named %s, the host name of an '
                         'extra compute' % name, key='computes',
                         fix='rename the machine or use fewer --computes')


def prepare_extra_computes(lay: config.Layout,
                           extras: Iterable[tuple[int, str, 'Facts']]
                           ) -> list[dict[str, Any]]:
    """Write each extra compute's facts copy and file; its state entry."""
    computes: list[dict[str, Any]] = []
    for index, source, facts in extras:
        shared, dedicated = extra_cpu_sets(facts)
        entry: dict[str, Any] = {
            'index': index, 'host': extra_host(index),
            'driver': 'fake', 'service': extra_service(index),
            'conf': lay.extra_compute_conf(index),
            'facts': lay.extra_compute_facts(index),
            'facts_source': source,
            'state_path': lay.extra_state_path(index),
            'cpu_shared_set': shared, 'cpu_dedicated_set': dedicated,
            'provider': None}
        procs.write_file(entry['facts'], json.dumps(facts, indent=2))
        procs.write_file(entry['conf'], config.render(extra_compute(
            lay, index, shared, dedicated)), 0o600)
        os.makedirs(os.path.join(entry['state_path'], 'lock'),
                    exist_ok=True)
        computes.append(entry)
    return computes


def reload_facts(entry: Mapping[str, Any]) -> bool:
    """Copy an extra compute's facts file (``cloud up --compute-facts``,
    its ``facts_source``) again when it changed since: a restart then
    reports the host's shape as it is now (a test fleet's host after its
    simulated reboot set new huge page pools). The CPU sets of its file
    stay as written. True when the copy changed; InputError, with the
    copy as it was, for facts the fake driver cannot use."""
    from kvmtune import facts as facts_mod

    source, copy = entry.get('facts_source'), entry.get('facts')
    if entry.get('index', 1) == 1 or not source or not copy or \
            not os.path.isfile(source):
        return False
    facts = facts_mod.load(source)
    problem = check_extra_facts(facts)
    if problem:
        raise InputError('facts unusable for a fake compute: %s' % problem,
                         source=source, fix='give a file from kvmtune host '
                                            'inspect --format json')
    return procs.write_if_changed(copy, json.dumps(facts, indent=2))


def _compute_inventory_logged(log: str, offset: int, provider: str) -> bool:
    import re

    with open(log, 'rb') as f:
        f.seek(offset)
        text = f.read().decode(errors='replace')
    return re.search(r'(Inventory has not changed|Updated inventory) for '
                     r'provider %s' % provider, text) is not None


def _find_compute(lay: config.Layout, state: Mapping[str, Any],
                  host_name: str | None) -> dict[str, Any]:
    """The compute entry (procs.computes_of) named ``host_name``, the
    first compute when None."""
    computes = procs.computes_of(state, lay)
    if not computes or not state.get('services'):
        raise CloudError('no cloud is up', source=lay.root,
                         fix='run: kvmtune cloud up')
    if host_name is None:
        return computes[0]
    for entry in computes:
        if entry['host'] == host_name:
            return entry
    raise InputError('no compute host %r in this cloud' % host_name,
                     source=lay.state, key='--host',
                     fix='one of: %s' % ', '.join(
                         str(e['host']) for e in computes))


def totals(lay: config.Layout, token: str, provider: str) -> dict[str, int]:
    """{resource class: total} of a provider."""
    inventory = rest.placement_inventories(
        lay.url('placement'), token, provider)['inventories']
    return {rc: inv['total'] for rc, inv in sorted(inventory.items())}


def statuses(lay: config.Layout, state: Mapping[str, Any]
             ) -> list[dict[str, Any]]:
    """procs.computes_of entries with 'pid', 'running', 'rss_kb' (the
    process tree's VmRSS) and 'inventory' ({class: total} from Placement,
    None when Placement or Keystone does not answer)."""
    pids = state.get('services', {})
    token = None
    try:
        with open(lay.secrets) as f:
            token = services.admin_token(lay, json.load(f))
    except (OSError, ValueError, KeyError, rest.HTTPError):
        pass
    listed = []
    for entry in procs.computes_of(state, lay):
        pid = pids.get(entry['service'])
        running = bool(pid) and procs.alive(pid)
        inventory = None
        if token and entry.get('provider'):
            try:
                inventory = totals(lay, token, entry['provider'])
            except (OSError, ValueError, KeyError, rest.HTTPError):
                pass
        listed.append(dict(entry, pid=pid, running=running,
                           rss_kb=procs.tree_rss_kb(pid) if running else 0,
                           inventory=inventory))
    return listed


def restart(lay: config.Layout, say: procs.Say, host_name: str | None
            ) -> dict[str, Any]:
    """Restart a nova-compute in ``lay``: api.restart_compute()."""
    state = procs.load_state(lay)
    entry = _find_compute(lay, state, host_name)
    service = entry['service']
    pid = state['services'].get(service)
    if not pid:
        raise CloudError('no cloud is up', source=lay.root,
                         fix='run: kvmtune cloud up')
    started = time.monotonic()
    log = lay.log_file(service)
    if reload_facts(entry):
        say('%s: facts of %s read again' % (entry['host'],
                                            entry['facts_source']))
    if procs.alive(pid):
        procs.terminate([pid], stop.STOP_TIMEOUT['nova-compute'])
    offset = os.path.getsize(log)
    services.install_driver(lay)
    if entry['index'] == 1:
        pid = services.start_compute(lay, state)
    else:
        pid = services.start_extra_compute(lay, entry)
    # two computes restarted at once (hosts of one rollout batch) each
    # record their own pid: read the state again under its lock, so the
    # other's new pid is not overwritten (cloud down stops what it lists)
    from kvmtune import fileio
    with fileio.lock(lay.state):
        state = procs.load_state(lay)
        state['services'][service] = pid
        procs.save_state(lay, state)

    def reported() -> bool:
        if not procs.alive(pid):
            raise CloudError('%s exited (bad configuration?)' % service,
                             source=log, fix='read the end of this log')
        return _compute_inventory_logged(log, offset, entry['provider'])
    procs.wait_until(reported, 180, '%s inventory report' % service)
    with open(lay.secrets) as f:
        token = services.admin_token(lay, json.load(f))
    return {'seconds': round(time.monotonic() - started, 1),
            'host': entry['host'],
            'inventory': totals(lay, token, entry['provider'])}
