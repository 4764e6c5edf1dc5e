"""Which files a Nova service reads, in oslo.config's order, and which value
of an option it ends up with: the one model of that precedence in kvmtune
(doc/design.md 9.5; used by verify and by export's drop-in checks).

Read from oslo.config's own code (openstack/oslo.config,
oslo_config/cfg.py: ``_get_config_dirs``, ``_search_dirs``,
``find_config_files``, ``find_config_dirs``,
``ConfigOpts._parse_config_files``, ``_Namespace._get_file_value``) and
checked against it (tests/unit/tuning/novaconf/test_effective.py runs
oslo.config with Nova's options on the same files and argv):

1. The default files (``nova.conf``, then ``<prog>.conf``, each from the
   first of ~/.nova/, ~/, /etc/nova/, /etc/ that has it) are parsed only
   when the command line has no ``--config-file``.
2. The default directories (``nova.conf.d/``, then ``<prog>.conf.d/``,
   found the same way) are parsed only when it has no ``--config-dir``:
   so a service started ``--config-file /etc/nova/nova.conf`` still reads
   /etc/nova/nova.conf.d/ and nova-compute.conf.d/, but *before* that
   file, which then wins over them.
3. Then every ``--config-file``/``--config-dir`` at its place in argv; a
   directory's ``*.conf`` files in sorted order.

A single-valued option takes the value of the last file parsed that sets
it (the last line within a file); a multi-valued one (a list in a plan:
``[DEFAULT] reserved_huge_pages``) adds up the values of every file in
parse order. An ``OS_<GROUP>__<OPTION>`` environment variable beats every
file (oslo_config/sources/_environment.py).
"""

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import dataclasses
import glob
import os
import re
from typing import Any

from kvmtune.errors import InputError
from kvmtune import inputs
from kvmtune.tuning.novaconf import inifile

PROJECT = 'nova'
SEARCH_DIRS = ('~/.nova', '~', '/etc/nova', '/etc')
_RETITLED = re.compile(r'^[\w-]+: .*\[(?P<argv>.*)\]\s*\Z')
_PYTHON = re.compile(r'python[0-9.]*\Z')


@dataclasses.dataclass
class Source:
    path: str            # as the service names it (not under a root)
    origin: str          # 'default' or 'argv'


def real_argv(argv: Iterable[str]) -> list[str]:
    """The argv oslo.config saw: the script and its arguments, without
    the interpreter (``python3 /usr/bin/nova-compute ...``) and out of
    oslo.service's retitled form (``nova-compute: master process
    [/usr/bin/nova-compute --config-file ...]``)."""
    argv = list(argv)
    if len(argv) == 1:
        found = _RETITLED.match(argv[0])
        if found:
            argv = found.group('argv').split()
    if argv and _PYTHON.match(os.path.basename(argv[0])):
        argv = argv[1:]
        while argv and argv[0].startswith('-'):
            argv = argv[1:]
    return argv


def prog_of(argv: Sequence[str]) -> str:
    """oslo.config's ``prog``: the script's base name without .py."""
    name = os.path.basename(real_argv(argv)[0]) if argv else PROJECT
    return name[:-3] if name.endswith('.py') else name


def _cli_sources(args: Iterable[str]) -> list[tuple[str, str]]:
    """[(kind, value)] of --config-file/--config-dir in argv order."""
    found: list[tuple[str, str]] = []
    words = iter(args)
    for word in words:
        for kind in ('--config-file', '--config-dir'):
            if word == kind:
                value = next(words, None)
                if value is not None:
                    found.append((kind, value))
            elif word.startswith(kind + '='):
                found.append((kind, word[len(kind) + 1:]))
    return found


class Reader:
    """Files and directories of one host, live or under a ``root``."""

    def __init__(self, root: str = '/', home: str | None = None) -> None:
        self.root = root
        self.home = home

    def at(self, path: str) -> str:
        return os.path.join(self.root, path.lstrip('/'))

    def search_dirs(self) -> list[str]:
        dirs = []
        for directory in SEARCH_DIRS:
            if directory.startswith('~'):
                if not self.home:
                    continue        # the service's HOME is not known
                directory = self.home + directory[1:]
            dirs.append(os.path.normpath(directory))
        return dirs

    def first(self, name: str, is_dir: bool) -> str | None:
        for directory in self.search_dirs():
            path = os.path.join(directory, name)
            check = os.path.isdir if is_dir else os.path.isfile
            if check(self.at(path)):
                return path
        return None

    def dir_files(self, directory: str) -> list[str]:
        return sorted(os.path.join(directory, os.path.basename(p))
                      for p in glob.glob(os.path.join(
                          glob.escape(self.at(directory)), '*.conf')))

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(self.at(path))

    def read_text(self, path: str) -> str:
        return inputs.read_text(self.at(path), source=path)


class Overlay(Reader):
    """A host as ``under`` (a Reader; None: a host with no files) shows it,
    plus ``files`` {path: text} laid over it: the files an export is about
    to write, seen where the service will find them."""

    def __init__(self, files: Mapping[str, str],
                 under: Reader | None = None) -> None:
        super().__init__(under.root if under else '/',
                         under.home if under else None)
        self.files = {os.path.normpath(path): text
                      for path, text in files.items()}
        self.under = under

    def _virtual_dir(self, path: str) -> bool:
        path = os.path.normpath(path)
        return any(os.path.dirname(name) == path for name in self.files)

    def first(self, name: str, is_dir: bool) -> str | None:
        for directory in self.search_dirs():
            path = os.path.join(directory, name)
            if is_dir and (self._virtual_dir(path) or self.is_dir(path)):
                return path
            if not is_dir and (os.path.normpath(path) in self.files or (
                    self.under and os.path.isfile(self.under.at(path)))):
                return path
        return None

    def is_dir(self, path: str) -> bool:
        return self._virtual_dir(path) or bool(
            self.under and self.under.is_dir(path))

    def dir_files(self, directory: str) -> list[str]:
        found = set(self.under.dir_files(directory)) if self.under else set()
        found.update(name for name in self.files
                     if os.path.dirname(name) == os.path.normpath(directory)
                     and name.endswith('.conf'))
        return sorted(found)

    def read_text(self, path: str) -> str:
        path = os.path.normpath(path)
        if path in self.files:
            return self.files[path]
        if self.under is None:
            raise InputError('not on this host (only the files given are '
                             'known)', source=path,
                             fix='run on the host to have its files read')
        return self.under.read_text(path)


def sources(argv: Sequence[str], reader: Reader | None = None
            ) -> list[Source]:
    """[Source] the service started with ``argv`` parses, in order."""
    reader = reader or Reader()
    argv = real_argv(argv)
    prog = prog_of(argv)
    cli = _cli_sources(argv[1:])
    found = []
    if not any(kind == '--config-file' for kind, _ in cli):
        for name in (f'{PROJECT}.conf', f'{prog}.conf'):
            path = reader.first(name, is_dir=False)
            if path:
                found.append(Source(path, 'default'))
    if not any(kind == '--config-dir' for kind, _ in cli):
        for name in (f'{PROJECT}.conf.d', f'{prog}.conf.d'):
            path = reader.first(name, is_dir=True)
            if path:
                found.extend(Source(p, 'default')
                             for p in reader.dir_files(path))
    for kind, value in cli:
        if kind == '--config-file':
            found.append(Source(value, 'argv'))
        else:
            found.extend(Source(p, 'argv') for p in reader.dir_files(value))
    return found


@dataclasses.dataclass
class Effective:
    """What a service reads: its files in order and each option's values
    (with the file each came from), after environment overrides."""
    sources: list[Source]
    # path -> why it could not be read
    unreadable: dict[str, str]
    # (section, option) -> [(value, path)]
    values: dict[tuple[str, str], list[tuple[str, str]]]
    # (section, option) -> value
    environment: dict[tuple[str, str], str]

    def get(self, section: str, option: str,
            multi: bool = False) -> tuple[Any, Any]:
        """(value, where): the value the service uses and the file (or
        ``environment``) it came from; (None, None) when no file sets it.
        ``multi``: the list of every file's values, and the files."""
        key = (inifile.normalize_section(section), option)
        if key in self.environment:
            return self.environment[key], 'environment'
        found = self.values.get(key, [])
        if not found:
            return (None, None)
        if multi:
            return ([value for value, _ in found],
                    sorted({path for _, path in found}))
        return found[-1]


def _env_key(name: str) -> tuple[str, str] | None:
    """OS_<GROUP>__<OPTION> -> (section, option), or None."""
    if not name.startswith('OS_') or '__' not in name:
        return None
    group, _, option = name[3:].partition('__')
    if not group or not option:
        return None
    section = 'DEFAULT' if group == 'DEFAULT' else group.lower()
    return section, option.lower()


def effective(argv: Sequence[str], reader: Reader | None = None,
              environ: Mapping[str, str] | None = None) -> Effective:
    """The Effective configuration of a service started with ``argv``
    (its environment ``environ``, when known)."""
    reader = reader or Reader()
    parsed = sources(argv, reader)
    values: dict[tuple[str, str], list[tuple[str, str]]] = {}
    unreadable: dict[str, str] = {}
    for source in parsed:
        try:
            text = reader.read_text(source.path)
            ini = inifile.IniFile(text)
        except InputError as exc:
            unreadable[source.path] = exc.problem
            continue
        except inifile.ParseError as exc:
            unreadable[source.path] = f'not an INI file: {exc}'
            continue
        for block in ini.blocks:
            section = inifile.normalize_section(block.section)
            for entry in block.entries:
                values.setdefault((section, entry.key), []).append(
                    (entry.value, source.path))
    environment = {}
    for name, value in (environ or {}).items():
        key = _env_key(name)
        if key:
            environment[key] = value
    return Effective(parsed, unreadable, values, environment)
