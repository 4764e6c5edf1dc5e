"""kvmtune.yamlinput, attacked: duplicate and non-string keys, nesting,
alias bombs, malformed and tagged documents are one InputError line."""

import pytest

from kvmtune.errors import InputError
from kvmtune import yamlinput
from tests import hang
from tests.unit.test_inputs import _one_line


def test_duplicate_top_level_key_is_an_error():
    text = 'tuners:\n  - cpu_pinning\ndescription: x\ntuners:\n  - ept\n'
    with pytest.raises(InputError,
                       match=r"line 4: duplicate key 'tuners' \(first at line "
                             r"1\)") as caught:
        yamlinput.parse_yaml(text, 'p.yaml')
    _one_line(caught, "duplicate key 'tuners'", 'line 4', 'line 1')


def test_duplicate_nested_key_is_an_error():
    text = 'tuners:\n  - name: x\n    params: {a: 1, a: 2}\n'
    with pytest.raises(InputError, match="duplicate key 'a'"):
        yamlinput.parse_yaml(text, 'p.yaml')


@pytest.mark.parametrize('key', ['yes', 'on', '1', '2.5', 'null', '~',
                                 '2026-11-22'])
def test_keys_yaml_reads_as_something_else(key):
    with pytest.raises(InputError,
                       match=r"^p\.yaml: line 1: key '.*' is not a string "
                             r"\(YAML reads it as ") as caught:
        yamlinput.parse_yaml(f'{key}: 1\nname: x\n', 'p.yaml')
    _one_line(caught, 'not a string', f'quote it: "{key}"')


def test_mapping_and_sequence_keys():
    with pytest.raises(InputError, match='a sequence, not a string'):
        yamlinput.parse_yaml('? [a, b]\n: 1\n', 'p.yaml')
    with pytest.raises(InputError, match='a mapping, not a string'):
        yamlinput.parse_yaml('? {a: 1}\n: 1\n', 'p.yaml')


def test_deep_nesting_is_bounded_not_a_recursion_error():
    for text in ('[' * 200000, '- ' * 5000 + 'x', 'a:\n' + ''.join(
            ' ' * i + f'k{i}:\n' for i in range(1, 300))):
        with pytest.raises(InputError, match='nested'):
            yamlinput.parse_yaml(text, 'deep.yaml')


def test_billion_laughs_is_bounded():
    lines = ['a0: &a0 [x, x, x, x, x, x, x, x, x, x]']
    for i in range(1, 10):
        refs = ', '.join([f'*a{i - 1}'] * 10)
        lines.append(f'a{i}: &a{i} [{refs}]')
    # unbounded, it would build 10**10 nodes: a hang, not an answer; how
    # fast it is refused is benchmarks/yaml_bounds.py
    with pytest.raises(InputError, match='expands to more than'):
        hang.call(lambda: yamlinput.parse_yaml('\n'.join(lines) + '\n',
                                               'laughs.yaml'))


def test_recursive_alias_is_refused():
    with pytest.raises(InputError, match='refers to itself'):
        yamlinput.parse_yaml('a: &a [1, *a]\n', 'p.yaml')


def test_merge_keys_and_plain_documents_still_load():
    doc = yamlinput.parse_yaml('base: &b {x: 1}\nmore:\n  <<: *b\n  y: 2\n',
                               'p.yaml')
    assert doc == {'base': {'x': 1}, 'more': {'x': 1, 'y': 2}}
    assert yamlinput.parse_yaml('', 'empty.yaml') is None
    assert yamlinput.parse_yaml('- 1\n- two\n', 'l.yaml') == [1, 'two']


def test_malformed_yaml_names_line_and_column():
    with pytest.raises(InputError,
                       match=r"line 2, column 2: malformed YAML: expected ',' "
                             r"or '\]', but "
                             r"got ':'") as caught:
        yamlinput.parse_yaml('a: [1, 2\nb: 3\n', 'p.yaml')
    _one_line(caught, 'malformed YAML', 'p.yaml', 'line ')


def test_two_documents_are_refused():
    with pytest.raises(InputError, match='malformed YAML'):
        yamlinput.parse_yaml('a: 1\n---\nb: 2\n', 'p.yaml')


def test_python_tags_are_refused():
    with pytest.raises(InputError, match='malformed YAML'):
        yamlinput.parse_yaml('a: !!python/object/apply:os.system [id]\n',
                             'p.yaml')
