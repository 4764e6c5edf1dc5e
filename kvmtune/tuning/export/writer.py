"""Writing an export (kvmtune.tuning.export): all or nothing.

Every file is checked first (the output directory can be written, a link
under it leads nowhere outside it, an existing file holds the same
content or is refused with the key it sets differently, never its
value), then each changed file is written atomically through
kvmtune.fileio. A file that already has the content is not touched, so a
second export with unchanged facts changes no byte (and no mtime); a
write that fails half-way removes what this export made.
"""

from collections.abc import Callable
from collections.abc import Iterable
import os
from typing import Any

from kvmtune.errors import InputError
from kvmtune import fileio
from kvmtune.fileio import mounts
from kvmtune import inputs
from kvmtune.tuning.export import common
from kvmtune.tuning.novaconf import inifile
from kvmtune import yamlinput


def _flatten(data: Any, prefix: str = '') -> dict[str, Any]:
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(_flatten(value, f'{prefix}{key}.'))
        return out
    return {prefix.rstrip('.'): data}


def _differing_key(path: str, old: str, new: str, fmt: str) -> str:
    """A phrase naming what ``old`` sets differently from ``new``."""
    olds: dict[str, Any] | None
    news: dict[str, Any] | None
    spell: Callable[[Any], str]
    try:
        if fmt == 'ini':
            olds = common.ini_items(inifile.IniFile(old))
            news = common.ini_items(inifile.IniFile(new))
            olds = {(f'[{section}] {option}'): ', '.join(values)
                    for section, options in olds.items()
                    for option, values in options.items()}
            news = {(f'[{section}] {option}'): ', '.join(values)
                    for section, options in news.items()
                    for option, values in options.items()}
            spell = str
        elif fmt == 'yaml':
            olds = _flatten(yamlinput.parse_yaml(old, path) or {})
            news = _flatten(yamlinput.parse_yaml(new, path) or {})
            spell = repr
        else:
            olds = news = None
        if olds is not None and news is not None:   # both or neither
            # The key, never the value found there: an override file may hold a
            # password (kolla's passwords, an OSA become password) or be a link
            # to a private file (tests/unit/test_hostile.py). The plan's own
            # value is kvmtune's and may be shown.
            for key, value in news.items():
                if key in olds and olds[key] != value:
                    return (f'{key} is set differently there, the plan '
                            f'wants {spell(value)}')
            for key in olds:
                if key not in news:
                    return f'{key} is set there, and the plan does not set it'
            for key, value in news.items():
                if key not in olds:
                    return (f'{key} is not there, the plan wants '
                            f'{spell(value)}')
    except (InputError, inifile.ParseError):
        pass
    for number, (a, b) in enumerate(zip(old.splitlines(),
                                        new.splitlines()), start=1):
        if a != b:
            what = ('its comment' if a.lstrip().startswith('#')
                    else 'line')
            return f'{what} on line {number} differs'
    return 'its content differs from what kvmtune writes'


def _existing_ancestor(path: str) -> str:
    """The nearest existing path from ``path`` up (a relative path ends
    at '.')."""
    probe = path
    while not os.path.exists(probe):
        parent = os.path.dirname(probe.rstrip('/')) or '.'
        if parent == probe:
            break
        probe = parent
    return probe


def _check_output(output: str) -> None:
    fix = 'give --output a directory you can write'
    if not output or not output.strip():
        # os.path.join('', path) is relative: files would land in the
        # current directory (tests/unit/test_hostile.py).
        raise InputError('an empty path', key='--output', fix=fix)
    if os.path.islink(output) and not os.path.isdir(output):
        # A dangling link or a loop: makedirs would fail half-way.
        raise InputError('is a symbolic link to no directory (dangling, '
                         'or a loop)', source=output, key='--output',
                         fix=f'remove the link {output} or give another '
                             '--output')
    probe = _existing_ancestor(output)
    if os.path.islink(probe) and not os.path.isdir(probe):
        raise InputError('is a symbolic link to no directory (dangling, '
                         'or a loop)', source=probe, key='--output',
                         fix=f'remove the link {probe} or give another '
                             '--output')
    if not os.path.isdir(probe):
        raise InputError('not a directory', source=probe, key='--output',
                         fix=fix)
    if not os.access(probe, os.W_OK | os.X_OK) and \
            mounts.read_only_error(probe) is None:
        # A read-only filesystem is named with the first file the export
        # would make there (plan_writes): one already there unchanged
        # needs no write.
        raise InputError('cannot write there: permission denied; nothing '
                         'written', source=probe, key='--output', fix=fix)


def _inside(output: str, target: str) -> bool:
    """Whether ``target``'s directory, links resolved, stays under
    ``output``: a link inside --output must not carry files out of it
    (tests/unit/test_hostile.py)."""
    root = os.path.realpath(output)
    real = os.path.realpath(os.path.dirname(target))
    return os.path.commonpath([root, real]) == root


def plan_writes(output: str, files: Iterable[common.OutFile]
                ) -> list[tuple[common.OutFile, str, str]]:
    """[(common.OutFile, target path, 'unchanged'|'created'|'replaced')], or
    InputError for the first file that may not be written."""
    _check_output(output)
    planned: list[tuple[common.OutFile, str, str]] = []
    for item in files:
        target = os.path.join(output, item.path)
        if not _inside(output, target):
            raise InputError('a link under --output leads out of it; '
                             'nothing written', source=target,
                             key='--output', fix='remove the link, or give '
                             'another --output')
        if os.path.isdir(os.path.dirname(target)):
            fileio.resolve(target, fix='remove what is in its place')
        if os.path.lexists(target):
            old = inputs.read_text(target)
            if old == item.text:
                planned.append((item, target, 'unchanged'))
                continue
            reason = _differing_key(target, old, item.text, item.fmt)
            raise InputError(
                f'exists and {reason}; nothing written', source=target,
                fix='kvmtune never overwrites an override file: move it '
                    'away (or merge it by hand) and export again')
        probe = _existing_ancestor(os.path.dirname(target))
        if not os.path.isdir(probe):
            raise InputError(f'cannot create it: {probe} is not a '
                             'directory; nothing written', source=target,
                             fix=f'remove {probe} or give another --output')
        read_only = mounts.read_only_error(probe, target)
        if read_only is not None:
            raise read_only
        if not os.access(probe, os.W_OK | os.X_OK):
            raise InputError('cannot create it: its directory is not '
                             'writable; nothing written', source=target,
                             fix='give --output a directory you can write')
        planned.append((item, target, 'created'))
    return planned


def write(output: str, files: Iterable[common.OutFile]
          ) -> list[tuple[str, str]]:
    """Write ``files`` under ``output``; return [(path, status)]."""
    planned = plan_writes(output, files)
    done: list[tuple[str, str]] = []
    made: list[str] = []
    try:
        for item, target, status in planned:
            if status == 'created':
                _makedirs(os.path.dirname(target), made)
                fileio.write_atomic(target, item.text, mode=0o644)
                made.append(target)
            done.append((target, status))
    except (OSError, InputError) as exc:
        # All or nothing: a full disk or no inodes left half-way left 3 of 6
        # files of a plan that only makes sense whole
        # (tests/unit/test_hostile.py).
        for path in reversed(made):
            try:
                (os.rmdir if os.path.isdir(path) else os.unlink)(path)
            except OSError:
                pass
        if isinstance(exc, InputError):
            raise
        raise InputError(f'cannot write: {exc.strerror}; nothing written '
                         '(the files of this export made so far were '
                         'removed)', source=getattr(exc, 'filename', None)
                         or output, key='--output',
                         fix='free space or inodes there, or give another '
                             '--output') from None
    return done


def _makedirs(path: str, made: list[str]) -> None:
    """os.makedirs(path), appending each directory it makes to ``made``
    as it goes (so a failure half-way can be undone)."""
    missing = []
    while path and not os.path.lexists(path):
        missing.append(path)
        path = os.path.dirname(path.rstrip('/'))
    for directory in reversed(missing):
        os.mkdir(directory)
        made.append(directory)
