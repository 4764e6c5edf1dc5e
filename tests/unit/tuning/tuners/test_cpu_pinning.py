"""Plan safety of the CPU split on real machines and on missing facts.

The invariants are checked here on the plan's own output (the nova.conf
values and kernel arguments), independently of the tuner's code: the host
keeps a CPU in every NUMA node that has CPUs, no CPU is both kept and
dedicated, isolcpus is exactly the dedicated CPUs, all of them online.
"""

import copy
import json
import os
import shutil

import pytest

from kvmtune import cli
from kvmtune import facts as host_facts
from kvmtune.facts import arch
from kvmtune.facts.cpulist import parse_cpulist
from kvmtune.tuning import plan as plans
from kvmtune.tuning import profiles
from kvmtune.tuning.tuners.cpu_pinning import CpuPinning
from tests import paths

REAL = os.path.join(paths.HOSTS, 'real')
NAMES = sorted(name for name in os.listdir(REAL)
               if os.path.isfile(os.path.join(REAL, name, 'expected.json')))
PROFILES = ('cpu-pinning', 'pinned-hugepages')
SHARED = ('compute', 'cpu_shared_set')
DEDICATED = ('compute', 'cpu_dedicated_set')


def build(profile, facts):
    return plans.build_plan(
        profiles.load(profile, profiles.search_dirs()), facts)


def values(plan):
    compute = plan.nova_conf.get('compute', {})
    isolated = [arg for arg in plan.kernel_args
                if arg.startswith('isolcpus=')]
    return (compute.get(SHARED[1]), compute.get(DEDICATED[1]), isolated)


def check(plan, name):
    return next(c for c in plan.checks if c.name == name)


def assert_safe_or_withheld(plan, facts):
    shared, dedicated, isolated = values(plan)
    split = check(plan, 'dedicated-cpus')
    # The CPU split's own withholding (the pool may be withheld apart:
    # tests/unit/tuning/tuners/test_hugepages.py).
    if any(item['tuner'] == 'cpu_pinning' for item in plan.withheld):
        assert split.status == 'fail'
        assert (shared, dedicated, isolated) == (None, None, [])
        return 'withheld'
    online = set(facts['cpu']['online'])
    host = set(parse_cpulist(shared))
    guest = set(parse_cpulist(dedicated or ''))
    assert host and not host & guest
    assert host | guest == online
    # A host of one core keeps it: nothing to dedicate, nothing isolated.
    assert isolated == (['isolcpus=' + dedicated] if guest else [])
    for node in facts['numa']['nodes']:
        cpus = set(node['cpus']) & online
        if cpus:
            assert cpus & host, node['id']
    # The host keeps whole cores: a kept CPU's online siblings are kept.
    for group in facts['cpu']['thread_siblings']:
        assert set(group) <= host or not set(group) & host
    return 'split'


@pytest.mark.parametrize('profile', PROFILES)
@pytest.mark.parametrize('name', NAMES)
def test_real_machines_get_a_safe_split_or_none(name, profile):
    facts = host_facts.gather(os.path.join(REAL, name), probe_kvm=False)
    if arch.nova_numa_refusal(facts, 'CPU pinning'):
        # s390x, RISC-V, ia64: Nova pins nothing there (withheld, with
        # that reason); the split is still checked on their topology
        plan = build(profile, facts)
        assert assert_safe_or_withheld(plan, facts) == 'withheld'
        assert 'reports no NUMA topology' in plan.withheld[0]['reason']
        facts['cpu']['arch'] = None
    outcome = assert_safe_or_withheld(build(profile, facts), facts)
    # Only the capture whose node 0 is offline cannot be split: its
    # CPUs 4,6,...,20 are online but in no node directory.
    assert (outcome == 'withheld') == (name == 'offline-cpu0-node0')


def test_nodes_read_from_cpumap_give_the_right_split():
    """128ia64: no node has a cpulist, only the cpumap mask."""
    root = os.path.join(REAL, '128ia64-17n4s2c')
    assert not any(os.path.exists(os.path.join(
        root, f'sys/devices/system/node/node{n}/cpulist'))
        for n in range(17))
    facts = host_facts.gather(root, probe_kvm=False)
    facts['cpu']['arch'] = None     # the split, not Nova's ia64
    shared, dedicated, _ = values(build('cpu-pinning', facts))
    assert shared == ','.join(str(8 * n) for n in range(16))
    assert len(parse_cpulist(dedicated)) == 128 - 16


def bug_report_facts():
    """A POWER capture with nodes without CPUs, 96 online."""
    facts = host_facts.gather(os.path.join(REAL, '256ppc-8n8s4t'),
                              probe_kvm=False)
    facts['cpu']['online'] = list(range(96))
    facts['cpu']['thread_siblings'] = [[n, n + 1, n + 2, n + 3]
                                       for n in range(0, 96, 4)]
    for node in facts['numa']['nodes']:
        node['cpus'] = []
    return facts


@pytest.mark.parametrize('profile', PROFILES)
def test_nodes_without_cpus_never_dedicate_every_cpu(profile):
    plan = build(profile, bug_report_facts())
    assert assert_safe_or_withheld(plan, bug_report_facts()) == 'withheld'
    assert 'in no NUMA node' in check(plan, 'dedicated-cpus').message
    assert plan.withheld[0]['tuner'] == 'cpu_pinning'


def test_unknown_node_cpus_and_unknown_siblings_withhold():
    facts = host_facts.gather(os.path.join(REAL, '256ppc-8n8s4t'),
                              probe_kvm=False)
    unknown_node = copy.deepcopy(facts)
    unknown_node['numa']['nodes'][2]['cpus'] = None
    plan = build('cpu-pinning', unknown_node)
    assert 'CPUs of NUMA node(s) 4 are unknown' in plan.withheld[0][
        'reason']
    facts['cpu']['thread_siblings'] = None
    plan = build('cpu-pinning', facts)
    assert 'thread siblings are unknown' in plan.withheld[0]['reason']
    assert values(plan) == (None, None, [])


@pytest.mark.parametrize('host, guest, isolated, reason', [
    (set(), {0, 1, 2, 3}, set(), 'leaves the host no CPU'),
    ({0, 1}, {1, 2, 3}, set(), 'CPU(s) 1 would be both'),
    ({0}, {1, 2}, {1, 2, 3}, 'CPU(s) 3 would be isolated without'),
    ({0}, {1, 2, 3, 9}, set(), 'CPU(s) 9 are not online'),
    ({0}, {1, 2, 3}, set(), 'every online CPU of NUMA node 1 (2-3)'),
    ({0, 2}, {1, 3}, {1, 3}, None),
])
def test_unsafe_names_each_broken_invariant(host, guest, isolated, reason):
    tuner = CpuPinning(facts={'numa': {'nodes': [
        {'id': 0, 'cpus': [0, 1]}, {'id': 1, 'cpus': [2, 3]},
        {'id': 2, 'cpus': []}]}})
    got = tuner.unsafe({0, 1, 2, 3}, host, guest, isolated)
    assert (got is None) if reason is None else (reason in got), got


@pytest.fixture
def bug_facts_file(tmp_path):
    path = tmp_path / 'compute-1.json'
    path.write_text(json.dumps(bug_report_facts()))
    return path


def test_plan_command_exits_2_with_one_line(bug_facts_file, capsys):
    assert cli.main(['plan', '--profile', 'cpu-pinning', '--facts',
                     str(bug_facts_file)]) == 2
    out, err = capsys.readouterr()
    assert 'FAIL cpu_pinning dedicated-cpus: no CPU split' in out
    assert 'cpu_dedicated_set' not in out.split('checks:')[0]
    [line] = err.splitlines()
    assert line.startswith(f'kvmtune: error: {bug_facts_file}: '
                           'cpu_pinning: cpu_shared_set, cpu_dedicated_set '
                           'and isolcpus withheld: online CPU(s) 0-95')


def test_plan_command_exits_2_on_a_capture_without_node_cpus(tmp_path,
                                                             capsys):
    """A real capture whose node directories lost their CPU sets."""
    root = tmp_path / 'host'
    shutil.copytree(os.path.join(REAL, '256ppc-8n8s4t'), root,
                    symlinks=True)
    for cpumap in root.glob('sys/devices/system/node/node*/cpumap'):
        cpumap.unlink()
    assert cli.main(['plan', '--profile', 'pinned-hugepages', '--root',
                     str(root), '--format', 'json']) == 2
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert 'cpu_dedicated_set' not in data['nova_conf'].get('compute', {})
    assert not any(a.startswith('isolcpus') for a in data['kernel_args'])
    assert data['withheld'][0]['reason'].startswith('cpu_shared_set')
    assert len(err.splitlines()) == 1 and 'unknown' in err


def test_nova_conf_apply_exits_2_and_writes_nothing(bug_facts_file,
                                                    tmp_path, capsys):
    conf = tmp_path / 'nova.conf'
    conf.write_text('[compute]\ncpu_shared_set = 0-3\n')
    before = sorted(os.listdir(tmp_path))
    assert cli.main(['nova-conf', 'apply', '--profile', 'cpu-pinning',
                     '--facts', str(bug_facts_file), '--config',
                     str(conf)]) == 2
    err = capsys.readouterr().err
    assert 'withheld: online CPU(s) 0-95 are in no NUMA node' in err
    assert conf.read_text() == '[compute]\ncpu_shared_set = 0-3\n'
    assert sorted(os.listdir(tmp_path)) == before
