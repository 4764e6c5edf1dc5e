import pytest

from kvmtune.facts.cpulist import format_cpulist
from kvmtune.facts.cpulist import MAX_CPUS
from kvmtune.facts.cpulist import parse_cpu_spec
from kvmtune.facts.cpulist import parse_cpulist
from kvmtune.facts.cpulist import parse_cpumask


@pytest.mark.parametrize('text, cpus', [
    ('0-3,8,10-11', [0, 1, 2, 3, 8, 10, 11]),
    ('5', [5]),
    ('', []),
    ('  0-1\n', [0, 1]),
    ('3,1,2,1', [1, 2, 3]),
    ('0-15:2/4', [0, 1, 4, 5, 8, 9, 12, 13]),
])
def test_parse(text, cpus):
    assert parse_cpulist(text) == cpus


def test_parse_last_cpu_n():
    assert parse_cpulist('2-N', last_cpu=5) == [2, 3, 4, 5]


@pytest.mark.parametrize('text', ['a', '3-1', '1-', '^2', '0-7:0/4',
                                  '0-7:5/4', '2-N'])
def test_parse_rejects(text):
    with pytest.raises(ValueError, match='CPU list item'):
        parse_cpulist(text)


@pytest.mark.parametrize('cpus, text', [
    ([0, 1, 2, 3, 8, 10, 11], '0-3,8,10-11'),
    ([], ''),
    ([7], '7'),
    ([41, 40, 1, 0], '0-1,40-41'),
])
def test_format(cpus, text):
    assert format_cpulist(cpus) == text


def test_round_trip():
    cpus = [0, 2, 3, 4, 9, 40, 41, 42, 79]
    assert parse_cpulist(format_cpulist(cpus)) == cpus


@pytest.mark.parametrize('text, cpus', [
    ('0-3\n\x00', [0, 1, 2, 3]),      # a 5.15 kernel's sysfs lists
    ('0\n\x00', [0]),
    ('\x00', []),
    (' 4,6 \t\n', [4, 6]),
])
def test_parse_ignores_trailing_nul_and_whitespace(text, cpus):
    assert parse_cpulist(text) == cpus


@pytest.mark.parametrize('text', ['0-', '3-1', '0,,1', '2-4294967295',
                                  '8192', '0-99999999999999999999'])
def test_parse_rejects_open_reversed_empty_and_huge(text):
    with pytest.raises(ValueError, match='not a CPU list item'):
        parse_cpulist(text)


def test_parse_bounds_cpu_numbers_before_building_a_set():
    with pytest.raises(ValueError, match='stop at 8191'):
        parse_cpulist('2-4294967295')
    assert parse_cpulist('8191') == [MAX_CPUS - 1]


@pytest.mark.parametrize('text, cpus', [
    ('00000000,000000ff\n', list(range(8))),
    ('80000000,00000001\n\x00', [0, 63]),
    ('0', []),
    ('f0', [4, 5, 6, 7]),
])
def test_parse_cpumask(text, cpus):
    assert parse_cpumask(text) == cpus


@pytest.mark.parametrize('text', ['', 'xyz', '0,,1', '123456789',
                                  ','.join(['1'] + ['0'] * 300)])
def test_parse_cpumask_rejects(text):
    with pytest.raises(ValueError, match='CPU'):
        parse_cpumask(text)


@pytest.mark.parametrize('text, cpus', [
    ('0-7,^3,12', {0, 1, 2, 4, 5, 6, 7, 12}),
    ('0, 2 ,', {0, 2}),
    ('^0,0-1', {1}),
])
def test_parse_cpu_spec_is_novas_syntax(text, cpus):
    assert parse_cpu_spec(text) == cpus


@pytest.mark.parametrize('text', ['0-', '3-1', 'a', '0-3:1/2',
                                  '0-99999999999'])
def test_parse_cpu_spec_rejects(text):
    with pytest.raises(ValueError, match=r'is not N, N-M, \^N or \^N-M'):
        parse_cpu_spec(text)
