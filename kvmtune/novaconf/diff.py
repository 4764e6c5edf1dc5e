"""A unified diff of nova.conf that never shows a secret.

nova.conf holds database URLs, the message queue URL and service passwords.
Lines of options whose names look like secrets are shown as ``key = ***``
(their continuation lines as ``***``), whether they changed or not; the
comparison itself is made on the real lines, so a changed secret still
shows up as a changed line.
"""

import difflib
import re

MASK = '***'
# Names of options that carry credentials or URLs with credentials in them.
_SECRET_NAME = re.compile(
    r'password|passwd|secret|token|transport_url|connection|credential'
    r'|(^|_)key$', re.IGNORECASE)


def is_secret(option):
    return bool(_SECRET_NAME.search(option))


def shown_lines(ini):
    """The file's lines as the diff shows them, secrets masked."""
    shown = [line.text for line in ini.lines]
    for block in ini.blocks:
        for entry in block.entries:
            if not is_secret(entry.key):
                continue
            shown[entry.first] = entry.spelling + MASK
            for index in range(entry.first + 1, entry.last + 1):
                shown[index] = '    ' + MASK
    return shown


def _range(start, stop):
    """difflib's unified range notation: 'start,length' (1-based)."""
    length = stop - start
    first = start + 1 if length else start
    return str(first) if length == 1 else f'{first},{length}'


def _show(prefix, ini, shown, index):
    text = prefix + shown[index] + '\n'
    if not ini.lines[index].end:
        text += '\\ No newline at end of file\n'
    return text


def unified_diff(old, new, fromfile, tofile, context=3):
    """The diff from ``old`` to ``new`` (both IniFile), secrets masked."""
    old_keys = [line.text + line.end for line in old.lines]
    new_keys = [line.text + line.end for line in new.lines]
    old_shown, new_shown = shown_lines(old), shown_lines(new)
    matcher = difflib.SequenceMatcher(None, old_keys, new_keys,
                                      autojunk=False)
    out = []
    for group in matcher.get_grouped_opcodes(context):
        if not out:
            out += [f'--- {fromfile}\n', f'+++ {tofile}\n']
        (_, i1, _, j1, _), (_, _, i2, _, j2) = group[0], group[-1]
        out.append(f'@@ -{_range(i1, i2)} +{_range(j1, j2)} @@\n')
        for tag, i1, i2, j1, j2 in group:
            if tag == 'equal':
                out += [_show(' ', old, old_shown, i) for i in range(i1, i2)]
                continue
            out += [_show('-', old, old_shown, i) for i in range(i1, i2)]
            out += [_show('+', new, new_shown, j) for j in range(j1, j2)]
    return ''.join(out)
