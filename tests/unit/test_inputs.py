"""kvmtune.inputs, attacked: every hostile file is one InputError line."""

import os

import pytest

from kvmtune.errors import InputError
from kvmtune import inputs
from kvmtune import yamlinput
from tests import devices
from tests import hang


def _one_line(excinfo, *needles):
    text = str(excinfo.value)
    assert '\n' not in text
    for needle in needles:
        assert needle in text, text
    return text


# -- files -------------------------------------------------------------------

def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / 'profile.yaml'
    os.mkfifo(fifo)
    with pytest.raises(InputError,
                       match=r'is a FIFO \(named pipe\), not a '
                             r'regular file') as caught:
        hang.call(lambda: yamlinput.load_yaml(str(fifo)), release=[fifo])
    _one_line(caught, 'FIFO', str(fifo))


def test_character_device_is_refused(tmp_path):
    zero = devices.char_device(tmp_path, 'zero', devices.ZERO)
    # would never end if read: a regression spins, so it runs in a child
    # process killed at the hang bound (tests/hang.py)
    with pytest.raises(InputError, match='character device') as caught:
        hang.call_in_child(lambda: inputs.read_text(zero))
    _one_line(caught, 'character device', zero)


def test_directory_and_empty_path(tmp_path):
    with pytest.raises(InputError, match='directory'):
        inputs.load_json(str(tmp_path))
    with pytest.raises(InputError, match='empty path'):
        inputs.load_json('')


DIRECTORIES = ('/t/h1', '/', '//t/h1', '/t/h1/', '/t/./h1', '/t//h1',
               '/t/h1/.', '/t/..', 't/h1')


@pytest.mark.parametrize('directory', DIRECTORIES)
def test_within_says_what_commonpath_says(directory):
    """A path under a captured tree: the prefix where it is plain,
    commonpath's own answer everywhere (relative against absolute: its
    ValueError)."""
    for path in DIRECTORIES + ('/t/h1/proc/cmdline', '/t/h10', '/t/h1//x',
                               '/t/h1/./x', '/t/h1/../h2', '/t', '/etc',
                               't/h1/x'):
        try:
            expected = os.path.commonpath([path, directory]) == directory
        except ValueError:
            with pytest.raises(ValueError):
                inputs.within(path, directory)
            continue
        assert inputs.within(path, directory) is expected, path


def test_size_bound(tmp_path):
    big = tmp_path / 'big.json'
    big.write_bytes(b' ' * 2048)
    with pytest.raises(InputError, match='more than the 1024'):
        inputs.load_json(str(big), max_bytes=1024)


def test_non_utf8_is_one_line_with_its_line(tmp_path):
    path = tmp_path / 'p.yaml'
    path.write_bytes(b'description: ok\nsource: caf\xe9\n')
    with pytest.raises(InputError,
                       match=r'not UTF-8 text \(byte 27, line 2\)') as caught:
        yamlinput.load_yaml(str(path))
    _one_line(caught, 'not UTF-8', 'line 2', str(path))


def test_nul_bytes(tmp_path):
    path = tmp_path / 'p.yaml'
    path.write_bytes(b'a: 1\n\0\n')
    with pytest.raises(InputError, match='NUL'):
        yamlinput.load_yaml(str(path))


# -- JSON --------------------------------------------------------------------

@pytest.mark.parametrize('number', ['NaN', 'Infinity', '-Infinity', '1e400',
                                    '-1e400'])
def test_json_numbers_that_are_not_numbers(number):
    with pytest.raises(InputError,
                       match=r'^fio\.json: .* (is not a number|is beyond the '
                             r'range of a number) \(fix: write a finite '
                             r'number\)$') as caught:
        inputs.parse_json(f'{{"iops": {number}}}', 'fio.json')
    _one_line(caught, 'fio.json', number)


def test_json_giant_integer():
    with pytest.raises(InputError, match='digits'):
        inputs.parse_json('{"a": ' + '9' * 10000 + '}', 'r.json')


def test_json_deep_nesting_both_ways():
    with pytest.raises(InputError, match='nested too deeply'):
        inputs.parse_json('[' * 200000 + ']' * 200000, 'r.json')
    with pytest.raises(InputError, match='deeper than 64'):
        inputs.parse_json('{"a":' * 100 + '1' + '}' * 100, 'r.json')
    assert inputs.parse_json('[' * 10 + ']' * 10, 'r.json') is not None


def test_json_duplicate_key():
    with pytest.raises(InputError, match="duplicate key 'total'"):
        inputs.parse_json('{"total": 1, "total": 2}', 'facts.json')


def test_json_truncated_and_bytes():
    with pytest.raises(InputError,
                       match=r"^fio: not JSON \(Expecting ',' delimiter at "
                             r"line 1, column 31\)") as caught:
        inputs.parse_json('{"jobs": [{"read": {"iops": 12', 'fio')
    _one_line(caught, 'not JSON', 'fio')
    with pytest.raises(InputError, match='not UTF-8'):
        inputs.parse_json(b'{"a": "\xff"}', 'r.json')
    assert inputs.parse_json(b'{"a": 1.5}', 'r.json') == {'a': 1.5}


def test_load_json_file(tmp_path):
    path = tmp_path / 'r.json'
    path.write_text('{"a": [1, 2.5, "x"]}')
    assert inputs.load_json(str(path)) == {'a': [1, 2.5, 'x']}
    path.write_text('{"a": NaN}')
    with pytest.raises(InputError,
                       match=r'r\.json: NaN is not a number') as caught:
        inputs.load_json(str(path))
    _one_line(caught, str(path), 'NaN')


# -- numbers -----------------------------------------------------------------

@pytest.mark.parametrize('value', [float('nan'), float('inf'),
                                   float('-inf'), 'nan', 'inf', '-inf',
                                   'Infinity', '1e400', 10 ** 400, None,
                                   True, '', '12abc', [1], {}])
def test_number_refuses(value):
    with pytest.raises(InputError,
                       match=r"^fio output: read\.iops: .* is not a "
                             r"(finite )?number") as caught:
        inputs.number(value, source='fio output', key='read.iops')
    _one_line(caught, 'fio output', 'read.iops')


def test_number_negative_and_allowed():
    with pytest.raises(InputError, match='below 0'):
        inputs.number(-0.5, source='s', key='k', unit='ms')
    assert inputs.number(-0.5, source='s', key='k', minimum=None) == -0.5
    assert inputs.number('419.56', source='s', key='k') == 419.56
    assert inputs.number(7, source='s', key='k') == 7.0


@pytest.mark.parametrize('value', ['a\nb', 'a\rb', 'tab\there', '\x1b[31m',
                                   'nul\x00', 'del\x7f', ['ok', 'x\ny']])
def test_plain_text_refuses_control_characters_without_quoting(value):
    with pytest.raises(InputError,
                       match=r'^p\.yaml: k: holds a control character') as e:
        inputs.plain_text(value, source='p.yaml', key='k')
    assert 'x\ny' not in str(e.value) and 'a\nb' not in str(e.value)


@pytest.mark.parametrize('value', ['node:0,size:2048,count:64', 'é ü',
                                   ['a', 'b'], 3, None])
def test_plain_text_passes_one_line_values(value):
    assert inputs.plain_text(value, source='p', key='k') == value


def test_no_validating_pattern_lets_a_trailing_newline_through():
    # '^[a-z]+$' matches "name\n" ($ matches before a final newline): a
    # host name, a job argument or a nova.conf option passed its check
    # with a newline in it. Patterns that check a whole value
    # end in \Z; those read line by line (re.M) are the exception.
    import ast
    from tests import paths

    found = []
    for directory, _, files in os.walk(os.path.join(paths.REPO, 'kvmtune')):
        for name in files:
            if not name.endswith('.py'):
                continue
            path = os.path.join(directory, name)
            with open(path) as handle:
                tree = ast.parse(handle.read())
            for node in ast.walk(tree):
                if not (isinstance(node, ast.Call) and
                        getattr(node.func, 'attr', None) in (
                            'compile', 'match', 'fullmatch') and
                        node.args and isinstance(node.args[0], ast.Constant)
                        and isinstance(node.args[0].value, str)):
                    continue
                pattern = node.args[0].value
                multiline = any('M' in ast.unparse(arg)
                                for arg in node.args[1:])
                if pattern.startswith('^') and pattern.endswith('$') and \
                        not pattern.endswith('\\$') and not multiline:
                    found.append(f'{path}:{node.lineno}: {pattern}')
    assert found == []


def test_standard_input_is_read_within_the_bound(monkeypatch):
    import io

    monkeypatch.setattr('sys.stdin', io.TextIOWrapper(io.BytesIO(b'{}')))
    assert inputs.read_stdin(max_bytes=2) == b'{}'
    monkeypatch.setattr('sys.stdin', io.TextIOWrapper(io.BytesIO(b'{} ')))
    with pytest.raises(InputError) as err:
        inputs.read_stdin(max_bytes=2, source='--plan -')
    assert err.value.line() == ('--plan -: more than the 2 bytes kvmtune '
                                'reads (fix: give the right input)')

    class Terminal(io.TextIOWrapper):
        def isatty(self):
            return True

    monkeypatch.setattr('sys.stdin', Terminal(io.BytesIO(b'')))
    with pytest.raises(InputError) as err:
        inputs.read_stdin()
    assert 'nothing comes on standard input' in err.value.line()
