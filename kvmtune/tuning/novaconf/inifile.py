"""nova.conf as oslo.config reads it, edited without disturbing anything else.

The file is kept as its lines, each with its own line ending, and parsed
with oslo.config's rules (oslo_config.iniparser): ``[section]`` headers,
``#`` and ``;`` comments at the start of a line, ``key = value`` or
``key: value``, an indented line continues the option above it, a value in
matching quotes loses them, section names match case-insensitively except
``DEFAULT``, and for a single-valued option the last occurrence wins.

An edit touches only the lines of the options it sets; every other byte
(comments, blank lines, order, duplicates, spacing, CRLF line endings, a
missing final newline) is written back as it was read.

Choices where the file alone does not say what to do:

* a single-valued option that appears more than once in its section: every
  occurrence whose value differs is rewritten (in place, keeping its
  ``key = `` spelling), so that the value Nova reads (the last) and the value
  a reader finds first agree; no line is removed;
* a multi-valued option: its lines in the section are replaced by one line
  per value, placed where the first of them was;
* a new option goes after the last option of its section (the last
  ``[section]`` block when the header is repeated), before the comments and
  blank lines that lead into the next section; a new section goes at the
  end of the file, after a blank line;
* new lines use the file's own line ending and the ``key = value`` spacing
  of their section (else of the file, else ``key = value``).
"""

import collections
from collections.abc import Iterable
import dataclasses
import re

DEFAULT_SECTION = 'DEFAULT'
_LINE = re.compile(r'([^\r\n]*)(\r\n|\r|\n|\Z)')
_QUOTES = ('"', "'")


class ParseError(ValueError):
    """The text is not something oslo.config would read."""

    def __init__(self, lineno: int, problem: str) -> None:
        self.lineno = lineno
        self.problem = problem
        super().__init__(f'line {lineno}: {problem}')


@dataclasses.dataclass
class Line:
    text: str                 # without its line ending
    end: str                  # '\n', '\r\n', '\r' or '' (last line only)


@dataclasses.dataclass
class Entry:
    """One assignment: its line, continuation lines, and parsed value."""

    section: str              # as spelled in the header
    key: str
    value: str
    first: int                # index of the ``key = value`` line
    last: int                 # index of its last continuation line
    spelling: str             # the line up to where the value starts


@dataclasses.dataclass
class Block:
    """A ``[section]`` header and the lines up to the next header."""

    section: str
    header: int
    stop: int                 # index after the block's last line
    entries: list[Entry]


def normalize_section(name: str) -> str:
    """oslo.config's group name folding: DEFAULT stays, others lower."""
    return name if name == DEFAULT_SECTION else name.lower()


def split_lines(text: str) -> list[Line]:
    """Lines with their endings, as Python's universal newlines splits."""
    lines = []
    for match in _LINE.finditer(text):
        body, end = match.groups()
        if not body and not end:
            break
        lines.append(Line(body, end))
    return lines


def _unquote(value: str) -> str:
    value = value.strip()
    if value and value[0] == value[-1] and value.startswith(_QUOTES):
        value = value[1:-1]
    return value


def _split_assignment(text: str) -> tuple[str, str, str] | None:
    """(key, spelling, raw value) with oslo.config's '=' or ':' rule."""
    cuts = [i for i in (text.find('='), text.find(':')) if i >= 0]
    if not cuts:
        return None
    cut = min(cuts)
    rest = text[cut + 1:]
    start = cut + 1 + len(rest) - len(rest.lstrip())
    return text[:cut].strip(), text[:start], text[start:]


def parse(lines: list[Line]) -> list[Block]:
    """Return the file's blocks in order; raise ParseError on bad lines."""
    blocks: list[Block] = []
    entry: Entry | None = None
    for index, line in enumerate(lines):
        lineno = index + 1
        text = line.text.rstrip()
        if text and text[0] in ' \t':
            if entry is None:
                raise ParseError(lineno, 'an indented line continues no '
                                 'option (oslo.config reads it as a '
                                 'continuation line)')
            entry.value += '\n' + text.lstrip()
            entry.last = index
            continue
        if entry is not None:
            entry.value = _unquote(entry.value)
            entry = None
        if not text or text[0] in '#;':
            continue
        if text[0] == '[':
            if not text.endswith(']') or len(text) <= 2:
                raise ParseError(lineno, f'malformed section header {text!r}'
                                 ' (a header is [name] alone on its line)')
            if blocks:
                blocks[-1].stop = index
            blocks.append(Block(text[1:-1], index, len(lines), []))
            continue
        parts = _split_assignment(text)
        if parts is None:
            # The line itself is not echoed: it may be anything (a
            # password, a hash) when the wrong file was given.
            raise ParseError(lineno, 'no "=" or ":": not an option, a '
                             'comment or a section header')
        key, spelling, raw = parts
        if not key:
            raise ParseError(lineno, 'an option line with an empty name')
        if not blocks:
            raise ParseError(lineno, f'option {key!r} comes before any '
                             '[section] header')
        entry = Entry(blocks[-1].section, key, raw, index, index, spelling)
        blocks[-1].entries.append(entry)
    if entry is not None:
        entry.value = _unquote(entry.value)
    return blocks


def format_value(value: str) -> str:
    """The text that oslo.config reads back as exactly ``value``."""
    if '\n' in value or '\r' in value:
        raise ValueError('a value cannot span lines')
    needs_quotes = value != value.strip() or (
        value and value[0] == value[-1] and value.startswith(_QUOTES))
    return f'"{value}"' if needs_quotes else value


def _spelling_of(entry: Entry) -> str:
    """The `` = `` between an entry's key and its value."""
    return entry.spelling[len(entry.key):]


class IniFile:
    """A parsed nova.conf that can set options and render itself back."""

    def __init__(self, text: str) -> None:
        self.lines = split_lines(text)
        self.blocks = parse(self.lines)

    @property
    def text(self) -> str:
        return ''.join(line.text + line.end for line in self.lines)

    # -- reading -----------------------------------------------------------

    def _blocks_of(self, section: str) -> list[Block]:
        wanted = normalize_section(section)
        return [b for b in self.blocks
                if normalize_section(b.section) == wanted]

    def entries(self, section: str, key: str) -> list[Entry]:
        return [e for b in self._blocks_of(section) for e in b.entries
                if e.key == key]

    def get(self, section: str, key: str) -> str | None:
        """The value oslo.config reads (the last one), or None."""
        found = self.entries(section, key)
        return found[-1].value if found else None

    def get_all(self, section: str, key: str) -> list[str]:
        return [e.value for e in self.entries(section, key)]

    def newline(self) -> str:
        ends = collections.Counter(line.end for line in self.lines
                                   if line.end)
        return ends.most_common(1)[0][0] if ends else '\n'

    def _separator(self, blocks: list[Block]) -> str:
        """The ``key = `` spacing used in these blocks, else in the file."""
        for scope in (blocks, self.blocks):
            styles = collections.Counter(
                _spelling_of(e) for b in scope for e in b.entries
                if self._has_value(e))
            if styles:
                return styles.most_common(1)[0][0]
        return ' = '

    def _has_value(self, entry: Entry) -> bool:
        text = self.lines[entry.first].text.rstrip()
        return text != entry.spelling.rstrip()

    def _spelling_for(self, entry: Entry) -> str:
        """``key = `` as the entry spells it, unless it had no value."""
        if self._has_value(entry):
            return entry.spelling
        blocks = self._blocks_of(entry.section)
        return entry.key + self._separator(blocks)

    # -- editing -----------------------------------------------------------

    def set(self, section: str, key: str, value: str) -> bool:
        """Set a single-valued option; return True when the text changed."""
        found = self.entries(section, key)
        if not found:
            return self._add(section, key, [value])
        stale = [e for e in found if e.value != value]
        self._replace_all([(e.first, e.last, [self._spelling_for(e) +
                                              format_value(value)])
                           for e in stale])
        return bool(stale)

    def set_multi(self, section: str, key: str,
                  values: Iterable[str]) -> bool:
        """Make ``values`` the option's lines; return True when changed."""
        values = list(values)
        found = self.entries(section, key)
        if [e.value for e in found] == values:
            return False
        if not found:
            return self._add(section, key, values)
        spelling = self._spelling_for(found[0])
        self._replace_all(
            [(found[0].first, found[0].last,
              [spelling + format_value(v) for v in values])]
            + [(e.first, e.last, []) for e in found[1:]])
        return True

    def _replace(self, first: int, last: int, texts: list[str]) -> None:
        """Lines first..last (inclusive) become ``texts``; keep endings."""
        self._replace_all([(first, last, texts)])

    def _replace_all(self, edits: list[tuple[int, int, list[str]]]) -> None:
        """Several non-overlapping _replace()s in one pass and one parse:
        linear in the file's size however many duplicates an option has
        (one parse per duplicate made 4,000 duplicates take minutes)."""
        if not edits:
            return
        newline = self.newline()
        out: list[Line] = []
        pos = 0
        for first, last, texts in sorted(edits, key=lambda e: e[0]):
            out.extend(self.lines[pos:first])
            final_end = self.lines[last].end
            new = [Line(t, newline) for t in texts]
            if new:
                new[-1].end = final_end
            elif not final_end and out:
                # Removed the last line of a file without a final newline.
                out[-1].end = ''
            out.extend(new)
            pos = last + 1
        out.extend(self.lines[pos:])
        self.lines = out
        self.blocks = parse(self.lines)

    def _add(self, section: str, key: str, values: list[str]) -> bool:
        if not values:
            return False
        blocks = self._blocks_of(section)
        separator = self._separator(blocks)
        texts = [(key + separator).rstrip() if v == '' else
                 key + separator + format_value(v) for v in values]
        if blocks:
            block = blocks[-1]
            after = block.entries[-1].last if block.entries else block.header
            self._insert(after + 1, texts)
        else:
            self._append_section(section, texts)
        return True

    def _insert(self, index: int, texts: list[str]) -> None:
        newline = self.newline()
        new = [Line(t, newline) for t in texts]
        if index == len(self.lines) and self.lines and \
                not self.lines[-1].end:
            # Keep "no newline at end of file" true of the new last line.
            self.lines[-1].end = newline
            new[-1].end = ''
        self.lines[index:index] = new
        self.blocks = parse(self.lines)

    def _append_section(self, section: str, texts: list[str]) -> None:
        lead = []
        if self.lines and self.lines[-1].text.strip():
            lead = ['']
        self._insert(len(self.lines), lead + [f'[{section}]'] + texts)

    # -- undoing (the DevStack plugin puts back what it changed) -----------

    def delete(self, section: str, key: str) -> bool:
        """Remove every line of the option; return True when changed."""
        return self.set_multi(section, key, []) if self.entries(
            section, key) else False

    def insert_after(self, section: str, anchor: str | None, key: str,
                     values: Iterable[str]) -> bool:
        """Add an option that is not set, right after option ``anchor``
        (its last occurrence), else where ``set_multi`` adds it."""
        if self.entries(section, key):
            raise ValueError(f'[{section}] {key} is already set')
        found = self.entries(section, anchor) if anchor else []
        if not found:
            return self.set_multi(section, key, values)
        separator = _spelling_of(found[-1])
        self._insert(found[-1].last + 1,
                     [key + separator + format_value(v) for v in values])
        return True

    def remove_section_if_empty(self, section: str,
                                blank_before: bool = True) -> bool:
        """Remove a ``[section]`` block that holds no option, with the blank
        lines after it (comments keep it); return True when removed.

        As the file's last block, the blank line before it goes too unless
        ``blank_before`` is False (the file ended with it before the
        section was appended).
        """
        blocks = self._blocks_of(section)
        if len(blocks) != 1 or blocks[0].entries:
            return False
        block = blocks[0]
        body = self.lines[block.header + 1:block.stop]
        if any(line.text.strip() for line in body):
            return False
        start = block.header
        if blank_before and block.stop == len(self.lines) and start > 0 \
                and not self.lines[start - 1].text.strip():
            # The last section: the blank line that led into it goes too.
            start -= 1
        del self.lines[start:block.stop]
        self.blocks = parse(self.lines)
        return True
