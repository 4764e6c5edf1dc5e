"""The one reader per format: every file or text kvmtune parses comes here.

Whatever the input, a failure is the project's one error (InputError: one
line with the problem, the source, the key and a fix), never a traceback,
a MemoryError or a RecursionError:

- read_bytes / read_text: regular files only (a FIFO is never opened, a
  device never read), a size bound, strict UTF-8 reported as one line;
  read_stdin: standard input (``-`` given for a file), the same bound.
- YAML: kvmtune.yamlinput (load_yaml / parse_yaml), on read_text().
- load_json / parse_json: nesting bounded, numbers finite (NaN, Infinity and
  1e400 are refused), duplicate keys refused, integers of sane length.
- number(): one figure from a tool or a file, finite and (by default)
  non-negative, or an InputError naming what it is.
"""

import json
import math
import os
import re
from typing import Any
from typing import TypeVar

from kvmtune.errors import InputError
from kvmtune.fileio import kind as _kind

MAX_BYTES = 64 << 20        # 64 MiB: far above any nova.conf, profile, facts
MAX_DEPTH = 64              # facts and reports nest about 6 levels


_CONTROL = re.compile(r'[\x00-\x1f\x7f]')
_T = TypeVar('_T')


def plain_text(value: _T, *, source: object, key: str | None,
               fix: str | None = None) -> _T:
    """``value`` (a string, or a list of them) when it holds no control
    character; else the one InputError. Every value that reaches a generated
    file (nova.conf, an override file, a kernel command line, a modprobe line,
    an extra spec) passes here: a newline in a profile parameter would
    otherwise write a section or option nobody planned
    (tests/unit/test_hostile.py), and none of those formats has a use for one.
    The error names the key and never quotes the value."""
    for item in value if isinstance(value, (list, tuple)) else [value]:
        if isinstance(item, str) and _CONTROL.search(item):
            raise InputError(
                'holds a control character (newline, tab, escape, ...)',
                source=source, key=key,
                fix=fix or 'give the value on one line, without control '
                           'characters')
    return value


def within(path: str, directory: str) -> bool:
    """Whether ``path`` is ``directory`` or under it, as
    ``os.path.commonpath([path, directory]) == directory`` says; a plain
    absolute ``directory`` (as realpath and the kernel give it) by the
    prefix alone: commonpath's split and join was a tenth of reading a
    host tree's facts (rollout --check, benchmarks/rollout_check.py)."""
    if (path == directory or path.startswith(directory + '/')) and \
            directory.startswith('/') and not directory.startswith('//') \
            and not directory.endswith(('/', '/.')) and \
            '//' not in directory and '/./' not in directory:
        return True
    return os.path.commonpath([path, directory]) == directory


def _opened_outside(fd: int, inside: str) -> bool:
    """Whether the file open as ``fd`` lies outside the directory
    ``inside``: one readlink of /proc/self/fd (os.path.realpath's walk,
    component by component, doubled host inspect's time on a 4,096-CPU
    tree)."""
    try:
        real = os.readlink(f'/proc/self/fd/{fd}')
    except OSError:
        return True
    return not within(real, inside)


def read_bytes(path: str, *, max_bytes: int = MAX_BYTES,
               source: object = None, fix: str | None = None,
               inside: str | None = None) -> bytes:
    """The bytes of the regular file ``path`` (symlinks followed, but
    never out of the real directory ``inside`` when it is given: a
    captured host tree)."""
    source = source or path or "''"
    fix = fix or 'give the path of a readable regular file'
    if not isinstance(path, str) or not path.strip():
        raise InputError('an empty path', source=source, fix=fix)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise InputError('no such file', source=source, fix=fix) from None
    except OSError as exc:
        raise InputError(f'cannot read it: {exc.strerror}', source=source,
                         fix=fix) from None
    what = _kind(info.st_mode)
    if what:
        raise InputError(f'is {what}, not a regular file', source=source,
                         fix=fix)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise InputError(f'cannot read it: {exc.strerror}', source=source,
                         fix=fix) from None
    try:
        if inside is not None and _opened_outside(fd, inside):
            raise InputError('is a link out of the tree', source=source,
                             fix=f'give files inside {inside}')
        info = os.fstat(fd)         # what was opened, not what was stat'ed
        what = _kind(info.st_mode)
        if what:
            raise InputError(f'is {what}, not a regular file',
                             source=source, fix=fix)
        if info.st_size > max_bytes:
            raise InputError(f'is {info.st_size} bytes, more than the '
                             f'{max_bytes} kvmtune reads', source=source,
                             fix='give the right file')
        chunks: list[bytes] = []
        size = 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:
                raise InputError(f'grew beyond {max_bytes} bytes while '
                                 'being read', source=source,
                                 fix='give the right file')
            chunks.append(chunk)
    except OSError as exc:
        raise InputError(f'cannot read it: {exc.strerror}', source=source,
                         fix=fix) from None
    finally:
        os.close(fd)
    return b''.join(chunks)


def read_stdin(*, max_bytes: int = MAX_BYTES,
               source: object = '<stdin>') -> bytes:
    """The bytes of standard input, read to its end (a caller that passes
    its input along, as ``--plan -``), within the size bound."""
    import sys

    stream = getattr(sys.stdin, 'buffer', None)
    if stream is None or sys.stdin.isatty():
        raise InputError('nothing comes on standard input', source=source,
                         fix='pipe the input in, or give a file')
    try:
        data = stream.read(max_bytes + 1)
    except OSError as exc:
        raise InputError(f'cannot read it: {exc.strerror}', source=source,
                         fix='pipe the input in, or give a file') from None
    if len(data) > max_bytes:
        raise InputError(f'more than the {max_bytes} bytes kvmtune reads',
                         source=source, fix='give the right input')
    return bytes(data)


def names_in(directory: str, suffix: str, *, key: str | None,
             fix: str | None) -> dict[str, str]:
    """{stem: path} of the files in ``directory`` whose names end in
    ``suffix``, sorted by name (an option's directory of inputs); one
    InputError when the directory cannot be listed."""
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(suffix))
    except OSError as exc:
        raise InputError(f'cannot list it: {exc.strerror}', source=directory,
                         key=key, fix=fix) from None
    return {name[:-len(suffix)]: os.path.join(directory, name)
            for name in names}


def decode(data: bytes, source: object, fix: str | None = None) -> str:
    """UTF-8 text of ``data``, or one line saying where it is not."""
    try:
        text = data.decode('utf-8')
    except UnicodeDecodeError as exc:
        line = data.count(b'\n', 0, exc.start) + 1
        raise InputError(f'not UTF-8 text (byte {exc.start}, line {line})',
                         source=source,
                         fix=fix or 'save the file as UTF-8') from None
    if '\0' in text:
        raise InputError('has NUL bytes: not a text file', source=source,
                         fix=fix or 'give a text file')
    return text


def read_text(path: str, *, max_bytes: int = MAX_BYTES,
              source: object = None, fix: str | None = None) -> str:
    """The UTF-8 text of the regular file ``path``."""
    source = source or path
    return decode(read_bytes(path, max_bytes=max_bytes, source=source,
                             fix=fix), source)


# -- JSON ------------------------------------------------------------------

class _Refused(ValueError):
    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(problem)
        self.problem, self.fix = problem, fix


def _constant(name: str) -> float:
    raise _Refused(f'{name} is not a number', 'write a finite number')


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f'{text} is beyond the range of a number',
                       'write a finite number')
    return value


def _int(text: str) -> int:
    if len(text) > 64:
        raise _Refused(f'an integer of {len(text)} digits',
                       'write a number of sane size')
    return int(text)


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = {}
    for key, value in pairs:
        if key in result:
            raise _Refused(f'duplicate key {key!r}', 'keep one of them')
        result[key] = value
    return result


def _depth_ok(value: Any, max_depth: int) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > max_depth:
                return False
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return True


def parse_json(text: str | bytes, source: object, *, key: str | None = None,
               max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value of ``text`` (str or bytes) with every number finite;
    InputError naming ``source`` (and ``key``) otherwise."""
    if isinstance(text, bytes):
        text = decode(text, source)
    try:
        value = json.loads(text, parse_constant=_constant,
                           parse_float=_float, parse_int=_int,
                           object_pairs_hook=_pairs)
    except _Refused as exc:
        raise InputError(exc.problem, source=source, key=key,
                         fix=exc.fix) from None
    except json.JSONDecodeError as exc:
        raise InputError(f'not JSON ({exc.msg} at line {exc.lineno}, '
                         f'column {exc.colno})', source=source, key=key,
                         fix='give the complete, unedited JSON') from None
    except (RecursionError, MemoryError):
        raise InputError('JSON nested too deeply', source=source, key=key,
                         fix='give the file kvmtune wrote') from None
    except ValueError as exc:
        raise InputError(f'not JSON ({exc})', source=source, key=key,
                         fix='give the complete, unedited JSON') from None
    if not _depth_ok(value, max_depth):
        raise InputError(f'JSON nested deeper than {max_depth} levels',
                         source=source, key=key,
                         fix='give the file kvmtune wrote')
    return value


def load_json(path: str, *, max_bytes: int = MAX_BYTES,
              max_depth: int = MAX_DEPTH, source: object = None) -> Any:
    """parse_json() of the regular file ``path``."""
    source = source or path
    data = read_bytes(path, max_bytes=max_bytes, source=source)
    return parse_json(decode(data, source), source, max_depth=max_depth)


# -- numbers ---------------------------------------------------------------

def number(value: object, *, source: object, key: str | None,
           minimum: float | None = 0.0, unit: str | None = None,
           fix: str | None = None) -> float:
    """``value`` (a number or its text) as a finite float >= ``minimum``
    (None: any sign); InputError naming source and key otherwise.

    Booleans are not numbers; '1e400', 'inf' and 'nan' are refused.
    """
    shown = f'{value!r}'[:40]
    fix = fix or 'the tool output is damaged or truncated; run it again'
    if isinstance(value, bool) or value is None:
        raise InputError(f'{shown} is not a number', source=source,
                         key=key, fix=fix)
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise InputError(f'{shown} is not a number', source=source,
                             key=key, fix=fix) from None
    elif isinstance(value, int):
        value = float(value) if abs(value) < 1 << 1000 else math.inf
    elif not isinstance(value, float):
        raise InputError(f'{shown} is not a number', source=source,
                         key=key, fix=fix)
    if not math.isfinite(value):
        raise InputError(f'{shown} is not a finite number', source=source,
                         key=key, fix=fix)
    if minimum is not None and value < minimum:
        what = f' {unit}' if unit else ''
        raise InputError(f'{shown}{what} is below {minimum:g}',
                         source=source, key=key, fix=fix)
    return value
