"""A fake compute driver with a real host NUMA topology (kvmtune test cloud).

Nova's stock fake driver reports no NUMA topology, so dedicated-CPU and
huge-page flavors go ACTIVE without anything being pinned or claimed. This
driver keeps the fake driver's in-memory guests but reports a host shape
the way the libvirt driver does, so the scheduler's NUMATopologyFilter and
the compute's resource tracker really fit, pin and claim:

- the shape is a kvmtune facts JSON (``kvmtune host inspect --format
  json``) named by ``$KVMTUNE_FAKE_FACTS``; without it, 2 NUMA nodes x 2
  cores x 2 threads, 8 GiB per node, 2 MiB and 1 GiB page pools with pages;
- ``[compute] cpu_dedicated_set`` becomes PCPU inventory and the cells'
  ``pcpuset``, ``cpu_shared_set`` (else every online CPU when no dedicated
  set is given, else none) becomes VCPU inventory and ``cpuset``;
- the node UUID is the persistent local node identity
  (``$state_path/compute_id``), so nova-compute restarts keep their
  compute node and resource provider.

Installed by ``cloud install`` as ``nova/virt/kvmtune_numa_fake.py``;
select it with ``compute_driver = kvmtune_numa_fake.KvmtuneNUMAFakeDriver``.
"""

import collections
import json
import os
from typing import Any

import os_resource_classes as orc
from oslo_serialization import jsonutils
from oslo_utils import units

import nova.conf
from nova import exception
from nova import objects
from nova.virt import fake
from nova.virt import hardware
from nova.virt import node

CONF = nova.conf.CONF

FACTS_ENV = 'KVMTUNE_FAKE_FACTS'
DEFAULT_DISK_GB = 200


def _default_shape() -> dict[str, Any]:
    """2 nodes x 2 cores x 2 threads, siblings numbered as Linux does."""
    nodes = []
    for node_id in (0, 1):
        first = node_id * 2
        cpus = [first, first + 1, first + 4, first + 5]
        nodes.append({
            'id': node_id, 'cpus': cpus, 'memory_mb': 8192,
            'hugepages': [
                {'size_kb': 2048, 'total': 1024, 'free': 1024},
                {'size_kb': units.Mi, 'total': 2, 'free': 2}]})
    return {
        'cpu': {'online': list(range(8)), 'sockets': 2,
                'cores_per_socket': 2, 'threads_per_core': 2,
                'thread_siblings': [[c, c + 4] for c in range(4)]},
        'numa': {'nodes': nodes}}


def load_shape(path: str | None = None) -> dict[str, Any]:
    path = path or os.environ.get(FACTS_ENV)
    if not path:
        return _default_shape()
    with open(path) as f:
        facts: dict[str, Any] = json.load(f)
    if not facts.get('numa', {}).get('nodes'):
        raise exception.InvalidConfiguration(
            '%s: facts have no numa.nodes' % path)
    return facts


class KvmtuneNUMAFakeDriver(fake.FakeDriver):
    capabilities = dict(fake.FakeDriver.capabilities, supports_pcpus=True)

    def __init__(self, virtapi: Any, read_only: bool = False) -> None:
        super().__init__(virtapi, read_only)
        self._shape = load_shape()
        nodes = self._shape['numa']['nodes']
        self.memory_mb = sum(n['memory_mb'] for n in nodes)
        self.local_gb = DEFAULT_DISK_GB
        self.vcpus = len(self._shared_cpus())
        self.resources = fake.Resources(
            vcpus=self.vcpus, memory_mb=self.memory_mb,
            local_gb=self.local_gb)

    def init_host(self, host: str) -> None:
        super().init_host(host)
        # Like the libvirt driver, refuse to start on CPU sets this host
        # does not have, rather than run without inventory.
        self._dedicated_cpus()
        self._shared_cpus()

    # CPU sets, as nova.virt.libvirt.driver computes them.
    def _online_cpus(self) -> set[int]:
        online = self._shape['cpu'].get('online')
        if online:
            return set(online)
        return {c for n in self._shape['numa']['nodes'] for c in n['cpus']}

    def _dedicated_cpus(self) -> set[int]:
        dedicated: set[int] = hardware.get_cpu_dedicated_set() or set()
        if not dedicated <= self._online_cpus():
            raise exception.Invalid(
                "Invalid '[compute] cpu_dedicated_set': %s not in online "
                "CPUs %s" % (sorted(dedicated), sorted(self._online_cpus())))
        return dedicated

    def _shared_cpus(self) -> set[int]:
        if CONF.compute.cpu_shared_set:
            shared: set[int] = hardware.get_cpu_shared_set()
            if not shared <= self._online_cpus():
                raise exception.Invalid(
                    "Invalid '[compute] cpu_shared_set': %s not in online "
                    "CPUs %s" % (sorted(shared),
                                 sorted(self._online_cpus())))
            return shared
        if CONF.compute.cpu_dedicated_set:
            return set()
        return self._online_cpus()

    def _siblings(self, cpus: set[int]) -> list[set[int]]:
        groups = self._shape['cpu'].get('thread_siblings') or []
        siblings = [set(g) & cpus for g in groups]
        grouped = set().union(*siblings) if siblings else set()
        siblings += [{c} for c in cpus - grouped]
        return sorted((s for s in siblings if s), key=min)

    def _host_numa_topology(self) -> Any:
        shared, dedicated = self._shared_cpus(), self._dedicated_cpus()
        cells = []
        for n in self._shape['numa']['nodes']:
            cpus = set(n['cpus']) & (shared | dedicated)
            huge = [p for p in n.get('hugepages', []) if p['total']]
            huge_kb = sum(p['size_kb'] * p['total'] for p in huge)
            small_pages = (n['memory_mb'] * units.Ki - huge_kb) // 4
            mempages = [objects.NUMAPagesTopology(
                size_kb=4, total=small_pages, used=0, reserved=0)]
            mempages += [objects.NUMAPagesTopology(
                size_kb=p['size_kb'], total=p['total'], used=0, reserved=0)
                for p in huge]
            cells.append(objects.NUMACell(
                id=n['id'], socket=n.get('socket', n['id']),
                cpuset=set(n['cpus']) & shared,
                pcpuset=set(n['cpus']) & dedicated,
                memory=n['memory_mb'], cpu_usage=0, memory_usage=0,
                pinned_cpus=set(), siblings=self._siblings(cpus),
                mempages=mempages,
                network_metadata=objects.NetworkMetadata(
                    physnets=set(), tunneled=False)))
        return objects.NUMATopology(cells=cells)

    def _cpu_info(self) -> 'collections.OrderedDict[str, Any]':
        cpu = self._shape['cpu']
        return collections.OrderedDict([
            ('arch', 'x86_64'), ('model', 'kvmtune-fake'),
            ('vendor', cpu.get('vendor', 'kvmtune')),
            ('features', sorted(cpu.get('flags', []))),
            ('topology', {'sockets': cpu.get('sockets', 1),
                          'cores': cpu.get('cores_per_socket', 1),
                          'threads': cpu.get('threads_per_core', 1)})])

    def get_available_resource(self, nodename: str) -> dict[str, Any]:
        status: dict[str, Any] = super().get_available_resource(nodename)
        if not status:
            return status
        status['vcpus'] = len(self._shared_cpus())
        status['uuid'] = node.get_local_node_uuid()
        status['cpu_info'] = jsonutils.dumps(self._cpu_info())
        status['numa_topology'] = self._host_numa_topology()._to_json()
        return status

    def get_nodenames_by_uuid(self, refresh: bool = False) -> dict[str, str]:
        return {node.get_local_node_uuid(): n
                for n in self.get_available_nodes()}

    def update_provider_tree(self, provider_tree: Any, nodename: str,
                             allocations: Any = None) -> None:
        inventory = provider_tree.data(nodename).inventory
        ratios = self._get_allocation_ratios(inventory)
        vcpus = len(self._shared_cpus())
        pcpus = len(self._dedicated_cpus())
        amounts = {orc.MEMORY_MB: (self.memory_mb,
                                   CONF.reserved_host_memory_mb),
                   orc.DISK_GB: (self.local_gb, self.
                                 _get_reserved_host_disk_gb_from_config()),
                   orc.VCPU: (vcpus, CONF.reserved_host_cpus),
                   orc.PCPU: (pcpus, 0)}
        result: dict[str, dict[str, Any]] = {}
        # Placement refuses inventory with total=0: report only what exists.
        for rc, (total, reserved) in amounts.items():
            if total:
                result[rc] = {
                    'total': total, 'min_unit': 1, 'max_unit': total,
                    'step_size': 1, 'reserved': reserved,
                    # Dedicated CPUs are never overcommitted.
                    'allocation_ratio': 1 if rc == orc.PCPU else ratios[rc]}
        provider_tree.update_inventory(nodename, result)
