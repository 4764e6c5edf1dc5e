"""The canary's control host: an untuned host of its hardware class,
from real captures' facts."""

import copy
import os

import pytest

from kvmtune.errors import InputError
from kvmtune import facts as host_facts
from kvmtune.rollout import control
from tests import paths

INTEL = host_facts.gather(os.path.join(paths.HOSTS, 'intel-2s-smt-ept-1g'))
AMD = host_facts.gather(os.path.join(paths.HOSTS, 'amd-epyc-npt'))


def _like(facts, memory_mb=None):
    out = copy.deepcopy(facts)
    if memory_mb is not None:
        out['memory']['total_mb'] = memory_mb
    return out


def test_the_class_of_a_real_capture():
    cls = control.hardware_class(INTEL)
    assert cls.cpu_model == 'Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz'
    assert cls.numa_shape == (40, 40)
    assert cls.memory_mb == INTEL['memory']['total_mb']
    assert 'NUMA 40x40 CPUs' in str(cls)


def test_the_control_is_untuned_and_of_the_class():
    fleet = {'c1': INTEL, 'c2': _like(INTEL), 'c3': _like(INTEL),
             'a1': AMD}
    assert control.choose('c1', fleet) == 'c2'
    assert control.choose('c1', fleet, tuned={'c2'}) == 'c3'
    assert control.choose('c2', fleet, tuned={'c1'}) == 'c3'


def test_the_nearest_memory_wins_within_the_tolerance():
    mem = INTEL['memory']['total_mb']
    fleet = {'c1': INTEL, 'c2': _like(INTEL, int(mem * 0.98)),
             'c3': _like(INTEL, mem - 100), 'c4': _like(INTEL, mem * 2)}
    assert control.choose('c1', fleet) == 'c3'
    assert control.choose('c1', fleet, tuned={'c3'}) == 'c2'
    with pytest.raises(InputError):
        control.choose('c1', fleet, tuned={'c2', 'c3'})


def test_no_control_of_the_class_is_one_line():
    fleet = {'c1': INTEL, 'c2': _like(INTEL), 'a1': AMD}
    with pytest.raises(InputError) as err:
        control.choose('c1', fleet, tuned={'c2'})
    line = err.value.line()
    assert line.startswith('c1: no untuned host of its hardware class '
                           '(Intel(R) Xeon(R) Gold 6230')
    assert '\n' not in line


def test_another_numa_shape_is_another_class():
    other = _like(INTEL)
    other['numa']['nodes'] = [{'id': 0, 'cpus': list(range(80))}]
    assert not control.hardware_class(INTEL).same(
        control.hardware_class(other))
    with pytest.raises(InputError):
        control.choose('c1', {'c1': INTEL, 'c2': other})


def test_facts_without_what_a_class_needs():
    bad = _like(INTEL)
    del bad['cpu']['model_name']
    with pytest.raises(InputError, match='cpu.model_name'):
        control.hardware_class(bad, 'c9')
    bad = _like(INTEL)
    bad['memory']['total_mb'] = None
    with pytest.raises(InputError, match='memory.total_mb'):
        control.hardware_class(bad, 'c9')
    with pytest.raises(InputError, match='no facts for the canary'):
        control.choose('c9', {'c1': INTEL})
