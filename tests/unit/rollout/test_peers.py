"""Peer outliers: a synthetic fleet of one real capture's class, one
slow host and one on the powersave governor: both flagged, nothing
else, each with the facts it differs in."""

import copy
import os
import random

from kvmtune import facts as host_facts
from kvmtune.rollout import peers
from tests import paths

INTEL = host_facts.gather(os.path.join(paths.HOSTS, 'intel-2s-smt-ept-1g'))
AMD = host_facts.gather(os.path.join(paths.HOSTS, 'amd-epyc-npt'))


def fleet(n=12):
    rng = random.Random(48)
    facts, medians = {}, {}
    for i in range(n):
        host = f'c{i:02d}'
        f = copy.deepcopy(INTEL)
        f['cpu']['governor'] = 'performance'
        f['cpu']['microcode'] = '0x5003604'
        facts[host] = f
        medians[host] = {'fio-randread/iops': rng.gauss(50000, 500),
                         'iperf3/gbit_s': rng.gauss(9.4, 0.05)}
    if n > 7:
        # slow for no reason the facts show
        medians['c03']['fio-randread/iops'] = 31000
        # on powersave, with an extra kernel argument: slower network
        facts['c07']['cpu']['governor'] = 'powersave'
        facts['c07']['kernel']['cmdline'] += ' intel_pstate=passive'
        medians['c07']['iperf3/gbit_s'] = 7.1
    # another class, with its own figures: not compared with the others
    for i in range(3):
        facts[f'a{i}'] = copy.deepcopy(AMD)
        medians[f'a{i}'] = {'fio-randread/iops': 20000.0 + i}
    return medians, facts


def test_the_slow_host_and_the_powersave_host_and_nothing_else():
    medians, facts = fleet()
    found = peers.outliers(medians, facts)
    assert sorted((o.host, o.metric) for o in found) == [
        ('c03', 'fio-randread/iops'), ('c07', 'iperf3/gbit_s')]
    by_host = {o.host: o for o in found}
    assert by_host['c03'].differs == {}
    assert by_host['c03'].z < -3.5
    assert by_host['c07'].differs == {
        'governor': ('powersave', 'performance'),
        'kernel arguments': ('intel_pstate=passive', '-')}
    assert by_host['c07'].peer_median > 9
    assert by_host['c07'].to_dict()['differs']['governor'] == [
        'powersave', 'performance']


def test_a_fleet_without_outliers_names_none():
    medians, facts = fleet()
    medians['c03']['fio-randread/iops'] = 50100
    medians['c07']['iperf3/gbit_s'] = 9.41
    assert peers.outliers(medians, facts) == []


def test_a_class_too_small_is_not_judged():
    medians, facts = fleet(3)
    medians['c01'] = {'fio-randread/iops': 1.0}
    assert peers.outliers(medians, facts) == []


def test_the_classes():
    _, facts = fleet(5)
    groups = peers.classes(facts)
    assert [hosts for _, hosts in groups] == [
        ['a0', 'a1', 'a2'], ['c00', 'c01', 'c02', 'c03', 'c04']]


def test_comparable_facts_leave_out_what_is_not_there():
    got = peers.comparable_facts(INTEL)
    assert 'governor' not in got and 'microcode' not in got
    assert got['NUMA shape'] == '40x40'
    assert 'BOOT_IMAGE' not in got['kernel arguments']
    assert 'isolcpus' in got['kernel arguments']
