"""kvmtune.tuning.novaconf.rules: kvmtune's own checks of nova.conf
changes, with or without Nova (the cpu_models rule against Nova:
test_rules_cpu_models.py)."""

import pytest

from kvmtune.tuning.novaconf import rules


def problem(changes):
    with pytest.raises(rules.Problem) as err:
        rules.check(changes)
    return err.value


def test_good_changes_pass():
    assert rules.check({
        'compute': {'cpu_shared_set': '0,4', 'cpu_dedicated_set': '1-3,5-7'},
        'DEFAULT': {'reserved_huge_pages': ['node:0,size:1GB,count:1',
                                            'node:1,size:2048,count:64']},
        'libvirt': {'cpu_mode': 'host-passthrough'},
        'filter_scheduler.x': {'a-b_c': 'anything = fits'},
    }) is None


@pytest.mark.parametrize('changes, section, option, words', [
    ({'bad section': {'a': '1'}}, 'bad section', '',
     "'bad section' is not a section name"),
    ({'': {'a': '1'}}, '', '', "'' is not a section name"),
    ({'compute': {'a.b': '1'}}, 'compute', 'a.b',
     "'a.b' is not an option name"),
    ({'compute': {'a': 1}}, 'compute', 'a', 'value 1 is not a string'),
    ({'compute': {'a': ['x', 2]}}, 'compute', 'a',
     'value 2 is not a string'),
    ({'compute': {'a': 'one\ntwo'}}, 'compute', 'a',
     'a value must fit on one line'),
    ({'compute': {'a': 'nul\0'}}, 'compute', 'a',
     'a value must fit on one line'),
])
def test_names_and_values_that_do_not_fit_a_line(changes, section, option,
                                                 words):
    found = problem(changes)
    assert (found.section, found.option) == (section, option)
    assert words in found.reason and found.fix


@pytest.mark.parametrize('option', ['cpu_shared_set', 'cpu_dedicated_set'])
def test_cpu_sets_in_nova_syntax(option):
    found = problem({'compute': {option: '0-'}})
    assert (found.section, found.option) == ('compute', option)
    assert found.fix == 'give the value in the syntax Nova documents'
    assert problem({'DEFAULT': {'vcpu_pin_set': '3-1'}}).option == \
        'vcpu_pin_set'


def test_overlapping_cpu_sets_are_refused():
    found = problem({'compute': {'cpu_shared_set': '0-2',
                                 'cpu_dedicated_set': '2-5,^3'}})
    assert found.option == 'cpu_dedicated_set'
    assert found.reason.startswith('CPUs [2] are also in cpu_shared_set')


@pytest.mark.parametrize('value, words', [
    ('node:0,size:2048', 'is not node:N,size:S,count:N'),
    ('node:0,size:2048,count:1,extra:1', 'is not node:N,size:S,count:N'),
    ('node:x,size:2048,count:1', 'node and count are numbers'),
    ('node:0,size:2XB,count:1', 'size is KiB or has a unit'),
    ('node:0,size:2048,count:-1', 'node and count are numbers'),
])
def test_reserved_huge_pages_syntax(value, words):
    found = problem({'DEFAULT': {'reserved_huge_pages': ['node:0,size:1GB,'
                                                         'count:1', value]}})
    assert found.option == 'reserved_huge_pages'
    assert words in found.reason and repr(value) in found.reason


@pytest.mark.parametrize('size', ['2048', '2MB', '1GB', '1GiB', '512K',
                                  '2mb'])
def test_reserved_huge_pages_sizes(size):
    rules.check({'DEFAULT': {'reserved_huge_pages':
                             f'node:0,size:{size},count:1'}})


def test_follow_ups_without_cpu_mode_change_nothing():
    assert rules.follow_ups({'libvirt': {'rx_queue_size': '1024'}},
                            lambda s, o: 'Haswell') == ({}, [])


def test_follow_ups_remove_the_files_models_for_another_mode():
    current = {('libvirt', 'cpu_models'): 'Haswell'}
    gone, notices = rules.follow_ups(
        {'libvirt': {'cpu_mode': 'host-model'}},
        lambda s, o: current.get((s, o)))
    assert gone == {'libvirt': {'cpu_models': None}}
    assert notices == ['[libvirt] cpu_models = Haswell removed: '
                       'nova-compute refuses it with cpu_mode = host-model']
