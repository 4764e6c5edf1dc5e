"""kvmtune.facts.schema: every place a facts document breaks the shape
doc/facts.md gives, named by its key (what kvmtune.facts.load refuses)."""

import copy
import os

import pytest

from kvmtune import facts as host_facts
from kvmtune.facts import schema
from tests import paths


@pytest.fixture(scope='module')
def good():
    return host_facts.gather(os.path.join(paths.HOSTS,
                                          'intel-2s-smt-ept-1g'),
                             probe_kvm=False)


def broken(good, change):
    facts = copy.deepcopy(good)
    change(facts)
    return list(schema.problems(facts))


def test_gathered_facts_have_no_problem(good):
    assert list(schema.problems(good)) == []


def test_extra_keys_are_allowed(good):
    assert broken(good, lambda f: f['cpu'].update(new_key=1)) == []


@pytest.mark.parametrize('change, expected', [
    (lambda f: f.pop('hostname'), [('hostname', 'missing')]),
    (lambda f: f['cpu'].update(online='0-3'),
     [('cpu.online', "expected a list, got '0-3'")]),
    (lambda f: f['cpu']['online'].__setitem__(0, True),
     [('cpu.online[0]', 'expected an integer, got True')]),
    (lambda f: f['virt'].update(mechanism='tcg'),
     [('virt.mechanism', "'tcg' is not one of vmx, svm, pvm, null")]),
    (lambda f: f['virt']['modules'].update(kvm={'nested': 1}),
     [('virt.modules.kvm.nested', 'expected a string, got 1')]),
    (lambda f: f['numa']['nodes'][1]['hugepages'][0].update(total='2'),
     [('numa.nodes[1].hugepages[0].total',
       "expected an integer, got '2'")]),
    (lambda f: f.update(memory=[]),
     [('memory', 'expected an object, got []')]),
    (lambda f: f['kernel']['args'].update(isolcpus=None),
     [('kernel.args.isolcpus', 'expected a list, got None')]),
])
def test_each_problem_names_its_key(good, change, expected):
    assert broken(good, change) == expected


def test_optional_values_may_be_null(good):
    def unknown(f):
        f['cpu'].update(flags=None, sockets=None, thread_siblings=None)
        f['virt'].update(nested=None, ept=None, hypervisor_vendor=None)
        f['versions'] = {'libvirt': None, 'qemu': None}
    assert broken(good, unknown) == []


def test_several_problems_are_all_named(good):
    def two(f):
        f.pop('schema')
        f['vhost_net']['module'] = 'maybe'
    assert [key for key, _ in broken(good, two)] == ['schema',
                                                     'vhost_net.module']


def test_a_long_value_is_shortened():
    [(key, problem)] = schema.problems('x' * 100, int, 'k')
    assert key == 'k'
    assert problem == "expected an integer, got '" + 'x' * 36 + '...'
