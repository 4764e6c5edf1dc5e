"""-f json and -f yaml mean the same on every reading command that needs
no cloud (doc/design.md 9.3): the output parses, and an old spelling still
works with a deprecation line. Commands that read a cloud (verify
--os-cloud, capacity, flavor diff) have their -f json tested against the
test cloud and recorded answers (tests/functional, tests/unit/cmd)."""

import json
import os

import pytest
import yaml

from kvmtune import cli
from tests import paths

HOST = os.path.join(paths.HOSTS, 'intel-2s-smt-ept-1g')
RESULTS = os.path.join(paths.FIXTURES, 'outputs',
                       'rally-disk-sweep-1-at-tcg.json')
READING = {
    'report': ['report', RESULTS],
    'host inspect': ['host', 'inspect', '--root', HOST],
    'plan': ['plan', '--profile', 'cpu-pinning', '--root', HOST],
    'profile list': ['profile', 'list'],
    'profile show': ['profile', 'show', 'cpu-pinning'],
    'verify': ['verify', '--profile', 'cpu-pinning', '--root', HOST,
               '--layer', 'host'],
}


def test_every_reading_command_without_a_cloud_is_listed():
    # a new reading command must join READING (or say why not above)
    reading = {' '.join(words) for words, module, *_ in cli.COMMANDS
               if module in ('host_inspect', 'plan', 'profile_list',
                             'profile_show', 'verify', 'report')}
    assert reading == set(READING)


@pytest.mark.parametrize('name', sorted(READING))
@pytest.mark.parametrize('fmt, load', [('json', json.loads),
                                       ('yaml', yaml.safe_load)])
def test_json_and_yaml_parse(name, fmt, load, capsys):
    rc = cli.main(READING[name] + ['-f', fmt])
    out = capsys.readouterr().out
    assert rc in (0, 1), out        # verify: 1 when the capture drifts
    assert load(out), out


@pytest.mark.parametrize('argv', [['profile', 'list', '--format', 'text'],
                                  ['plan', '--profile', 'cpu-pinning',
                                   '--root', HOST, '--format', 'text']])
def test_an_old_spelling_works_and_says_so(argv, capsys):
    assert cli.main(argv) == 0
    out, err = capsys.readouterr()
    assert out.strip()
    assert err.startswith('kvmtune: deprecated: --format text is now -f '
                          'table'), err


def test_value_and_columns_on_a_table(capsys):
    assert cli.main(['profile', 'list', '-f', 'value', '-c', 'name']) == 0
    names = capsys.readouterr().out.split()
    assert 'cpu-pinning' in names and 'baseline' in names


# Every command that reads and prints (issue 23 item 3) takes -f json.
READING_COMMANDS = {'host inspect', 'plan', 'profile list', 'profile show',
                    'verify', 'capacity', 'flavor diff', 'cloud status',
                    'rally env', 'bench nested', 'report',
                    # writes, and prints what it did as a document
                    # (tests/unit/cmd/test_boot_apply.py parses its JSON)
                    'boot apply'}


def _subparser(parser, words):
    import argparse

    for word in words:
        (action,) = [a for a in parser._actions
                     if isinstance(a, argparse._SubParsersAction)]
        parser = action.choices[word]
    return parser


def test_the_command_table_walk_finds_f_json_on_every_reading_command():
    parser = cli.build_parser()
    has_f = set()
    names = [' '.join(words) for words, *_ in cli.COMMANDS]
    names += [f'cloud {word}' for word in ('status', 'env', 'up', 'down')]
    for name in names:
        sub = _subparser(parser, name.split())
        f = sub._option_string_actions.get('-f')
        if f is not None and 'json' in (f.choices or ()):
            has_f.add(name)
    assert has_f == READING_COMMANDS


def test_every_written_file_is_named_with_o():
    # one spelling for a file or directory a command writes (9.3): each
    # command with --output also takes -o, and none writes with --json
    parser = cli.build_parser()
    for words, *_ in cli.COMMANDS:
        options = _subparser(parser, words)._option_string_actions
        if '--output' in options:
            assert options['-o'] is options['--output'], words
        assert '--json' not in options or \
            options['--json'].help == '==SUPPRESS==', words
