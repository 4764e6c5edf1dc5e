"""The output conventions every command shares (python-openstackclient's).

Not a sub-command: kvmtune.cli lists its commands by module name.

Reading commands take ``-f/--format table|json|yaml|value`` and, where they
print a table, ``-c/--column NAME`` (repeatable), with the meaning
osc-lib's ``Lister`` gives them: ``table`` aligned columns with a header,
``json`` and ``yaml`` the rows as a list of mappings (or the command's own
document), ``value`` the selected columns' values separated by spaces, one
row a line, no header. Commands that write files take ``-o/--output`` and
say what happened to each file in one line from ``wrote()``.

doc/design.md section 9 is the contract.
"""

import argparse
from collections.abc import Mapping
from collections.abc import Sequence
import sys
from typing import Any
from typing import cast
from typing import TextIO

from kvmtune.errors import InputError
from kvmtune import jsonout

FORMATS = ('table', 'json', 'yaml', 'value')


def add_format(parser: argparse.ArgumentParser, default: str = 'table',
               columns: bool = True, formats: Sequence[str] = FORMATS,
               legacy: Mapping[str, str] | None = None) -> None:
    """-f/--format and, for a table, -c/--column.

    ``formats``: a command that prints one document, not rows, has no
    ``value`` format. ``legacy``: {old spelling: format} a command took
    before this convention; still accepted, with a deprecation line
    (``format_of``).
    """
    legacy = dict(legacy or {})
    note = ''.join(f'; {old}: deprecated, say {new}'
                   for old, new in legacy.items())
    parser.add_argument('-f', '--format', choices=list(formats) +
                        list(legacy), default=default,
                        help=f'output format: {", ".join(formats)} '
                             f'(default: {default}{note})')
    parser.set_defaults(_format_legacy=legacy)
    if columns:
        parser.add_argument('-c', '--column', action='append', default=[],
                            metavar='COLUMN', dest='columns',
                            help='show only this column (repeatable; '
                                 'table and value formats)')


def format_of(args: argparse.Namespace, stream: TextIO | None = None) -> str:
    """The format asked for, an old spelling turned into its new one with
    a deprecation line on stderr."""
    legacy = getattr(args, '_format_legacy', None) or {}
    if args.format in legacy:
        new = legacy[args.format]
        print(f'kvmtune: deprecated: --format {args.format} is now -f '
              f'{new}; {args.format} goes in the next release',
              file=stream or sys.stderr)
        return cast(str, new)
    return cast(str, args.format)


def add_renamed(parser: argparse.ArgumentParser, old: str, new: str,
                dest: str, **kwargs: Any) -> None:
    """``old``: the spelling option ``new`` (whose dest is ``dest``, added
    before this call) had before this convention; hidden from --help and
    accepted one more release, with a deprecation line (``take_renamed``,
    which kvmtune.cli.main calls for every command)."""
    hidden = '_renamed_' + old.lstrip('-').replace('-', '_')
    parser.add_argument(old, dest=hidden, help=argparse.SUPPRESS, **kwargs)
    known = dict(parser.get_default('_renamed') or {})
    known[hidden] = (old, new, dest, parser.get_default(dest))
    parser.set_defaults(_renamed=known)


def take_renamed(args: argparse.Namespace,
                 stream: TextIO | None = None) -> None:
    """Give each old spelling's value to its new option, with a line
    saying so; an old and a new spelling together are refused."""
    for hidden, (old, new, dest, default) in sorted(
            (getattr(args, '_renamed', None) or {}).items()):
        value = getattr(args, hidden, None)
        if value is None:
            continue
        if getattr(args, dest, None) not in (default, value):
            raise InputError(f'{old} and {new} both given', key=new,
                             fix=f'give only {new} ({old} is deprecated)')
        print(f'kvmtune: deprecated: {old} is now {new}; {old} goes in '
              'the next release', file=stream or sys.stderr)
        setattr(args, dest, value)


def add_output(parser: argparse.ArgumentParser, what: str = 'file',
               required: bool = False) -> None:
    """-o/--output PATH for a file (or directory) the command writes."""
    parser.add_argument('-o', '--output', metavar='PATH', required=required,
                        help=f'write the {what} to PATH')


def _selected(columns: Sequence[str], wanted: Sequence[str]) -> list[str]:
    if not wanted:
        return list(columns)
    unknown = [name for name in wanted if name not in columns]
    if unknown:
        raise InputError(f'no column {unknown[0]!r}', key='-c/--column',
                         fix='choose from: ' + ', '.join(columns))
    return list(wanted)


def _cell(value: object) -> str:
    if value is None:
        return ''
    if isinstance(value, float):
        return f'{value:g}'
    if isinstance(value, (list, tuple)):
        return ','.join(_cell(item) for item in value)
    # One line per cell, whatever a value held.
    return ' '.join(str(value).split())


def table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Aligned text of ``rows`` (sequences in ``columns`` order)."""
    cells = [[_cell(value) for value in row] for row in rows]
    widths = [max([len(name)] + [len(row[i]) for row in cells])
              for i, name in enumerate(columns)]

    def line(values: Sequence[str]) -> str:
        return '  '.join(value.ljust(width) for value, width
                         in zip(values, widths)).rstrip()

    out = [line(columns), line(['-' * width for width in widths])]
    out.extend(line(row) for row in cells)
    return '\n'.join(out) + '\n'


def emit(args: argparse.Namespace, columns: Sequence[str],
         rows: Sequence[Sequence[Any]], document: Any = None,
         stream: TextIO | None = None) -> None:
    """Print ``rows`` (sequences in ``columns`` order) as ``args.format``.

    ``document``, when given, is what json and yaml print instead of the
    rows as mappings (a command's stable JSON shape, doc/design.md).
    """
    stream = stream or sys.stdout
    fmt = getattr(args, 'format', 'table')
    shown = _selected(columns, getattr(args, 'columns', []))
    index = [columns.index(name) for name in shown]
    if fmt in ('json', 'yaml'):
        data = document if document is not None else [
            {name: row[i] for name, i in zip(shown, index)} for row in rows]
        # one strict encoder (kvmtune.jsonout): a figure that is not
        # finite is refused before anything is printed, in either format
        if fmt == 'json':
            stream.write(jsonout.dumps(data, source='-f json') + '\n')
        else:
            import yaml
            jsonout.check_finite(data, source='-f yaml')
            yaml.safe_dump(data, stream, sort_keys=False,
                           default_flow_style=False)
        return
    picked = [[row[i] for i in index] for row in rows]
    if fmt == 'value':
        for row in picked:
            stream.write(' '.join(_cell(value) for value in row) + '\n')
        return
    stream.write(table(shown, picked))


def wrote(path: str, changed: bool = True,
          stream: TextIO | None = None) -> None:
    """The one line a command prints for a file it wrote (or left)."""
    stream = stream or sys.stdout
    stream.write(f'{"wrote" if changed else "unchanged"} {path}\n')
