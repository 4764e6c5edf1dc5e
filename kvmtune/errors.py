"""The one error operators see: a single line naming what, where and the fix.

Every expected failure (bad input, a cloud that says no) is raised as
KvmtuneError; the CLI prints it as one line and exits 2, with no traceback
and nothing written.

Every command and program of kvmtune exits with one of these: EXIT_STATUS
is the table, and EXIT_CODES says which of them each command returns; the
CLI reference shows both (doc/source/reference/cli.rst "Exit status"),
and tests/unit/test_docs.py checks the page against them.
"""

import re

EXIT_OK = 0         # done; in sync; matches
EXIT_DIFFERS = 1    # ran, and found a difference: drift, differs, stopped
EXIT_ERROR = 2      # could not run: bad input, a refusal, a cloud error
EXIT_UNCHECKED = 3  # ran, and could check nothing (verify: no PASS, no DRIFT)
EXIT_INTERRUPTED = 130  # Ctrl-C

# Every exit status of kvmtune and what it means, for the operator
# (the "Exit status" table of the CLI reference is this).
EXIT_STATUS: dict[int, str] = {
    EXIT_OK: 'done: in sync, matches, up, a plan without FAIL checks',
    EXIT_DIFFERS: 'it ran, and what it found is not as wanted: drift, a '
                  'difference, a service stopped, a guest without a '
                  'result, a plan with FAIL checks',
    EXIT_ERROR: 'it could not run: bad input, a refusal, a cloud that said '
                'no, a missing extra, a bug; one line on stderr says what, '
                'where and the fix',
    EXIT_UNCHECKED: 'it ran, and could check nothing: verify found no PASS '
                    'and no DRIFT (every check UNKNOWN or skipped)',
    EXIT_INTERRUPTED: 'interrupted (Ctrl-C)',
}

# The exit statuses each built-in command (kvmtune.cli.COMMANDS, by its
# words) returns; any command also exits 130 when interrupted. The CLI
# reference's "Exit status" tables are EXIT_STATUS and this, and
# tests/unit/test_docs.py checks the page, every command module's returns
# and the documented examples against them.
_OK_ERROR = (EXIT_OK, EXIT_ERROR)
_DIFFERS = (EXIT_OK, EXIT_DIFFERS, EXIT_ERROR)
EXIT_CODES: dict[tuple[str, ...], tuple[int, ...]] = {
    ('host', 'inspect'): _OK_ERROR,
    ('host', 'capture'): _OK_ERROR,
    ('host', 'tag'): _OK_ERROR,
    ('profile', 'list'): _OK_ERROR,
    ('profile', 'show'): _OK_ERROR,
    ('profile', 'validate'): _OK_ERROR,
    ('plan',): _DIFFERS,                # 1: the plan has FAIL checks
    ('nova-conf', 'apply'): _OK_ERROR,
    ('pages', 'apply'): _OK_ERROR,
    ('boot', 'apply'): _OK_ERROR,
    ('rollout',): _DIFFERS,             # 1: --check, a batch refused
    # 1: drift; 3: nothing could be checked
    ('verify',): _DIFFERS + (EXIT_UNCHECKED,),
    ('capacity',): _OK_ERROR,
    ('rollout-step',): _DIFFERS,        # 1: the gate found drift
    ('rollout-report',): _DIFFERS,      # 1: a host not (yet) passed
    ('export',): _OK_ERROR,
    ('flavor', 'apply'): _OK_ERROR,
    ('flavor', 'diff'): _DIFFERS,       # 1: the flavor differs
    ('flavor', 'remove'): _OK_ERROR,
    ('image', 'build'): _OK_ERROR,
    ('baseline',): _OK_ERROR,
    ('bench', 'local'): _DIFFERS,       # 1: a guest without a result
    ('bench', 'nested'): _DIFFERS,      # 1: a level without a result
    ('cloud',): _DIFFERS,               # 1: status: not up
    ('rally', 'task-path'): _OK_ERROR,
    ('monitoring', 'rules-path'): _OK_ERROR,
    ('rally', 'env'): _OK_ERROR,
    ('report',): _OK_ERROR,
    ('main-job',): _DIFFERS,            # 1: --strict, an SLA failed
}

# What stands in for a secret in every line and diff kvmtune prints.
MASK = '***'

# Secrets by the shape of the value, wherever they appear (error lines, the
# nova.conf diff): no list of option names is needed for these.
#
# Every error line and every line of a diff passes here, so the time is
# linear in the text and small (benchmarks/long_values.py: a nova.conf
# value of 200,000
# characters took 82 s, the patterns' lookaheads rescanning a run of word
# characters from each of its positions). Each shape starts from an anchor
# found by str.find, which scans at memory speed: "://", a secret word in the
# case-folded text, a run of 32 token or hex characters in the text mapped to
# one category letter per character (_CATEGORIES). The run around an anchor is
# read once, and the next search starts after it. A shape matches exactly what
# its regular expression in the comment above it matched
# (tests/unit/test_errors.py compares them on random text).

# scheme://user:password@host (rabbit://, mysql+pymysql://, redis://:pw@)
#   ([A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:)[^\s@]+(?=@)  ->  \1***
# the scheme: the run of scheme characters before "://" (read on the
# reversed text) with a letter in it
_SCHEME = re.compile(r'[A-Za-z0-9+.-]*')
_LETTER = re.compile(r'[A-Za-z]')
_USER = re.compile(r'[^\s:/@]*:')
_PASSWORD_END = re.compile(r'[\s@]')

# password:xyz, token=xyz, api_key = "xyz" (oslo.cache backend_argument,
# query strings, key=value lists)
#   (?i)(?<![\w/.-])([\w.-]*(?:password|passwd|pwd|secret|token|
#   api[_-]?key|access[_-]?key|private[_-]?key|credential)[\w.-]*
#   (?:\s*=\s*|:(?=\S)))("[^"]*"|'[^']*'|[^\s,;&]+)  ->  \1***
# a name (a run of [\w.-] not after "/") holding a secret word, found by
# a part of the word every spelling has, then "=" or ":", then the value
_NEEDLES = ('ssw', 'pwd', 'secret', 'token', 'key', 'redential')
_SECRET_WORD = re.compile(r'password|passwd|pwd|secret|token|'
                          r'(?:api|access|private)[_-]?key|credential')
# what re.IGNORECASE folds onto an ASCII letter besides its other case
# (found by matching every code point; U+212A KELVIN SIGN lower()s to k),
# so that lower() keeps every index
_FOLDS = {0x130: 'i', 0x131: 'i', 0x17f: 's'}
_NAME = re.compile(r'[\w.-]*')
_ASSIGN = re.compile(r'\s*=\s*|:(?=\S)')
_VALUE = re.compile(r'"[^"]*"|\'[^\']*\'|[^\s,;&]+')

# crypt(3) hashes as in /etc/shadow: $6$salt$hash, $y$..., $2b$... (linear
# as it stands: every attempt starts at a "$" and ends the run it reads)
_CRYPT = re.compile(r'\$(?:1|2[abxy]?|5|6|7|y|gy|md5|sha1)\$[^\s:]+')
# Authorization header values (linear too; run only when a word is there)
_AUTHORIZATION = re.compile(r'(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}')

# long random-looking tokens (base64 with mixed case and digits, hex)
#   (?<![\w/.-])(?=[\w+=-]*\d)(?=[\w+=-]*[a-z])(?=[\w+=-]*[A-Z])
#   [A-Za-z0-9+_=-]{32,}  ->  ***
#   (?<![\w/.-])[0-9a-fA-F]{32,}(?![\w/.-])  ->  ***
# One category letter per character: d 0-9, a a-f, l g-z, A A-F, u G-Z,
# p + and =, x _ and -, / / and ., n a decimal digit beyond ASCII (\d, \w),
# w another word character beyond ASCII (\w, as re's: str.isalnum), and a
# space for anything else.


class _Categories(dict[int, str]):
    def __missing__(self, code: int) -> str:
        char = chr(code)
        self[code] = ('n' if char.isdecimal() else
                      'w' if char.isalnum() else ' ')
        return self[code]


_CATEGORIES = _Categories({code: ' ' for code in range(128)})
for _chars, _letter in (('0123456789', 'd'), ('abcdef', 'a'),
                        ('ghijklmnopqrstuvwxyz', 'l'), ('ABCDEF', 'A'),
                        ('GHIJKLMNOPQRSTUVWXYZ', 'u'), ('+=', 'p'),
                        ('_-', 'x'), ('/.', '/')):
    _CATEGORIES.update((ord(c), _letter) for c in _chars)
_TOKEN = str.maketrans({c: 't' if c in 'daAlupx' else ' '
                        for c in 'daAlupx/nw '})        # [A-Za-z0-9+_=-]
_HEX = str.maketrans({c: 'h' if c in 'daA' else ' '
                      for c in 'daAlupx/nw '})          # [0-9a-fA-F]
_TOKEN_NEEDS = ('dn', 'al', 'Au')                       # \d [a-z] [A-Z]
_NOT_BEFORE = 'daAluxnw/'                               # [\w/.-]


def _run(pattern: 're.Pattern[str]', text: str, start: int) -> str:
    """What ``pattern`` (a run: it matches the empty text too) matches at
    ``start``."""
    found = pattern.match(text, start)
    return found.group() if found else ''


def _url_passwords(text: str) -> str:
    out, done = [], 0
    reverse = ''
    stop = -1           # the first whitespace or "@" after a user's ":"
    at = text.find('://')
    while at != -1:
        reverse = reverse or text[::-1]
        scheme = _run(_SCHEME, reverse, len(text) - at)
        user = _USER.match(text, at + 3)
        if user and _LETTER.search(scheme):
            # the password runs to the next whitespace or "@", found once
            # for every user before it ("a://b:" repeated)
            if stop < user.end():
                found = _PASSWORD_END.search(text, user.end())
                stop = found.start() if found else len(text)
            if stop > user.end() and text.startswith('@', stop):
                out += [text[done:user.end()], MASK]
                done = stop
                at = text.find('://', done)
                continue
        at = text.find('://', at + 3)
    return ''.join(out) + text[done:]


def _folded(text: str) -> str:
    """``text`` as re.IGNORECASE compares it with ASCII letters, index
    for index."""
    return (text if text.isascii() else text.translate(_FOLDS)).lower()


def _key_values(text: str, folded: str) -> str:
    if '=' not in text and ':' not in text:
        return text
    out, done = [], 0
    reverse = ''
    # the next place of each needle at or after ``start``
    ahead = [folded.find(needle) for needle in _NEEDLES]
    start = 0
    while True:
        for i, needle in enumerate(_NEEDLES):
            if -1 < ahead[i] < start:
                ahead[i] = folded.find(needle, start)
        found = [at for at in ahead if at != -1]
        if not found:
            break
        reverse = reverse or text[::-1]
        # the name (a run of [\w.-]) around the first needle: a word of
        # it holds a needle, so no name before this one holds a word
        word = min(found)
        begin = word - len(_run(_NAME, reverse, len(text) - word))
        start = word + len(_run(_NAME, text, word))
        # a name that began inside the last value, or after "/", is none
        if begin >= done and (begin == 0 or text[begin - 1] != '/') and \
                _SECRET_WORD.search(folded, begin, start):
            assign = _ASSIGN.match(text, start)
            value = assign and _VALUE.match(text, assign.end())
            if value:
                out += [text[done:value.start()], MASK]
                done = start = value.end()
    return ''.join(out) + text[done:]


def _authorization(text: str, folded: str) -> str:
    out, done = [], 0
    # where "bearer" or "basic" may begin: their ends "rer" and "sic" (no
    # "a" or "b": str.find skips fast over text of those letters)
    needles = (('rer', 3), ('sic', 2))
    ahead = [folded.find(needle, back) for needle, back in needles]
    begin = 0
    while True:
        for i, (needle, back) in enumerate(needles):
            if -1 < ahead[i] < begin + back:
                ahead[i] = folded.find(needle, begin + back)
        found = [at - back for at, (_, back) in zip(ahead, needles)
                 if at != -1]
        if not found:
            break
        begin = min(found)
        header = _AUTHORIZATION.match(text, begin)
        if header:
            out += [text[done:begin], header.group(1), ' ', MASK]
            done = begin = header.end()
        else:
            begin += 1
    return ''.join(out) + text[done:]


def _end(text: str, char: str, start: int) -> int:
    """Where ``char`` is next at or after ``start``, else the end."""
    at = text.find(char, start)
    return len(text) if at == -1 else at


def _long_tokens(text: str, cat: str) -> str:
    tokens = cat.translate(_TOKEN)
    out, done = [], 0
    run = (-1, -1)                  # the [\w+=-] run: start, end
    found = [(-1, -1)] * 3          # (searched from, found at) per need
    region = tokens.find('t' * 32)
    while region != -1:
        start, end = region, _end(tokens, ' ', region)
        region = tokens.find('t' * 32, end)
        # the first position a token may start at: the run's start, else
        # after a "+" or "="; a later start has less of the run after it,
        # so where the first fails every later one fails
        if start and cat[start - 1] in _NOT_BEFORE:
            start = cat.find('p', start, end - 32) + 1
            if not start:
                continue
        if not run[0] <= start < run[1]:
            run = (start, min(_end(cat, '/', start), _end(cat, ' ', start)))
            found = [(-1, -1)] * 3
        # the first digit, lower and upper case letter at or after start
        # in the run, each searched again only once start passed it
        for i, chars in enumerate(_TOKEN_NEEDS):
            since, at = found[i]
            if since == -1 or -1 < at < start:
                hits = [h for h in (cat.find(c, start, run[1])
                                    for c in chars) if h != -1]
                found[i] = (start, min(hits) if hits else -1)
        if all(at != -1 for _, at in found):
            out += [text[done:start], MASK]
            done = end
    return ''.join(out) + text[done:]


def _hex_strings(text: str, cat: str) -> str:
    hexes = cat.translate(_HEX)
    out, done = [], 0
    start = hexes.find('h' * 32)
    while start != -1:
        end = _end(hexes, ' ', start)
        if (not start or cat[start - 1] not in _NOT_BEFORE) and (
                end == len(cat) or cat[end] not in _NOT_BEFORE):
            out += [text[done:start], MASK]
            done = end
        start = hexes.find('h' * 32, end)
    return ''.join(out) + text[done:]


def mask_secrets(text: str) -> str:
    """``text`` with anything shaped like a credential replaced by ***."""
    text = _url_passwords(text)
    folded = _folded(text)
    masked = _key_values(text, folded)
    if '$' in masked:
        masked = _CRYPT.sub(MASK, masked)
    if masked != text:
        text, folded = masked, _folded(masked)
    text = _authorization(text, folded)
    if len(text) < 32:
        return text
    cat = text.translate(_CATEGORIES)
    masked = _long_tokens(text, cat)
    if masked != text:
        text, cat = masked, masked.translate(_CATEGORIES)
    return _hex_strings(text, cat)


class KvmtuneError(Exception):
    """An expected failure with a one-line message.

    :param problem: what is wrong, e.g. "not a valid page size '3M'"
    :param source: the file, URL or object it came from (optional)
    :param key: the key, option or field inside it (optional)
    :param fix: what the operator should do about it (optional)
    """

    exit_code = EXIT_ERROR

    def __init__(self, problem: object, source: object = None,
                 key: str | None = None, fix: str | None = None) -> None:
        self.problem = str(problem)
        self.source = source
        self.key = key
        self.fix = fix
        super().__init__(self.line())

    def line(self) -> str:
        where = ': '.join(str(p) for p in (self.source, self.key) if p)
        text = f'{where}: {self.problem}' if where else self.problem
        if self.fix:
            text += f' (fix: {self.fix})'
        # One line, always: fold anything multi-line a library handed us;
        # and never a credential, whatever the input echoed.
        return mask_secrets(' '.join(text.split()))


class InputError(KvmtuneError):
    """A file, option or value given to kvmtune is wrong."""


class CloudError(KvmtuneError):
    """The cloud refused, failed or could not be reached."""
