"""Give the guest a NUMA topology mapped onto host nodes.

Pinned vCPUs and huge pages already give a guest one NUMA node; a guest
larger than a host node is split with ``hw:numa_nodes`` so that each guest
node's CPUs and memory come from one host node (no remote memory access).
"""

from kvmtune.tuners import base


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
        ('filter_scheduler', 'enabled_filters'): base.NUMA_FILTERS,
    }

    @base.check('host-numa-nodes')
    def _host_nodes(self):
        wanted = self.params['nodes']
        have = len(self.fact('numa.nodes', []))
        if wanted <= have:
            return (base.PASS, f'{wanted} guest node(s) fit on {have} host '
                    'node(s)', None)
        return (base.FAIL, f'hw:numa_nodes={wanted} needs {wanted} host '
                f'NUMA nodes, this host has {have}',
                f'set nodes: {max(have, 1)} in the profile, or schedule '
                'these flavors onto larger hosts')
