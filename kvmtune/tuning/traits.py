"""Placement traits kvmtune derives from host facts (doc/design.md, 5).

Nova itself reports the CPU flags it knows (os-traits ``HW_CPU_X86_VMX``,
``HW_CPU_X86_SVM``, ``HW_CPU_X86_PDPE1GB``); these traits say what only the
host's configuration tells: whether EPT/NPT and nested guests are on, whether
1G pages are actually reserved, whether vhost-net is there.
"""

from kvmtune.facts import arch
from kvmtune.facts.types import Facts

EPT = 'CUSTOM_KVMTUNE_EPT'
NESTED = 'CUSTOM_KVMTUNE_NESTED'
HUGEPAGES_1G = 'CUSTOM_KVMTUNE_HUGEPAGES_1G'
VHOST_NET = 'CUSTOM_KVMTUNE_VHOST_NET'

# Every trait kvmtune owns: "host tag" adds and removes only these.
KVMTUNE_TRAITS = frozenset((EPT, NESTED, HUGEPAGES_1G, VHOST_NET))

PAGE_1G_KB = 1024 * 1024


def _has_1g_pages(facts: Facts) -> bool | None:
    pools = [pool for node in facts['numa']['nodes']
             for pool in node['hugepages']]
    # x86: the pdpe1gb flag; arm64, POWER: the kernel's 1G pool directory
    # (kvmtune.facts.arch)
    return arch.offers_size(facts, PAGE_1G_KB) and any(
        pool['size_kb'] == PAGE_1G_KB and (pool['total'] or 0) > 0
        for pool in pools)


def from_facts(facts: Facts) -> set[str]:
    """Return the set of kvmtune traits this host deserves."""
    checks = {
        EPT: facts['virt']['ept'] is True,
        NESTED: facts['virt']['nested'] is True,
        HUGEPAGES_1G: _has_1g_pages(facts),
        VHOST_NET: facts['vhost_net']['device'],
    }
    return {trait for trait, present in checks.items() if present}
