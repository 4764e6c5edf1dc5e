"""DevStack's INI editing semantics, re-implemented for tests.

DevStack edits config files with sed (inc/ini-config). The plugin only
relies on what DevStack documents and guarantees there; this module
reproduces exactly that, so tests/devstack_shim/functions can offer
``iniset``/``iniget``/``inidelete``/``ini_has_option`` without DevStack:

- iniset: "if the file does not exist, it is created"; a missing section
  is added at the end of the file, after a blank line; a missing option is
  added as ``option = value`` right below the section header; an existing
  option keeps everything up to and including ``=`` and its blanks, and
  only its value is replaced (in every block headed by that section).
- iniget: prints the option's value; lines are matched only when the
  option name starts the line (commented lines never match); the shell
  then word-splits the value, so surrounding blanks vanish.
- inidelete: removes the option's lines from the section.
- ini_has_option: true when the section has a line starting with the
  option name followed by blanks and ``=``.

Usage: ini.py set|get|delete|has FILE SECTION OPTION [VALUE]
"""

import re
import sys

_HEADER = re.compile(r'^\[.*\]')


def _section_ranges(lines, section):
    """Yield the indexes of lines inside every ``[section]`` block.

    DevStack's sed address ``/^\\[section\\]/,/^\\[.*\\]/`` starts at the
    header and ends at the next header; a repeated header opens a new range.
    """
    inside = False
    for index, line in enumerate(lines):
        if line.startswith('[' + section + ']'):
            inside = True
            continue
        if inside and _HEADER.match(line):
            inside = False
        if inside:
            yield index


def _option_match(line, option):
    return re.match(r'^(' + re.escape(option) + r'[ \t]*=[ \t]*)(.*)$', line)


def _read(path):
    try:
        with open(path) as handle:
            return handle.read().splitlines()
    except FileNotFoundError:
        return None


def _write(path, lines):
    with open(path, 'w') as handle:
        handle.write(''.join(line + '\n' for line in lines))


def _has(lines, section, option):
    return any(_option_match(lines[i], option)
               for i in _section_ranges(lines, section))


def has(path, section, option):
    return _has(_read(path) or [], section, option)


def get(path, section, option):
    lines = _read(path) or []
    found = [lines[i] for i in _section_ranges(lines, section)
             if _option_match(lines[i], option)]
    if not found:
        return ''
    joined = '\n'.join(found)
    return ' '.join(joined.split('=', 1)[1].split())


def set_(path, section, option, value):
    if not section or not option:
        return
    lines = _read(path)
    if lines is None:
        lines = []
    if not any(line.startswith('[' + section + ']') for line in lines):
        lines += ['', '[' + section + ']']
    headers = [i for i, line in enumerate(lines)
               if line.startswith('[' + section + ']')]
    if not _has(lines, section, option):
        # sed's "a" command appends below every matching header.
        for index in reversed(headers):
            lines.insert(index + 1, f'{option} = {value}')
    else:
        for index in list(_section_ranges(lines, section)):
            match = _option_match(lines[index], option)
            if match:
                lines[index] = match.group(1) + value
    _write(path, lines)


def delete(path, section, option):
    if not section or not option:
        return
    lines = _read(path)
    if lines is None:
        return
    doomed = {i for i in _section_ranges(lines, section)
              if _option_match(lines[i], option)}
    _write(path, [line for i, line in enumerate(lines) if i not in doomed])


def main(argv):
    action, path, section, option = argv[:4]
    if action == 'set':
        set_(path, section, option, argv[4] if len(argv) > 4 else '')
    elif action == 'get':
        print(get(path, section, option))
    elif action == 'delete':
        delete(path, section, option)
    elif action == 'has':
        return 0 if has(path, section, option) else 1
    else:
        print(f'ini.py: unknown action {action}', file=sys.stderr)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
