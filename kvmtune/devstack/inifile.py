"""Read and edit single options of an INI file such as nova.conf.

Only what undoing kvmtune's own nova.conf changes needs: read an option's
values (a multi-valued option is repeated lines), set them back, or delete
the option. Comments and every other line stay as they are; writes are
atomic.
"""

import os
import re
import tempfile

_HEADER = re.compile(r'^\[(?P<name>[^\]]+)\]\s*$')


def _option_re(option):
    return re.compile(r'^' + re.escape(option) + r'\s*=\s*(?P<value>.*)$')


def _read_lines(path):
    with open(path) as handle:
        return handle.read().splitlines()


def _locate(lines, section, option):
    """Indexes of the option's lines in the section, and the header's."""
    pattern = _option_re(option)
    current = None
    header = None
    found = []
    for index, line in enumerate(lines):
        match = _HEADER.match(line)
        if match:
            current = match.group('name')
            if current == section and header is None:
                header = index
            continue
        if current == section and pattern.match(line):
            found.append(index)
    return header, found


def get(path, section, option):
    """The option's values in order, or None when it is not set."""
    lines = _read_lines(path)
    _, found = _locate(lines, section, option)
    if not found:
        return None
    pattern = _option_re(option)
    return [pattern.match(lines[i]).group('value').strip() for i in found]


def put(path, section, option, values):
    """Make the option have exactly ``values``; None deletes it."""
    lines = _read_lines(path)
    header, found = _locate(lines, section, option)
    new = [f'{option} = {value}' for value in (values or [])]
    if found:
        at = found[0]
        lines = [line for i, line in enumerate(lines) if i not in found]
        lines[at:at] = new
    elif new:
        if header is None:
            # A new section goes at the end, after a blank line.
            if lines and lines[-1].strip():
                lines.append('')
            lines.append(f'[{section}]')
            header = len(lines) - 1
        lines[header + 1:header + 1] = new
    write_atomic(path, ''.join(line + '\n' for line in lines))


def has_section(path, section):
    return any(_HEADER.match(line) and _HEADER.match(line).group('name')
               == section for line in _read_lines(path))


def ends_blank(path):
    """Whether the file's last line is blank (how sections get appended
    depends on it)."""
    lines = _read_lines(path)
    return bool(lines) and not lines[-1].strip()


def drop_section_if_empty(path, section, ended_blank=True):
    """Remove [section] when only blank lines follow it; True if removed.

    The blank lines after it go too. When it was the file's last section,
    a blank last line left before it goes as well unless the file ended
    with one (ended_blank) before the section was appended.
    """
    lines = _read_lines(path)
    starts = [i for i, line in enumerate(lines)
              if _HEADER.match(line) and _HEADER.match(line).group('name')
              == section]
    if len(starts) != 1:
        return False
    start = end = starts[0]
    while end + 1 < len(lines) and not _HEADER.match(lines[end + 1]):
        if lines[end + 1].strip():
            return False
        end += 1
    del lines[start:end + 1]
    if start == len(lines) and not ended_blank and lines and \
            not lines[-1].strip():
        del lines[-1]
    write_atomic(path, ''.join(line + '\n' for line in lines))
    return True


def write_atomic(path, text, mode=None):
    """Replace ``path`` with ``text`` through a temporary file + rename."""
    directory = os.path.dirname(os.path.abspath(path))
    if mode is None:
        try:
            mode = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o644
    fd, tmp = tempfile.mkstemp(dir=directory, prefix='.kvmtune-')
    try:
        with os.fdopen(fd, 'w') as handle:
            handle.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
