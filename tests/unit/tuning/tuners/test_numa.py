"""Guest NUMA nodes count host nodes with CPUs only."""

import os

import pytest

from kvmtune import facts as host_facts
from kvmtune.tuning.tuners.numa import Numa
from tests import paths

GPU = os.path.join(paths.HOSTS, 'real', 'nvidiagpunumanodes')


@pytest.mark.parametrize('nodes, status', [(2, 'pass'), (3, 'fail')])
def test_memory_only_nodes_cannot_hold_a_guest_node(nodes, status):
    """POWER9: nodes 0 and 8 have CPUs, 250-255 are GPU memory."""
    facts = host_facts.gather(GPU, probe_kvm=False)
    [check] = Numa({'nodes': nodes}, facts).checks()
    assert check.status == status
    assert 'and 6 memory-only node(s)' in check.message
    if status == 'fail':
        assert 'needs 3 host NUMA nodes with CPUs, this host has 2' in (
            check.message)
