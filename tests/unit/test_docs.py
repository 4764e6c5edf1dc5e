"""The documentation's generated CLI reference (doc/source/_ext): every
command kvmtune registers has its section, read from the parser that
``--help`` prints, so the reference cannot leave a command out; every
command line of README, the user and admin guides and each --help parses
and, where it can run here, runs on a fixture host with its documented
exit status; the exit-status tables are the codes each command returns."""

import argparse
import contextlib
import dataclasses
import importlib.util
import io
import json
import os
import re
import shlex
import shutil
import textwrap

from kvmtune import cli
from kvmtune import errors
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


# --- every command line the docs and --help show, parsed and run -------
#
# README.md, the user and admin guides (Markdown and reStructuredText) and
# each command's --help text (its description: the examples) show kvmtune
# command lines. Each is checked as written (doc/source/contributor/
# documentation.rst, "Examples that run"):
#
# - an example in a code block or --help: argparse parses it (a synopsis's
#   [optional] parts and a|b alternatives give one line per choice), and
#   when its command reads only a host tree or kvmtune's own files
#   (RUNNABLE) it runs, on a copy of a fixture host (tests/fixtures/hosts,
#   with RHEL 9 boot files: tests/hosttrees.py) and files made from it in a
#   temporary directory, and must exit as documented: 0, or the N of an
#   ``# exit N`` comment on the line; a command that needs a cloud, Rally,
#   Ansible, a guest or root (pages apply writes /sys) is parsed only;
# - a command named inline (`kvmtune boot apply --dry-run` in a sentence):
#   its words are a command and its options are that command's.
#
# Every status must be one EXIT_CODES (the CLI reference's table) gives
# the command. A line that is no command at all is in ALLOWED with why.

# The commands run for real: they read a host tree (never this host's
# /dev, /sys or /etc: every line gets --root or --facts and its files
# under tmp_path) or kvmtune's own files.
RUNNABLE = {('host', 'inspect'), ('profile', 'list'), ('profile', 'show'),
            ('profile', 'validate'), ('plan',), ('nova-conf', 'apply'),
            ('boot', 'apply'), ('export',), ('rally', 'task-path'),
            ('monitoring', 'rules-path')}
# those that read a host: a line without --root, --facts or --plan is run
# with --root on the fixture tree (the line as written reads this host)
READS_HOST = {('host', 'inspect'), ('plan',), ('nova-conf', 'apply'),
              ('boot', 'apply'), ('export',)}
# The distribution the fixture tree boots (hosttrees.CAPTURES: the Intel
# 2-socket capture with EPT and 1G pages)
DISTRO = 'rhel-9-bls'
# The profile a placeholder (--profile P) stands for
PROFILE = 'pinned-hugepages-ept'
# Lines that are no command line, by their text: why
ALLOWED = {
    'kvmtune rollout <run id>: <profile>':
        'the disabled reason the rollout gives nova-compute, not a command',
}
# Run never, only parsed: a line with --prometheus (it writes a
# node_exporter textfile), with ``--plan -`` (it reads standard input),
# and one with --versions on this host (it asks this host's libvirtd and
# QEMU; with --root or --facts it runs, and must refuse as documented).
_PLACEHOLDER = re.compile(r'^[A-Z][A-Z0-9_]*$')
_SEPARATORS = (';', '&&', '||', '|')


@dataclasses.dataclass
class DocLine:
    """A command line a doc shows: where, the text (continuations joined,
    the comment cut), the documented exit status, and whether it is only
    named inline (words and options checked, not parsed)."""

    where: str
    text: str
    exit: int = 0
    mention: bool = False


def _doc_pages():
    pages = [os.path.join(paths.REPO, 'README.md')]
    top = os.path.join(paths.REPO, 'doc', 'source')
    for folder, _, files in os.walk(top):
        for name in files:
            rst = name.endswith('.rst') and os.path.basename(folder) in (
                'user', 'admin')
            if name.endswith('.md') or rst:
                pages.append(os.path.join(folder, name))
    return sorted(pages)


def _cut_comment(line):
    """(line without its ``# ...`` comment, the N of ``# exit N``)."""
    found = re.search(r'(^|\s)#(.*)$', line)
    if not found:
        return line.strip(), 0
    status = re.search(r'\bexit (\d+)\b', found.group(2))
    return line[:found.start()].strip(), int(status.group(1)) if status \
        else 0


def _block_lines(language, block):
    """The lines of a code block that run kvmtune, with their exit."""
    if language == 'text':      # what a command printed
        return
    for line in re.sub(r'\s*\\\n\s*', ' ', block).split('\n'):
        if language == 'ini':
            if not line.startswith('ExecStart='):
                continue
            line = line.partition('=')[2]
        line, status = _cut_comment(line)
        # /usr/local/bin/kvmtune, and cron's "... root kvmtune ..."
        line = re.sub(r'(^|\s)/\S*/kvmtune\s', r'\1kvmtune ', line)
        if language == '':
            found = re.search(r'(^|\s)kvmtune\s', line)
            line = line[found.start():].strip() if found else ''
        if re.search(r'(^|\$\(|[;&|]\s*)kvmtune\s', line):
            yield line, status


def doc_lines(path):
    """Every kvmtune command line of one page (Markdown or rST)."""
    with open(path) as f:
        text = f.read()
    rel = os.path.relpath(path, paths.REPO)
    if path.endswith('.md'):
        blocks = re.findall(r'^```([\w-]*)\n(.*?)^```', text, re.S | re.M)
        spans = re.findall(r'(?<!`)`(kvmtune [^`]+)`(?!`)', text)
    else:
        blocks = [(lang, textwrap.dedent(body)) for _, lang, body in
                  re.findall(r'^(\s*)\.\. code-block::\s*(\w+)\n'
                             r'((?:\1   .*\n|[ \t]*\n)+)', text, re.M)]
        spans = re.findall(r'``(kvmtune [^`]+)``', text)
    out = []
    for language, block in blocks:
        for line, status in _block_lines(language, block):
            out.append(DocLine(rel, line, status))
    for span in spans:
        out.append(DocLine(rel, ' '.join(span.split()), mention=True))
    return out


def epilog_lines(parser):
    """The example lines of every command's --help text: its indented
    lines that run kvmtune (two spaces after the command start a
    comment: the tables of ``kvmtune cloud --help``), and the commands
    its sentences name in backquotes."""
    out = []
    for words, sub in _cli_commands().walk(parser):
        where = ' '.join(('kvmtune',) + words + ('--help',))
        text = re.sub(r'\s*\\\n\s*', ' ', sub.description or '')
        for line in text.split('\n'):
            if not line.startswith(' '):
                continue
            line = line.strip()
            line = re.split(r'(?<=\S)\s{2,}(?=\S)', line)[0] \
                if line.startswith('kvmtune ') else line
            for found, status in _block_lines('sh', line):
                out.append(DocLine(where, found, status))
        # and the commands its sentences name
        flat = ' '.join(text.split())
        for span in re.findall(r'``(kvmtune [^`]+)``|(?<!`)`(kvmtune '
                               r'[^`]+)`(?!`)', flat):
            out.append(DocLine(where, span[0] or span[1], mention=True))
    return out


def _tokens(text):
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def commands(text):
    """The token lists of each kvmtune command of a line: split at ``;``
    ``&&`` ``|`` outside [optional] groups, ``$(...)`` taken apart, a
    redirection and what follows it dropped."""
    found = []
    for token in _tokens(text):
        for inner in re.findall(r'\$\((kvmtune [^)]*)\)', token):
            found.extend(commands(inner))
    depth, runs = 0, [[]]
    for token in _tokens(text):
        depth += token.count('[') - token.count(']')
        if depth <= 0 and token in _SEPARATORS:
            runs.append([])
            continue
        runs[-1].append(token)
    for run in runs:
        if run and run[0] == 'kvmtune':
            kept = []
            for token in run[1:]:
                if re.match(r'^\d?>', token):
                    break
                kept.append(token)
            found.append(kept)
    return found


def _group(tokens, i=0):
    """Parse [ ] groups: (alternatives: a list of token lists, next i)."""
    alternatives, current = [], []
    while i < len(tokens):
        token = tokens[i]
        if token == '[':
            inner, i = _group(tokens, i + 1)
            current.append(inner)
            continue
        if token == ']':
            alternatives.append(current)
            return alternatives, i + 1
        if token == '|':
            alternatives.append(current)
            current = []
        else:
            current.append(token)
        i += 1
    alternatives.append(current)
    return alternatives, i


def _expand(items):
    """Every line a parsed synopsis stands for: each [group] left out and
    each of its alternatives taken, a|b in a word for each of a and b."""
    lines = [[]]
    for item in items:
        if isinstance(item, list):      # an optional group's alternatives
            choices = [[]]
            for alternative in item:
                choices += _expand(alternative)
        elif '|' in item and not item.startswith('-'):
            choices = [[word] for word in item.split('|') if word]
        else:
            choices = [[item]]
        lines = [line + choice for line in lines for choice in choices]
        assert len(lines) < 300, items
    return lines


def variants(tokens):
    """The command lines a (synopsis) token list stands for."""
    spaced = []
    for token in tokens:
        lead = len(token) - len(token.lstrip('['))
        token = token.lstrip('[')
        trail = len(token) - len(token.rstrip(']'))
        token = token.rstrip(']')
        if token.endswith('...'):   # FILE... or ...: one is enough
            token = token[:-3]
        spaced += ['['] * lead + ([token] if token else []) + [']'] * trail
    alternatives, _ = _group(spaced)
    out = []
    for alternative in alternatives:
        out += _expand(alternative)
    return out


def _command_words(parser, tokens):
    """(words of the command the tokens name, its parser, the rest)."""
    walker = _cli_commands()
    rest = list(tokens)
    top = [t for t in rest if t in ('--debug',)]
    rest = [t for t in rest if t not in top]
    words = []
    while rest and rest[0].startswith('--config-file'):
        rest = rest[1 if '=' in rest[0] else 2:]
    while rest:
        subs = walker.subcommands(parser)
        if not subs or rest[0] not in subs:
            break
        words.append(rest.pop(0))
        parser = subs[words[-1]]
    return tuple(words), parser, rest


def _fill_choices(parser, tokens):
    """A placeholder (TARGET) as the value of an option with choices is
    its first choice: the synopsis names the option, not a value."""
    out = list(tokens)
    for i, token in enumerate(out[:-1]):
        action = parser._option_string_actions.get(token)
        if action is not None and action.choices and \
                _PLACEHOLDER.match(out[i + 1]):
            out[i + 1] = list(action.choices)[0]
    return out


class _Runner:
    """Runs a parsed line on the fixture tree in ``tmp``."""

    def __init__(self, tmp, capsys, monkeypatch):
        from kvmtune import facts as host_facts
        from tests import hosttrees

        self.tmp, self.capsys = tmp, capsys
        self.hosttrees = hosttrees
        monkeypatch.chdir(tmp)
        self.root = str(hosttrees.make(tmp / 'host', DISTRO))
        # a compute host runs nova-compute (nova-conf apply takes its
        # default --service from the tree's processes)
        pid = tmp / 'host' / 'proc' / '4242'
        pid.mkdir()
        (pid / 'cmdline').write_bytes(b'/usr/bin/python3\0'
                                      b'/usr/bin/nova-compute\0')
        self.facts = str(tmp / 'facts.json')
        facts = host_facts.gather(self.root)
        self.hostname = facts['hostname']
        with open(self.facts, 'w') as f:
            json.dump(facts, f)
        self.plan = str(tmp / 'plan.json')
        assert cli.main(['plan', '--profile', PROFILE, '--root', self.root,
                         '-f', 'json']) == 0
        with open(self.plan, 'w') as f:
            f.write(capsys.readouterr().out)
        self.count = 0
        self.parsed = self.runs = 0

    def _file(self, name, text):
        self.count += 1
        path = self.tmp / f'{self.count}-{name}'
        path.write_text(text)
        return str(path)

    def argv(self, words, tokens):
        """The line's tokens with its paths on the fixture and in tmp."""
        out = list(tokens)
        given = set(out)
        for i, token in enumerate(out[:-1]):
            value = out[i + 1]
            if token == '--root':
                out[i + 1] = self._root(words)
            elif token == '--facts':
                out[i + 1] = self.facts
            elif token == '--host' and words == ('export',):
                out[i + 1] = self.hostname    # the host the facts are of
            elif token == '--plan' and value != '-':
                out[i + 1] = self.plan
            elif token in ('--config', '--nova-conf'):
                out[i + 1] = self._file('nova.conf', '[DEFAULT]\n')
            elif token in ('-o', '--output'):
                self.count += 1
                out[i + 1] = str(self.tmp / f'{self.count}-out')
            elif token == '--profile' and (_PLACEHOLDER.match(value)
                                           or value.endswith('.yaml')):
                out[i + 1] = self._profile_file() \
                    if value.endswith('.yaml') else PROFILE
        if words == ('profile', 'validate') and out and \
                out[-1].endswith('.yaml'):
            out[-1] = self._profile_file()
        if words in READS_HOST and not given & {'--root', '--facts'}:
            out += ['--root', self._root(words)]
        if words == ('nova-conf', 'apply') and '--config' not in given:
            out += ['--config', self._file('nova.conf', '[DEFAULT]\n')]
        return out

    def _root(self, words):
        if words != ('boot', 'apply'):
            return self.root
        self.count += 1     # a tree of its own: boot apply writes into it
        return str(self.hosttrees.make(self.tmp / f'{self.count}-host',
                                       DISTRO))

    def _profile_file(self):
        from kvmtune.tuning import profiles

        path = profiles.load(PROFILE, profiles.search_dirs()).path
        self.count += 1     # the file is named as the profile in it
        folder = self.tmp / f'{self.count}-profile'
        folder.mkdir()
        shutil.copy(path, folder)
        return str(folder / os.path.basename(path))

    def run(self, argv):
        self.runs += 1
        try:
            status = cli.main(argv)
        except SystemExit as exc:
            status = exc.code
        captured = self.capsys.readouterr()
        return status, captured.err.strip().splitlines()[-1:]


def exit_codes(words):
    """The EXIT_CODES of the registered command ``words`` are (or are a
    sub-command of: ``cloud up`` is ``cloud``'s)."""
    for n in range(len(words), 0, -1):
        if tuple(words[:n]) in errors.EXIT_CODES:
            return errors.EXIT_CODES[tuple(words[:n])]
    return ()


def check_line(parser, line, runner=None):
    """The problems of one DocLine (empty: it is as documented)."""
    if line.text in ALLOWED:
        return []
    problems = []
    for tokens in commands(line.text):
        for variant in variants(tokens):
            words, sub, rest = _command_words(parser, variant)
            shown = ' '.join(('kvmtune',) + tuple(variant))
            group = not words or _cli_commands().subcommands(sub)
            if group and (not line.mention or rest and not rest[0].startswith(
                    '-')):
                problems.append(f'{line.where}: {shown}: names no command')
                continue
            renamed = sub.get_default('_renamed') or {}
            problems += [f'{line.where}: {shown}: names {old}, the old '
                         f'spelling of {new}'
                         for old, new, _, _ in renamed.values()
                         for token in rest if token.split('=')[0] == old]
            if line.mention:
                # also a group named in a sentence (`kvmtune cloud`), or
                # the global options (`kvmtune --config-file PATH`)
                known = set(sub._option_string_actions) | {
                    '--config-file', '--debug', '--version'}
                problems += [f'{line.where}: {shown}: no option {option}'
                             for token in rest for option in re.findall(
                                 r'^(--?[a-zA-Z][\w-]*)', token)
                             if option not in known]
                continue
            argv = list(words) + _fill_choices(sub, rest)
            if runner is not None:
                runner.parsed += 1
            err = io.StringIO()
            try:
                with contextlib.redirect_stderr(err):
                    parser.parse_args(argv)
            except SystemExit:
                last = (err.getvalue().strip().splitlines() or [''])[-1]
                problems.append(f'{line.where}: {shown}: does not parse: '
                                f'{last}')
                continue
            codes = exit_codes(words)
            if line.exit not in codes:
                problems.append(f'{line.where}: {shown}: documents exit '
                                f'{line.exit}, which {" ".join(words)} '
                                f'never returns ({codes})')
                continue
            if runner is None or words not in RUNNABLE or \
                    '--prometheus' in rest or \
                    ('--plan' in rest and '-' in rest) or \
                    ('--versions' in rest and not {'--root', '--facts'} & set(
                        rest)):
                continue
            argv = runner.argv(words, argv)
            if any(_PLACEHOLDER.match(token) for token in argv):
                continue        # a value only the reader knows (TARGET)
            status, last = runner.run(argv)
            if status != line.exit:
                problems.append(f'{line.where}: {shown}: exits {status}, '
                                f'documented {line.exit}: {last}')
    return problems


def all_doc_lines(parser):
    lines = []
    for page in _doc_pages():
        lines += doc_lines(page)
    return lines + epilog_lines(parser)


def test_every_documented_command_line_runs_as_documented(
        tmp_path, capsys, monkeypatch):
    """README, the guides and every --help: each kvmtune line parses, and
    each that can run here runs on the fixture host with its documented
    exit status (the module comment above)."""
    parser = cli.build_parser()
    runner = _Runner(tmp_path, capsys, monkeypatch)
    lines = all_doc_lines(parser)
    problems = []
    for line in lines:
        problems += check_line(parser, line, runner)
    assert problems == []
    # what was checked, for the record (pytest -s shows it)
    examples = [line for line in lines if not line.mention]
    print(f'{len(lines)} command lines checked: {len(examples)} examples '
          f'({runner.parsed} lines with their synopses\' choices parsed, '
          f'{runner.runs} run on the fixture host), '
          f'{len(lines) - len(examples)} named inline')
    assert len(examples) > 100 and runner.runs > 30
    assert {line.where for line in lines} >= {
        'README.md', 'doc/source/user/applying.md',
        'doc/source/admin/monitoring.md', 'kvmtune plan --help'}


def test_every_allowed_line_is_still_in_the_docs():
    texts = {line.text for line in all_doc_lines(cli.build_parser())}
    assert set(ALLOWED) <= texts


def test_the_checker_reports_a_wrong_example(tmp_path, capsys,
                                             monkeypatch):
    """The docs check can fail: a page with a misspelt option, a command
    that does not exist, inline mentions with an unknown option and of an
    unknown command, and an
    example whose documented exit status is not the one it returns is
    five problems; the same page written right is none."""
    bad = tmp_path / 'bad.md'
    bad.write_text(
        'Plan it with `kvmtune plan --profil X` or `kvmtune host nope`.\n\n'
        '```sh\n'
        'kvmtune plan --profile cpu-pinning --dry-run\n'
        'kvmtune host frobnicate\n'
        'kvmtune plan --profile pinned-hugepages-ept --root DIR   # exit 1\n'
        '```\n')
    parser = cli.build_parser()
    runner = _Runner(tmp_path, capsys, monkeypatch)
    problems = [p for line in doc_lines(str(bad))
                for p in check_line(parser, line, runner)]
    assert len(problems) == 5, problems
    assert any('no option --profil' in p for p in problems)
    assert any('host nope: names no command' in p for p in problems)
    assert any('--dry-run' in p and 'does not parse' in p
               for p in problems)
    assert any('frobnicate' in p for p in problems)
    assert any('exits 0, documented 1' in p for p in problems)
    good = tmp_path / 'good.md'
    good.write_text(
        'Plan it with `kvmtune plan --profile X`.\n\n'
        '```sh\n'
        'kvmtune plan --profile cpu-pinning [--root DIR | --facts FILE]\n'
        'kvmtune plan --profile pinned-hugepages --root DIR   # exit 1\n'
        '```\n')
    assert [p for line in doc_lines(str(good))
            for p in check_line(parser, line, runner)] == []


def test_a_synopsis_stands_for_each_of_its_lines():
    assert variants(['plan', '--profile', 'P', '[--root', 'DIR', '|',
                     '--facts', 'FILE]', '[-f', 'table|json]']) == [
        ['plan', '--profile', 'P'],
        ['plan', '--profile', 'P', '-f', 'table'],
        ['plan', '--profile', 'P', '-f', 'json'],
        ['plan', '--profile', 'P', '--root', 'DIR'],
        ['plan', '--profile', 'P', '--root', 'DIR', '-f', 'table'],
        ['plan', '--profile', 'P', '--root', 'DIR', '-f', 'json'],
        ['plan', '--profile', 'P', '--facts', 'FILE'],
        ['plan', '--profile', 'P', '--facts', 'FILE', '-f', 'table'],
        ['plan', '--profile', 'P', '--facts', 'FILE', '-f', 'json']]
    assert commands('kvmtune plan -f json | kvmtune verify --plan - '
                    '> out.txt') == [['plan', '-f', 'json'],
                                     ['verify', '--plan', '-']]
    assert commands('rally task start "$(kvmtune rally task-path x)"') == [
        ['rally', 'task-path', 'x']]


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


# --- the exit-status table ----------------------------------------------

def _cli_page_tables():
    """The two tables of doc/source/reference/cli.rst "Exit status":
    ({code: meaning}, {command words: (codes)})."""
    with open(os.path.join(paths.REPO, 'doc', 'source', 'reference',
                           'cli.rst')) as f:
        text = f.read()
    section = text[text.index('Exit status\n'):text.index('.. kvmtune-cli')]
    codes = {int(code): meaning for code, meaning in re.findall(
        r'^   \* - ``(\d+)``\n     - (.*)$', section, re.M)}
    commands = {tuple(words.split()): tuple(int(c) for c in
                                            exits.split(', '))
                for words, exits in re.findall(
                    r'^   \* - ``kvmtune ([a-z -]+)``\n     - ([\d, ]+)$',
                    section, re.M)}
    return codes, commands


def test_the_exit_status_tables_are_the_codes():
    """The CLI reference's tables are errors.EXIT_STATUS and
    errors.EXIT_CODES: no code or command missing, none extra."""
    codes, commands = _cli_page_tables()
    assert set(codes) == set(errors.EXIT_STATUS)
    assert commands == errors.EXIT_CODES


# The library a command's status comes from, when the module returns
# what a call gives (return verify.exit_code(checks)).
RETURNED_THROUGH = {
    ('verify',): ['kvmtune/verify/__init__.py'],
    ('rollout',): ['kvmtune/rollout/playbook.py'],
    ('rollout-step',): ['kvmtune/rollout/steps.py'],
    ('main-job',): ['kvmtune/mainjob/job.py'],
}


def _statuses(path):
    """The exit statuses a source file names: kvmtune.errors' EXIT_*
    constants it uses and the integers its ``return`` statements give."""
    import ast

    with open(os.path.join(paths.REPO, path)) as f:
        tree = ast.parse(f.read())
    found = set()
    for node in ast.walk(tree):
        name = node.id if isinstance(node, ast.Name) else \
            node.attr if isinstance(node, ast.Attribute) else None
        if name and name.startswith('EXIT_') and hasattr(errors, name) \
                and isinstance(getattr(errors, name), int):
            found.add(getattr(errors, name))
        if isinstance(node, ast.Return) and isinstance(
                node.value, ast.Constant) and type(node.value.value) is int:
            found.add(node.value.value)
    return found


def status_problems():
    """Every status a command's module names is in its EXIT_CODES row,
    and every status of the row but 0 and 2 (every command's) is named
    by the module or the library its status comes from."""
    problems = []
    for words, module, *_ in cli.COMMANDS:
        path = f'kvmtune/cmd/{module}.py'
        declared = set(errors.EXIT_CODES[tuple(words)])
        named = _statuses(path)
        if named - declared:
            problems.append(f'{path} returns {sorted(named - declared)}, '
                            f'not in EXIT_CODES {sorted(declared)}')
        for extra in RETURNED_THROUGH.get(tuple(words), []):
            named |= _statuses(extra)
        for code in sorted(declared - named - {0, 2}):
            problems.append(f'kvmtune {" ".join(words)} declares {code}, '
                            f'which {path} never returns')
    return problems


def test_each_command_returns_only_the_statuses_it_declares():
    assert status_problems() == []


def test_the_status_check_can_fail(tmp_path, monkeypatch):
    """A module returning a status its row lacks, and a row naming one
    no code returns, are both reported."""
    monkeypatch.setitem(errors.EXIT_CODES, ('plan',), (0, 2))
    monkeypatch.setitem(errors.EXIT_CODES, ('export',), (0, 1, 2))
    assert status_problems() == [
        'kvmtune/cmd/plan.py returns [1], not in EXIT_CODES [0, 2]',
        'kvmtune export declares 1, which kvmtune/cmd/export.py never '
        'returns']
