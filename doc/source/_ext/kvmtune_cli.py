"""``.. kvmtune-cli::``: the CLI reference from kvmtune's own parser.

kvmtune.cli.build_parser() builds the parser ``kvmtune --help`` prints
(each command module's docstring is its description, its add_arguments()
its options), so the reference is that text, never a second copy of it.
One section per command kvmtune.cli registers (kvmtune.cli.COMMANDS, and
the commands installed plugins add through the ``kvmtune.cli`` entry
points) and per sub-command its module adds (``kvmtune cloud up``): the
one-line summary, the usage, the description and a list of the options. A
registered command the parser does not lead to stops the build
(cli_commands.reference).

Descriptions are plain text (argparse's RawDescriptionHelpFormatter): a
block of indented lines is shown as it is (examples, tables), any other
block as a paragraph, with ````x```` as code.
"""

import os
import re
import textwrap

from docutils import nodes
from docutils.parsers.rst import Directive
from sphinx.errors import ExtensionError

import cli_commands

# The width ``--help`` is read at in a terminal; argparse takes it from
# $COLUMNS.
WIDTH = '80'


def _text(text):
    """Inline nodes of plain text in which ``x`` is code."""
    parts = re.split(r'``(.+?)``', text)
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(nodes.literal(part, part))
        elif part:
            out.append(nodes.Text(part))
    return out


def _literal(text):
    """A block shown as it is, not highlighted as any language."""
    block = nodes.literal_block(text, text)
    block['language'] = 'text'
    return block


def _blocks(description):
    """Paragraph and literal-block nodes of a raw --help description."""
    out = []
    text = textwrap.dedent(description or '').strip('\n')
    for block in re.split(r'\n\s*\n', text):
        lines = block.split('\n')
        if not block.strip():
            continue
        if all(line.startswith(' ') for line in lines if line.strip()):
            out.append(_literal(textwrap.dedent(block)))
        else:
            para = nodes.paragraph()
            para.extend(_text(' '.join(line.strip() for line in lines)))
            out.append(para)
    return out


def _options(parser):
    rows = cli_commands.options(parser)
    if not rows:
        return []
    dl = nodes.definition_list()
    for names, metavar, help_ in rows:
        term = nodes.term()
        for i, name in enumerate(names):
            if i:
                term += nodes.Text(', ')
            shown = f'{name} {metavar}' if metavar else name
            term += nodes.literal(shown, shown)
        definition = nodes.definition()
        para = nodes.paragraph()
        para.extend(_text(help_ or ''))
        definition += para
        dl += nodes.definition_list_item('', term, definition)
    return [nodes.rubric('', 'Options'), dl]


def _section(words, parser, summary, document):
    name = ' '.join(('kvmtune',) + words)
    section = nodes.section()
    section['ids'].append(nodes.make_id(name))
    section['names'].append(nodes.fully_normalize_name(name))
    section += nodes.title(name, name)
    if summary:
        para = nodes.paragraph()
        para.extend(_text(summary))
        section += para
    section += _literal(parser.format_usage().strip())
    description = parser.description or ''
    if summary and description.strip().startswith(summary.strip()):
        description = description.strip()[len(summary.strip()):]
    section.extend(_blocks(description))
    section.extend(_options(parser))
    document.note_implicit_target(section)
    return section


def _summaries(parser):
    """{words: one-line help} of every sub-parser below ``parser``."""
    out = {}
    for words, sub in cli_commands.walk(parser):
        for action in sub._actions:
            for choice in getattr(action, '_choices_actions', ()):
                out[words + (choice.dest,)] = choice.help
    return out


class KvmtuneCli(Directive):
    has_content = False

    def run(self):
        from kvmtune import cli

        saved = os.environ.get('COLUMNS')
        os.environ['COLUMNS'] = WIDTH
        try:
            return self._render(cli)
        finally:
            if saved is None:
                os.environ.pop('COLUMNS', None)
            else:
                os.environ['COLUMNS'] = saved

    def _render(self, cli):
        commands = cli.registered(plugins=True)
        parser = cli.build_parser(commands)
        registered = [command.words for command in commands]
        sections, missing = cli_commands.reference(parser, registered)
        if missing:
            raise ExtensionError(
                'kvmtune-cli: commands missing from the reference: '
                + ', '.join(' '.join(m) for m in missing))
        summaries = _summaries(parser)
        document = self.state.document

        # The index: every command, its summary, a link to its section.
        table = nodes.table()
        group = nodes.tgroup(cols=2)
        table += group
        group += nodes.colspec(colwidth=30)
        group += nodes.colspec(colwidth=70)
        head = nodes.thead()
        row = nodes.row()
        for label in ('command', 'what it does'):
            row += nodes.entry('', nodes.paragraph(label, label))
        head += row
        group += head
        body = nodes.tbody()
        for words, _ in sections:
            name = ' '.join(('kvmtune',) + words)
            ref = nodes.reference('', '', internal=True,
                                  refid=nodes.make_id(name))
            ref += nodes.literal(name, name)
            row = nodes.row()
            row += nodes.entry('', nodes.paragraph('', '', ref))
            para = nodes.paragraph()
            para.extend(_text(summaries.get(words) or ''))
            row += nodes.entry('', para)
            body += row
        group += body

        top = _section((), parser, None, document)
        top['ids'] = [nodes.make_id('kvmtune global options')]
        top['names'] = [nodes.fully_normalize_name('kvmtune')]
        top[0] = nodes.title('kvmtune', 'kvmtune (global options)')
        out = [table, top]
        for words, sub in sections:
            out.append(_section(words, sub, summaries.get(words), document))
        return out


def setup(app):
    app.add_directive('kvmtune-cli', KvmtuneCli)
    return {'parallel_read_safe': True, 'parallel_write_safe': True}
