import pytest

from kvmtune.facts.cpulist import format_cpulist
from kvmtune.facts.cpulist import parse_cpulist


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
