"""The shared -f/-c/-o conventions (kvmtune/cmd/output.py)."""

import argparse
import io
import json

import pytest
import yaml

from kvmtune.cmd import output
from kvmtune.errors import InputError

COLUMNS = ['host', 'check', 'status']
ROWS = [['compute-1', 'isolcpus', 'PASS'],
        ['compute-2', 'pages node 0', 'DRIFT']]


def args(*argv):
    parser = argparse.ArgumentParser()
    output.add_format(parser)
    output.add_output(parser)
    return parser.parse_args(list(argv))


def emitted(*argv, document=None):
    stream = io.StringIO()
    output.emit(args(*argv), COLUMNS, ROWS, document=document,
                stream=stream)
    return stream.getvalue()


def test_table_is_aligned_with_a_header():
    lines = emitted().splitlines()
    assert lines[0].split() == COLUMNS
    assert set(lines[1].replace(' ', '')) == {'-'}
    # Every column starts where its header does.
    start = lines[0].index('status')
    assert lines[2][start:].strip() == 'PASS'
    assert lines[3][start:].strip() == 'DRIFT'


def test_json_and_yaml_are_the_rows_as_mappings():
    want = [dict(zip(COLUMNS, row)) for row in ROWS]
    assert json.loads(emitted('-f', 'json')) == want
    assert yaml.safe_load(emitted('-f', 'yaml')) == want


def test_a_command_document_wins_for_json_and_yaml():
    doc = {'checks': 2, 'drift': 1}
    assert json.loads(emitted('-f', 'json', document=doc)) == doc
    assert yaml.safe_load(emitted('-f', 'yaml', document=doc)) == doc


def test_columns_select_and_order_for_table_and_value():
    assert emitted('-f', 'value', '-c', 'status', '-c', 'host') == (
        'PASS compute-1\nDRIFT compute-2\n')
    assert emitted('-c', 'status').splitlines()[0] == 'status'
    assert json.loads(emitted('-f', 'json', '-c', 'host')) == [
        {'host': 'compute-1'}, {'host': 'compute-2'}]


def test_unknown_column_is_one_line_with_the_choices():
    with pytest.raises(InputError, match=r"no column 'nope'.*host, check"):
        emitted('-c', 'nope')


def test_cells_are_one_line_whatever_a_value_holds():
    stream = io.StringIO()
    output.emit(args('-f', 'value'), ['a', 'b'],
                [['x\ny', [1, 2]], [None, 1.5]], stream=stream)
    assert stream.getvalue() == 'x y 1,2\n 1.5\n'


def test_output_option_and_wrote_line():
    assert args('-o', 'out.prom').output == 'out.prom'
    assert args('--output', 'x').output == 'x'
    stream = io.StringIO()
    output.wrote('a.prom', True, stream=stream)
    output.wrote('b.prom', False, stream=stream)
    assert stream.getvalue() == 'wrote a.prom\nunchanged b.prom\n'


def _renamed_parser():
    parser = argparse.ArgumentParser()
    parser.add_argument('--disk-format', default='raw')
    output.add_renamed(parser, '--format', '--disk-format', 'disk_format')
    output.add_output(parser)
    output.add_renamed(parser, '--json', '-o/--output', 'output')
    return parser


@pytest.mark.parametrize('argv, want, lines', [
    ([], {'disk_format': 'raw', 'output': None}, []),
    (['--disk-format', 'qcow2', '-o', 'a.json'],
     {'disk_format': 'qcow2', 'output': 'a.json'}, []),
    (['--format', 'qcow2', '--json', 'a.json'],
     {'disk_format': 'qcow2', 'output': 'a.json'},
     ['kvmtune: deprecated: --format is now --disk-format; --format goes '
      'in the next release',
      'kvmtune: deprecated: --json is now -o/--output; --json goes in the '
      'next release']),
    # the same value twice is no conflict
    (['--format', 'raw', '--disk-format', 'raw'],
     {'disk_format': 'raw', 'output': None},
     ['kvmtune: deprecated: --format is now --disk-format; --format goes '
      'in the next release']),
])
def test_an_old_spelling_gives_its_value_to_the_new_one(argv, want, lines):
    args = _renamed_parser().parse_args(argv)
    err = io.StringIO()
    output.take_renamed(args, err)
    assert {k: getattr(args, k) for k in want} == want
    assert err.getvalue().splitlines() == lines


def test_an_old_and_a_new_spelling_that_disagree_are_refused():
    args = _renamed_parser().parse_args(['--json', 'a.json', '-o', 'b.json'])
    with pytest.raises(InputError, match='--json and -o/--output both '
                       'given'):
        output.take_renamed(args, io.StringIO())


def test_an_old_spelling_is_not_in_the_help():
    text = _renamed_parser().format_help()
    assert '--disk-format' in text and '--format' not in text.replace(
        '--disk-format', '')
    assert '--json' not in text
