"""The one error operators see: a single line naming what, where and the fix.

Every expected failure (bad input, a cloud that says no) is raised as
KvmtuneError; the CLI prints it as one line and exits 2, with no traceback
and nothing written.
"""

import re

MASK = '***'
# Secrets by the shape of the value, wherever they appear (error lines, the
# nova.conf diff): no list of option names is needed for these.
_SECRET_SHAPES = (
    # scheme://user:password@host (rabbit://, mysql+pymysql://, redis://:pw@)
    (re.compile(r'([A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:)[^\s@]+(?=@)'),
     r'\1' + MASK),
    # password:xyz, token=xyz, api_key = "xyz" (oslo.cache backend_argument,
    # query strings, key=value lists)
    (re.compile(r'(?i)(?<![\w/.-])([\w.-]*(?:password|passwd|pwd|secret|'
                r'token|api[_-]?key|access[_-]?key|private[_-]?key|'
                r'credential)[\w.-]*(?:\s*=\s*|:(?=\S)))'
                r'("[^"]*"|\'[^\']*\'|[^\s,;&]+)'),
     r'\1' + MASK),
    # crypt(3) hashes as in /etc/shadow: $6$salt$hash, $y$..., $2b$...
    (re.compile(r'\$(?:1|2[abxy]?|5|6|7|y|gy|md5|sha1)\$[^\s:]+'), MASK),
    # Authorization header values
    (re.compile(r'(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}'),
     r'\1 ' + MASK),
    # long random-looking tokens (base64 with mixed case and digits, hex)
    (re.compile(r'(?<![\w/.-])(?=[\w+=-]*\d)(?=[\w+=-]*[a-z])'
                r'(?=[\w+=-]*[A-Z])[A-Za-z0-9+_=-]{32,}'), MASK),
    (re.compile(r'(?<![\w/.-])[0-9a-fA-F]{32,}(?![\w/.-])'), MASK),
)


def mask_secrets(text: str) -> str:
    """``text`` with anything shaped like a credential replaced by ***."""
    for pattern, replacement in _SECRET_SHAPES:
        text = pattern.sub(replacement, text)
    return text


class KvmtuneError(Exception):
    """An expected failure with a one-line message.

    :param problem: what is wrong, e.g. "not a valid page size '3M'"
    :param source: the file, URL or object it came from (optional)
    :param key: the key, option or field inside it (optional)
    :param fix: what the operator should do about it (optional)
    """

    exit_code = 2

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
