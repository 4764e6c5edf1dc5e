"""A unified diff of nova.conf that never shows a secret.

nova.conf holds database URLs, the message queue URL, cache and service
passwords. A line is masked when any of these says it is a secret:

- the option's name looks like one (password, token, connection, ...);
- Nova defines the option with ``secret=True`` (the ``secrets`` argument:
  kvmtune.tuning.novaconf.nova_check.secret_options(), when Nova is
  importable);
- its value, or a commented-out line, has the shape of one (a URL with a
  password in it, ``password:xyz``, a crypt hash, a long random token:
  kvmtune.errors.mask_secrets), whatever the option is called.

A secret option's lines are shown as ``key = ***`` (continuation lines as
``***``), whether they changed or not; the comparison itself is made on the
real lines, so a changed secret still shows up as a changed line.
"""

from collections.abc import Collection
from collections.abc import Sequence
import difflib
import re
from typing import Literal

from kvmtune.errors import MASK
from kvmtune.errors import mask_secrets
from kvmtune.tuning.novaconf import inifile

# Names of options that carry credentials or URLs with credentials in them.
_SECRET_NAME = re.compile(
    r'password|passwd|secret|token|transport_url|connection|credential'
    r'|(^|_)keys?$|backend_argument|hmac|(^|_)role_id$', re.IGNORECASE)
_COMMENTED = re.compile(r'^(\s*[#;]\s*)([\w.-]+)(\s*[=:]\s*)(.*)')


_Tag = Literal['replace', 'delete', 'insert', 'equal']
# {(group, option)} Nova defines with secret=True
Secrets = Collection[tuple[str, str]]


def is_secret(option: str, section: str | None = None,
              secrets: Secrets | None = None) -> bool:
    """True for an option whose value must never be shown.

    :param secrets: {(group, option)} Nova marks secret (groups lower case
        except DEFAULT), or None when Nova was not asked.
    """
    if _SECRET_NAME.search(option):
        return True
    if secrets and section is not None:
        group = inifile.normalize_section(section)
        return (group, option) in secrets or (
            group.lower(), option) in secrets
    return False


def _mask_comment(text: str) -> str:
    found = _COMMENTED.match(text)
    if found and _SECRET_NAME.search(found.group(2)):
        return found.group(1) + found.group(2) + found.group(3) + MASK
    return text


class _Shown:
    """The file's lines as the diff shows them, secrets masked; a line is
    masked by shape only when it is shown (a hunk shows a few)."""

    def __init__(self, ini: inifile.IniFile,
                 secrets: Secrets | None = None) -> None:
        self.ini = ini
        self.masked: dict[int, str] = {}
        for block in ini.blocks:
            for entry in block.entries:
                if not is_secret(entry.key, block.section, secrets):
                    continue
                self.masked[entry.first] = entry.spelling + MASK
                for index in range(entry.first + 1, entry.last + 1):
                    self.masked[index] = '    ' + MASK

    def __getitem__(self, index: int) -> str:
        if index not in self.masked:
            self.masked[index] = mask_secrets(
                _mask_comment(self.ini.lines[index].text))
        return self.masked[index]


def shown_lines(ini: inifile.IniFile,
                secrets: Secrets | None = None) -> list[str]:
    """The file's lines as the diff shows them, secrets masked."""
    shown = _Shown(ini, secrets)
    return [shown[index] for index in range(len(ini.lines))]


def _matched_pairs(a: Sequence[str],
                   b: Sequence[str]) -> list[tuple[int, int]]:
    """(i, j) with a[i] == b[j], increasing in both: common prefix and
    suffix, then lines unique on both sides as anchors (patience diff),
    again between anchors. O(n log n); difflib's SequenceMatcher without
    autojunk is quadratic on repeated lines (4,000 duplicates took 47 s)."""
    pairs = []
    work = [(0, len(a), 0, len(b))]
    while work:
        alo, ahi, blo, bhi = work.pop()
        while alo < ahi and blo < bhi and a[alo] == b[blo]:
            pairs.append((alo, blo))
            alo, blo = alo + 1, blo + 1
        while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
            ahi, bhi = ahi - 1, bhi - 1
            pairs.append((ahi, bhi))
        if alo == ahi or blo == bhi:
            continue
        anchors = _anchors(a, alo, ahi, b, blo, bhi)
        if not anchors:
            continue            # nothing in common: one replace block
        starts = [(alo, blo)] + [(i + 1, j + 1) for i, j in anchors]
        stops = anchors + [(ahi, bhi)]
        pairs += anchors
        work += [(i0, i1, j0, j1) for (i0, j0), (i1, j1)
                 in zip(starts, stops) if i0 < i1 and j0 < j1]
    return sorted(pairs)


def _anchors(a: Sequence[str], alo: int, ahi: int, b: Sequence[str],
             blo: int, bhi: int) -> list[tuple[int, int]]:
    """The longest increasing run of lines unique in both ranges."""
    count: dict[str, int] = {}
    where: dict[str, int] = {}
    for i in range(alo, ahi):
        count[a[i]] = count.get(a[i], 0) + 1
        where[a[i]] = i
    seen: dict[str, int] = {}
    for j in range(blo, bhi):
        if count.get(b[j]) == 1:
            seen[b[j]] = -1 if b[j] in seen else j
    unique = sorted((where[line], j) for line, j in seen.items() if j >= 0)
    # Longest increasing subsequence of j (patience sorting).
    tails: list[int] = []
    links: list[int | None] = []
    for position, (_, j) in enumerate(unique):
        pos = _bisect(unique, tails, j)
        links.append(tails[pos - 1] if pos else None)
        if pos == len(tails):
            tails.append(position)
        else:
            tails[pos] = position
    chain: list[tuple[int, int]] = []
    index: int | None = tails[-1] if tails else None
    while index is not None:
        chain.append(unique[index])
        index = links[index]
    return chain[::-1]


def _bisect(unique: list[tuple[int, int]], tails: list[int], j: int) -> int:
    lo, hi = 0, len(tails)
    while lo < hi:
        mid = (lo + hi) // 2
        if unique[tails[mid]][1] < j:
            lo = mid + 1
        else:
            hi = mid
    return lo


class _Matcher(difflib.SequenceMatcher[str]):
    """difflib's hunk grouping over _matched_pairs' opcodes."""

    def __init__(self, a: Sequence[str],
                 b: Sequence[str]) -> None:  # no super(): its index is the
        self.a, self.b = a, b                # cost

    def get_opcodes(self) -> list[tuple[_Tag, int, int, int, int]]:
        blocks: list[list[int]] = []
        for i, j in _matched_pairs(self.a, self.b):
            if blocks and blocks[-1][0] + blocks[-1][2] == i \
                    and blocks[-1][1] + blocks[-1][2] == j:
                blocks[-1][2] += 1
            else:
                blocks.append([i, j, 1])
        codes: list[tuple[_Tag, int, int, int, int]] = []
        i, j = 0, 0
        for ai, bj, size in blocks + [[len(self.a), len(self.b), 0]]:
            tag: _Tag | None = (
                'replace' if i < ai and j < bj else 'delete' if i < ai
                else 'insert' if j < bj else None)
            if tag:
                codes.append((tag, i, ai, j, bj))
            if size:
                codes.append(('equal', ai, ai + size, bj, bj + size))
            i, j = ai + size, bj + size
        return codes


def _range(start: int, stop: int) -> str:
    """difflib's unified range notation: 'start,length' (1-based)."""
    length = stop - start
    first = start + 1 if length else start
    return str(first) if length == 1 else f'{first},{length}'


def _show(prefix: str, ini: inifile.IniFile, shown: _Shown,
          index: int) -> str:
    text = prefix + shown[index] + '\n'
    if not ini.lines[index].end:
        text += '\\ No newline at end of file\n'
    return text


def unified_diff(old: inifile.IniFile, new: inifile.IniFile, fromfile: str,
                 tofile: str, context: int = 3,
                 secrets: Secrets | None = None) -> str:
    """The diff from ``old`` to ``new`` (both IniFile), secrets masked;
    ``secrets`` as for is_secret()."""
    old_keys = [line.text + line.end for line in old.lines]
    new_keys = [line.text + line.end for line in new.lines]
    old_shown = _Shown(old, secrets)
    new_shown = _Shown(new, secrets)
    out: list[str] = []
    for group in _Matcher(old_keys, new_keys).get_grouped_opcodes(context):
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
