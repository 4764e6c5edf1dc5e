"""The commands of ``kvmtune`` as its own argparse parser has them.

The CLI reference (kvmtune_cli.py) renders what this walks, and
tests/unit/test_docs.py checks it against kvmtune.cli.registered(), so a
command the CLI registers cannot be missing from the reference. Only the
standard library: the unit tier imports it without Sphinx.
"""

import argparse


def subcommands(parser):
    """The sub-parsers of ``parser`` by name, in the order they were added
    (aliases left out), or {} for a leaf."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen = {}
            for choice in action._choices_actions:
                seen[choice.dest] = action.choices[choice.dest]
            return seen
    return {}


def walk(parser, words=()):
    """Yield (words, parser) for ``parser`` and every sub-parser below it,
    depth first, a group before its members."""
    yield words, parser
    for name, sub in subcommands(parser).items():
        yield from walk(sub, words + (name,))


def reference(parser, registered):
    """What the CLI reference shows: (sections, missing).

    ``sections`` are the (words, parser) of every registered command
    (``registered``: the words of kvmtune.cli.registered()) and of the
    sub-commands its module adds (``cloud up``), in the parser's order;
    the groups kvmtune.cli makes for them (``host``) get none.
    ``missing`` are the registered commands, and the leaves, that the
    parser does not lead to a section for: the reference must fail then.
    """
    registered = [tuple(words) for words in registered]
    sections = []
    for words, sub in walk(parser):
        if any(words[:len(r)] == r for r in registered):
            sections.append((words, sub))
    shown = {words for words, _ in sections}
    missing = [r for r in registered if r not in shown]
    missing += [words for words, sub in walk(parser)
                if words and not subcommands(sub) and words not in shown]
    return sections, missing


def options(parser):
    """(option strings or the positional's name, metavar text, help) of
    each argument of ``parser``, as its --help states them."""
    formatter = parser._get_formatter()
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._SubParsersAction,
                               argparse._HelpAction)):
            continue
        if action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            names = list(action.option_strings)
            metavar = ''
            if action.nargs != 0:
                metavar = formatter._format_args(
                    action, formatter._get_default_metavar_for_optional(
                        action))
        else:
            names = [formatter._get_default_metavar_for_positional(action)]
            metavar = ''
        help_ = formatter._expand_help(action) if action.help else ''
        rows.append((names, metavar, ' '.join(help_.split())))
    return rows
