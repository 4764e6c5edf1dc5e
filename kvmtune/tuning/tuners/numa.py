"""Give the guest a NUMA topology mapped onto host nodes.

Pinned vCPUs and huge pages already give a guest one NUMA node; a guest
larger than a host node is split with ``hw:numa_nodes`` so that each guest
node's CPUs and memory come from one host node (no remote memory access).
"""

from kvmtune.tuning.tuners import base


class Numa(base.Tuner):
    name = 'numa'
    description = 'Guest NUMA nodes, each on its own host node.'

    PARAMS = (
        base.Param('nodes', type=int, default=1, spec='hw:numa_nodes',
                   help='hw:numa_nodes: guest NUMA nodes (1 or more)'),
    )

    OWNED_EXTRA_SPECS = ('hw:numa_nodes',)
    EXTRA_SPECS = {'hw:numa_nodes': '{nodes}'}
    NOVA_CONF = {
        ('filter_scheduler', 'enabled_filters'):
            base.FromRelease('numa_filters'),
    }

    @base.check('host-numa-nodes')
    def _host_nodes(self) -> base.CheckOutcome:
        # A guest node needs host CPUs and memory from one host node:
        # memory-only nodes (GPU, CXL) do not count (doc/facts.md).
        wanted = self.params['nodes']
        nodes = self.fact('numa.nodes', [])
        have = sum(1 for node in nodes if node.get('cpus') != [])
        memory_only = len(nodes) - have
        also = (f' (and {memory_only} memory-only node(s), which cannot '
                'hold a guest node)' if memory_only else '')
        if wanted <= have:
            return (base.PASS, f'{wanted} guest node(s) fit on {have} host '
                    f'node(s) with CPUs{also}', None)
        return (base.FAIL, f'hw:numa_nodes={wanted} needs {wanted} host '
                f'NUMA nodes with CPUs, this host has {have}{also}',
                f'set nodes: {max(have, 1)} in the profile, or schedule '
                'these flavors onto larger hosts')
