"""The documentation's generated CLI reference (doc/source/_ext): every
command kvmtune registers has its section, read from the parser that
``--help`` prints, so the reference cannot leave a command out."""

import argparse
import importlib.util
import os
import re

from kvmtune import cli
from tests import paths
from tests import plugins


def _cli_commands():
    path = os.path.join(paths.REPO, 'doc', 'source', '_ext',
                        'cli_commands.py')
    spec = importlib.util.spec_from_file_location('cli_commands', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_registered_command_has_a_section():
    walker = _cli_commands()
    registered = [words for words, *_ in cli.COMMANDS]
    sections, missing = walker.reference(cli.build_parser(), registered)
    shown = [words for words, _ in sections]
    assert missing == []
    assert set(registered) <= set(shown)
    # the sub-commands a command's own module adds are shown as well
    assert ('cloud', 'up') in shown
    # and nothing but the registered commands and what is below them
    assert all(any(w[:len(r)] == r for r in registered) for w in shown)


def test_a_command_the_parser_lacks_is_missing():
    walker = _cli_commands()
    registered = [words for words, *_ in cli.COMMANDS]
    sections, missing = walker.reference(
        cli.build_parser(), registered + [('no', 'such')])
    assert missing == [('no', 'such')]


def test_the_reference_shows_the_commands_plugins_add(tmp_path,
                                                      monkeypatch):
    """kvmtune_cli.py renders cli.registered(plugins=True): a command an
    installed plugin adds has its section, with its options."""
    walker = _cli_commands()
    plugins.install(tmp_path, monkeypatch,
                    {'disk_wipe': '{module}:command'})
    commands = cli.registered(plugins=True)
    assert ('disk', 'wipe') in [c.words for c in commands]
    sections, missing = walker.reference(
        cli.build_parser(commands), [c.words for c in commands])
    assert missing == []
    wipe = dict(sections)[('disk', 'wipe')]
    assert walker.options(wipe)[-1] == (['--disk'], 'DISK', '')
    # built-ins only (the default) has no section for it
    sections, _ = walker.reference(
        cli.build_parser(), [c.words for c in cli.registered()])
    assert ('disk', 'wipe') not in dict(sections)


def test_options_are_the_help_text():
    walker = _cli_commands()
    parser = argparse.ArgumentParser(prog='x')
    parser.add_argument('--runtime', type=int, default=10,
                        metavar='SECONDS', help='seconds (default: '
                        '%(default)s)')
    parser.add_argument('path', help='a file')
    parser.add_argument('--quiet', action='store_true', help='say less')
    assert walker.options(parser) == [
        (['--runtime'], 'SECONDS', 'seconds (default: 10)'),
        (['path'], '', 'a file'),
        (['--quiet'], '', 'say less'),
    ]


# --- the command lines README and the guides show ----------------------

def _pages():
    pages = [os.path.join(paths.REPO, 'README.md')]
    for top, _, files in os.walk(os.path.join(paths.REPO, 'doc', 'source')):
        pages += [os.path.join(top, f) for f in files if f.endswith('.md')]
    return sorted(pages)


def _shell_lines(path):
    """The command lines of a page's ```sh blocks, continuations joined,
    comments dropped."""
    with open(path) as f:
        text = f.read()
    for block in re.findall(r'^```sh\n(.*?)^```', text, re.S | re.M):
        for line in block.replace('\\\n', ' ').split('\n'):
            line = re.sub(r'(^|\s)#.*', '', line).strip()
            if line:
                yield line


def _kvmtune_commands(line):
    """The tokens after each ``kvmtune`` the line runs (at its start, in
    ``$(...)``, after ``;`` or ``&&``), up to the end of that command."""
    for match in re.finditer(r'(^|\$\(|;|&&)\s*kvmtune\b', line):
        rest = line[match.end():]
        ends = [';', '&&'] + ([')'] if match.group(1) == '$(' else [])
        cut = min([rest.index(e) for e in ends if e in rest] or [len(rest)])
        yield rest[:cut].split()


def _check(parser, tokens, walker, where):
    words = []
    rest = list(tokens)
    while rest:
        subs = walker.subcommands(parser)
        alternatives = rest[0].split('|')
        if not subs or not all(a in subs for a in alternatives):
            break
        words.append(rest.pop(0))
        parser = subs[alternatives[0]]
    assert not walker.subcommands(parser), (where, words, 'no command')
    known = set(parser._option_string_actions)
    for token in rest:
        for option in re.findall(r'(?<![\w-])(--?[a-zA-Z][\w-]*)', token):
            assert option in known, (where, ' '.join(words), option)
    return words


def test_every_kvmtune_line_of_readme_and_the_guides_parses():
    """README's command blocks run as written: every ``kvmtune`` line of
    README.md and of the guides' Markdown pages names a command the CLI
    has, and only options that command takes."""
    walker = _cli_commands()
    parser = cli.build_parser()
    seen = 0
    for page in _pages():
        for line in _shell_lines(page):
            for tokens in _kvmtune_commands(line):
                where = f'{os.path.relpath(page, paths.REPO)}: {line}'
                top = [t for t in tokens if t in ('--config-file', '--debug')]
                tokens = [t for t in tokens if t not in top]
                _check(parser, tokens, walker, where)
                seen += 1
    assert seen > 20


def test_readme_runs_the_two_commands_from_the_clone():
    with open(os.path.join(paths.REPO, 'README.md')) as f:
        text = f.read()
    for tool in ('tools/main-job', 'tools/run-tests'):
        assert f'\n{tool} ' in text, tool
        assert os.access(os.path.join(paths.REPO, tool), os.X_OK), tool


def test_readme_stays_a_front_page():
    # README says what kvmtune is, how to install it, the two
    # commands, measuring and links; the manual is doc/source.
    with open(os.path.join(paths.REPO, 'README.md')) as f:
        lines = f.read().splitlines()
    assert len(lines) <= 120, f'README.md has {len(lines)} lines'
