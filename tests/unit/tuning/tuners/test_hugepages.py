"""The huge page tuner on pools of unknown size and memory-only nodes."""

import json
import os

import pytest

from kvmtune import cli
from kvmtune import facts as host_facts
from kvmtune.tuning import plan as plans
from kvmtune.tuning import profiles
from tests import paths

INTEL = os.path.join(paths.HOSTS, 'intel-2s-smt-ept-1g')
GPU = os.path.join(paths.HOSTS, 'real', 'nvidiagpunumanodes')


def build(profile, facts):
    return plans.build_plan(
        profiles.load(profile, profiles.search_dirs()), facts)


@pytest.fixture
def null_pool_facts():
    """doc/facts.md allows "total": null (nr_hugepages unreadable)."""
    facts = host_facts.gather(INTEL, probe_kvm=False)
    for node in facts['numa']['nodes']:
        for pool in node['hugepages']:
            pool['total'] = None
    return facts


@pytest.mark.parametrize('profile', ['hugepages', 'pinned-hugepages'])
def test_pool_of_unknown_size_fails_its_check_and_is_withheld(
        profile, null_pool_facts):
    plan = build(profile, null_pool_facts)
    pool = next(c for c in plan.checks if c.name == 'hugepage-pool')
    assert pool.status == 'fail'
    assert 'nr_hugepages of the' in pool.message
    assert 'pool is unknown on node(s) 0, 1' in pool.message
    assert not any(arg.startswith('hugepages=') for arg in plan.kernel_args)
    assert [w['tuner'] for w in plan.withheld] == ['hugepages']


def test_plan_command_on_a_null_pool_is_one_line_and_exit_2(
        null_pool_facts, tmp_path, capsys):
    path = tmp_path / 'facts.json'
    path.write_text(json.dumps(null_pool_facts))
    assert cli.main(['plan', '--profile', 'hugepages', '--facts',
                     str(path)]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f'kvmtune: error: {path}: hugepages: the huge '
                           'page pool is withheld')


def test_memory_only_nodes_get_no_guest_pages():
    """POWER9 with six GPU memory nodes (250-255, no CPUs)."""
    facts = host_facts.gather(GPU, probe_kvm=False)
    assert [n['id'] for n in facts['numa']['nodes'] if not n['cpus']] == [
        250, 251, 252, 253, 254, 255]
    plan = build('hugepages', facts)
    # its kernel offers 2M and 1G pages (kvmtune.facts.arch): 1G
    assert plan.nova_conf['DEFAULT']['reserved_huge_pages'] == [
        'node:0,size:1GB,count:1', 'node:8,size:1GB,count:1']
    [count] = [a for a in plan.kernel_args if a.startswith('hugepages=')]
    nodes = [item.split(':')[0] for item in
             count.removeprefix('hugepages=').split(',')]
    assert nodes == ['0', '8']
    # The kernel's own reading of it, as kvmtune's facts parse it.
    parsed = host_facts.kernel.parse_args(count)['hugepages'][0]
    assert sorted(parsed['per_node']) == ['0', '8']
    assert parsed['count'] == sum(parsed['per_node'].values())


REAL = os.path.join(paths.HOSTS, 'real')


def _has_memtotal(name):
    path = os.path.join(REAL, name, 'proc', 'meminfo')
    if not os.path.isfile(path):
        return False
    with open(path) as handle:
        return 'MemTotal:' in handle.read()


# The public captures without a MemTotal (their hwloc XML gives none):
# read from the capture itself, not from kvmtune.
NO_MEMTOTAL = sorted(name for name in os.listdir(REAL)
                     if os.path.isdir(os.path.join(REAL, name, 'proc'))
                     and not _has_memtotal(name))


def test_some_real_captures_have_no_memtotal():
    assert len(NO_MEMTOTAL) >= 5, NO_MEMTOTAL


@pytest.mark.parametrize('profile', ['hugepages', 'pinned-hugepages'])
@pytest.mark.parametrize('name', NO_MEMTOTAL)
def test_unknown_memory_never_gives_hugepages_0(name, profile):
    # Before: "hugepages=0" in the kernel arguments and "add ...
    # hugepages=0" as the fix for "no huge pages".
    facts = host_facts.gather(os.path.join(REAL, name), probe_kvm=False)
    assert facts['memory']['total_mb'] is None
    plan = build(profile, facts)
    assert not any(arg.startswith('hugepages=') for arg in plan.kernel_args)
    assert plan.hugepages == []
    sizes = [c for c in plan.checks if c.name == 'page-sizes']
    if sizes and sizes[0].status == 'fail':
        # refused before its size: an architecture without a pool kvmtune
        # may plan (the PS3 shows no page sizes, Nova has no NUMA on
        # RISC-V: tests/unit/facts/test_arch.py)
        assert {'tuner': 'hugepages', 'reason': sizes[0].message} in \
            plan.withheld
        assert 'hugepages=0' not in (sizes[0].fix or '')
        return
    pool = next(c for c in plan.checks if c.name == 'hugepage-pool')
    assert pool.status == 'fail'
    assert 'memory size is unknown' in pool.message
    assert 'hugepages=0' not in (pool.fix or '')
    assert 'MemTotal must be readable' in pool.fix
    assert {w['tuner'] for w in plan.withheld} >= {'hugepages'}


def test_a_pool_that_has_pages_keeps_its_size_without_memtotal():
    facts = host_facts.gather(INTEL, probe_kvm=False)
    facts['memory']['total_mb'] = None
    plan = build('hugepages', facts)
    assert not plan.withheld
    assert all(pool['count'] > 0 for pool in plan.hugepages)


def test_too_little_memory_is_withheld_with_its_own_fix():
    facts = host_facts.gather(INTEL, probe_kvm=False)
    facts['memory']['total_mb'] = 600
    for node in facts['numa']['nodes']:
        node['hugepages'] = [dict(p, total=0, free=0)
                             for p in node['hugepages']]
    plan = build('hugepages', facts)
    pool = next(c for c in plan.checks if c.name == 'hugepage-pool')
    assert 'leaves no room for it' in pool.message
    assert pool.fix.startswith('lower reserved_host_memory_mb')
    assert not any(arg.startswith('hugepages=') for arg in plan.kernel_args)
