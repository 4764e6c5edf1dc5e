"""Where an oslo.config drop-in must be read for a Nova service to take its
values (tests/unit/tuning/export/test_oslo_dropin.py), and the systemd drop-in
that puts it there.

oslo.config's order (oslo_config/cfg.py ``ConfigOpts._parse_config_files``,
modelled by kvmtune.tuning.novaconf.effective): the default files
(``find_config_files``: nova.conf, <prog>.conf) only without
``--config-file``; the default directories (``find_config_dirs``:
nova.conf.d/, <prog>.conf.d/, each searched in ``_get_config_dirs``'s
~/.nova, ~, /etc/nova, /etc by ``_search_dirs``) only without
``--config-dir``, and *before* the command line is parsed; then every
``--config-file``/``--config-dir`` in argv order (``_ConfigFileOpt`` and
``_ConfigDirOpt`` parse as argparse meets them). The last file read wins a
single-valued option. So a service started ``--config-file
/etc/nova/nova.conf`` reads /etc/nova/nova-compute.conf.d/ first, and
nova.conf's value wins over the drop-in's; an explicit ``--config-dir`` for
that directory after the ``--config-file``s makes the drop-in win again
(and turns the default directories off: every one it should keep reading
has to be named too).
"""

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import dataclasses
import os
from typing import Any

from kvmtune.errors import InputError
from kvmtune.tuning.novaconf import effective

DROPIN_NAME = '50-kvmtune.conf'
SYSTEMD_DIR = 'etc/systemd/system'


# (section, option) -> (what the service reads instead, where from)
Lost = dict[tuple[str, str], tuple[Any, Any]]


def dropin_dir(service: str) -> str:
    """Where ``kvmtune export --target oslo-dropin`` puts a service's
    drop-in on the host: oslo.config's ``<prog>.conf.d`` in /etc/nova."""
    return f'/etc/nova/nova-{service}.conf.d'


def dropin_path(service: str) -> str:
    return os.path.join(dropin_dir(service), DROPIN_NAME)


def config_files(argv: Sequence[str]) -> list[str]:
    """The ``--config-file``s of ``argv`` (the service's), in order."""
    args = effective.real_argv(argv)
    return [value for kind, value in effective._cli_sources(args[1:])
            if kind == '--config-file']


def base_place(argv: Sequence[str], base_path: str | None = None) -> str:
    """The path on the host that the base nova.conf (``--nova-conf``)
    stands for in the service started with ``argv``: that path if argv
    names it, else argv's ``--config-file`` called nova.conf, else its
    first one (DevStack's nova-cpu.conf), else oslo.config's default
    /etc/nova/nova.conf."""
    files = config_files(argv)
    given = os.path.abspath(base_path) if base_path else None
    if given and given in map(os.path.abspath, files):
        return given
    for path in files:
        if os.path.basename(path) == f'{effective.PROJECT}.conf':
            return path
    if files:
        return files[0]
    return f'/etc/{effective.PROJECT}/{effective.PROJECT}.conf'


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, list):
        if isinstance(got, str):        # the environment: one string
            got = [got]
        return got is not None and sorted(
            value.strip() for value in got) == sorted(want)
    return got is not None and got.strip() == str(want).strip()


def lost(eff: effective.Effective,
         conf: Mapping[str, Mapping[str, Any]]) -> Lost:
    """{(section, option): (value, where)} of the options of ``conf``
    ({section: {option: value}}, a list for a multi-valued one) that the
    service would not read with the planned value: what it reads instead
    (None: nothing) and where from (a path, a list of paths, or
    'environment')."""
    found: Lost = {}
    for section, options in conf.items():
        for option, want in options.items():
            got, where = eff.get(section, option,
                                 multi=isinstance(want, list))
            if not _same(got, want):
                found[(section, option)] = (got, where)
    return found


@dataclasses.dataclass
class Placement:
    """What a service started with ``argv`` makes of a drop-in."""
    service: str
    # as oslo.config sees it (effective.real_argv)
    argv: list[str]
    # as started now: see lost()
    lost: Lost
    # argv with the --config-dirs that fix it
    fixed_argv: list[str] | None = None
    # those --config-dirs
    added: list[str] | None = None
    # what is still lost with fixed_argv
    fixed_lost: Lost | None = None

    @property
    def fixable(self) -> bool:
        return bool(self.lost) and self.fixed_argv is not None and \
            not self.fixed_lost


def with_config_dirs(argv: Sequence[str], dirs: Iterable[str]) -> list[str]:
    """``argv`` with ``--config-dir DIR`` for each of ``dirs`` at its end
    (an earlier ``--config-dir`` for one of them removed: parsed twice, a
    multi-valued option would count twice)."""
    args = effective.real_argv(argv)
    wanted = {os.path.normpath(d) for d in dirs}
    kept, words = [args[0]], iter(args[1:])
    for word in words:
        if word == '--config-dir':
            value = next(words, None)
            if value is not None and os.path.normpath(value) in wanted:
                continue
            kept.extend([word] + ([value] if value is not None else []))
        elif word.startswith('--config-dir=') and os.path.normpath(
                word[len('--config-dir='):]) in wanted:
            continue
        else:
            kept.append(word)
    for directory in dirs:
        kept += ['--config-dir', directory]
    return kept


def dirs_to_add(argv: Sequence[str], service: str,
                reader: effective.Reader) -> list[str]:
    """The ``--config-dir``s that make the service read its drop-in last
    while still reading what it reads now: the default directories it
    reads today (no --config-dir in argv: an explicit one turns them all
    off) that exist, then its drop-in directory."""
    args = effective.real_argv(argv)
    own = dropin_dir(service)
    dirs: list[str] = []
    if not any(kind == '--config-dir'
               for kind, _ in effective._cli_sources(args[1:])):
        prog = effective.prog_of(args)
        for name in (f'{effective.PROJECT}.conf.d', f'{prog}.conf.d'):
            path = reader.first(name, is_dir=True)
            if path and os.path.normpath(path) != own:
                dirs.append(path)
    return dirs + [own]


def place(service: str, argv: Sequence[str],
          conf: Mapping[str, Mapping[str, Any]], files: Mapping[str, str],
          under: effective.Reader | None = None,
          environ: Mapping[str, str] | None = None) -> Placement:
    """The Placement of ``files`` ({host path: text}: the drop-in, the
    base nova.conf where the service reads it) for the service started
    with ``argv``, on the host ``under`` shows (a Reader; None: a host
    with only ``files``). ``conf``: the plan's options this service reads.
    """
    real = effective.real_argv(argv)
    if not real:
        raise InputError('an empty command line', key='--service-cmdline',
                         fix='give the service\'s command line, e.g. '
                             '"/usr/bin/nova-compute --config-file '
                             '/etc/nova/nova.conf"')
    reader = effective.Overlay(files, under)
    now = lost(effective.effective(real, reader, environ), conf)
    found = Placement(service=service, argv=real, lost=now)
    if now:
        added = dirs_to_add(real, service, reader)
        fixed = with_config_dirs(real, added)
        found.fixed_argv, found.added = fixed, added
        found.fixed_lost = lost(effective.effective(fixed, reader, environ),
                                conf)
    return found


def exec_argv(original: Iterable[str], fixed: Iterable[str]) -> list[str]:
    """The command line for ExecStart=: ``fixed`` (a real_argv) behind the
    interpreter ``original`` ran it with, if any (``python3 -u
    /usr/bin/nova-compute``: the script's shebang may name another
    Python); oslo.service's retitled form is not a command line."""
    words = list(original)
    real = effective.real_argv(words)
    if len(words) == 1 and real != words:
        return list(fixed)              # retitled
    return words[:len(words) - len(real)] + list(fixed)


# -- the systemd drop-in ---------------------------------------------------

_PLAIN = set('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'
             '0123456789_@+=:,./-')


def systemd_word(word: str) -> str:
    """``word`` as one word of an ExecStart= line (systemd.service(5)
    "Command lines": ``%`` starts a specifier, ``$`` a variable, quotes
    and backslashes are syntax)."""
    word = word.replace('%', '%%').replace('$', '$$')
    if word and set(word) <= _PLAIN | {'%', '$'}:
        return word
    return '"' + word.replace('\\', '\\\\').replace('"', '\\"') + '"'


def systemd_path(unit: str) -> str:
    return os.path.join(SYSTEMD_DIR, f'{unit}.d', DROPIN_NAME)


def systemd_dropin(argv: Sequence[str],
                   comment_lines: Iterable[str]) -> str:
    """A systemd drop-in replacing the unit's ExecStart= by ``argv``: an
    empty ``ExecStart=`` first (a service that is not Type=oneshot may have
    one command only, and a drop-in's assignment adds to the unit's list;
    systemd.service(5) ExecStart=, systemd.unit(5) drop-ins)."""
    if not argv or not os.path.isabs(argv[0]):
        raise InputError(f'the command {argv[0] if argv else ""!r} is not '
                         'an absolute path: it cannot go into ExecStart= '
                         'as it is', key='--service-cmdline',
                         fix='give the service\'s command line as '
                             '/proc/<pid>/cmdline shows it (the full '
                             'path of nova-compute)')
    lines = [f'# {line}' for line in comment_lines]
    lines += ['[Service]', 'ExecStart=',
              'ExecStart=' + ' '.join(systemd_word(w) for w in argv)]
    return '\n'.join(lines) + '\n'


def unit_of(pid: int | str, proc: str = '/proc') -> str | None:
    """The systemd unit a process runs in (/proc/<pid>/cgroup:
    ``0::/system.slice/nova-compute.service``), or None."""
    from kvmtune import inputs

    try:
        text = inputs.read_text(os.path.join(proc, str(pid), 'cgroup'))
    except InputError:
        return None
    for line in text.splitlines():
        for part in reversed(line.rpartition(':')[2].split('/')):
            if part.endswith('.service'):
                return part
    return None


def running_cmdlines(proc: str = '/proc'
                     ) -> dict[str, tuple[list[str], str | None]]:
    """{service: (argv, unit)} of the Nova services running here (the
    first process of each: oslo.service's workers share its argv)."""
    from kvmtune.tuning.novaconf import services

    found: dict[str, tuple[list[str], str | None]] = {}
    for pid, service, argv in services.processes(proc):
        if service not in found:
            found[service] = (effective.real_argv(argv),
                              unit_of(pid, proc))
    return found


# -- nova-conf apply: does the edited nova.conf win? ------------------------

def _label(value: Any, where: Any) -> str:
    if where == 'environment':
        where = 'the service\'s environment'
    elif isinstance(where, list):
        where = ', '.join(where)
    shown = ', '.join(value) if isinstance(value, list) else value
    return (f'{shown} from {where}' if value is not None
            else 'no value (Nova\'s default)')


def after_edit(path: str, text: str, service: str, argv: Sequence[str],
               conf: Mapping[str, Mapping[str, Any]],
               under: effective.Reader | None = None,
               pid: int | None = None, strict: bool = False) -> list[str]:
    """Notices about the options of ``conf`` ({section: {option: value}},
    what ``nova-conf apply`` writes into ``path`` as ``text``) that the
    service started with ``argv`` would not read as written, in
    oslo.config's order over this host's files (``under``, default the
    live host). ``strict`` (a command line the operator gave): InputError
    instead, nothing written."""
    path = os.path.abspath(path)
    reader = effective.Overlay({path: text}, under or effective.Reader())
    eff = effective.effective(argv, reader)
    missed = lost(eff, {section: {option: value
                                  for option, value in options.items()
                                  if value is not None}
                        for section, options in conf.items()})
    if not missed:
        return []
    shown = ' '.join(effective.real_argv(argv))
    who = f'nova-{service}' + (f' (pid {pid})' if pid else '')
    unread = ('' if path in {os.path.normpath(source.path)
                             for source in eff.sources}
              else f'; it does not read {path} at all')
    keys = ', '.join(f'[{s}] {o}' for s, o in missed)
    (section, option), (value, where) = next(iter(missed.items()))
    if strict:
        raise InputError(
            f'{who} started as "{shown}" would read {option} = '
            f'{_label(value, where)}, not the value written here{unread}; '
            f'nothing written', source=path, key=keys,
            fix=f'remove {option} from where it wins, apply to the file '
                f'that wins (--config), or export a drop-in placed to win: '
                f'kvmtune export --target oslo-dropin --service-cmdline '
                f'"{shown}"')
    return [f'{who} started as "{shown}" will not read [{s}] {o} as '
            f'written: {_label(v, w)} wins in oslo.config\'s order{unread}'
            for (s, o), (v, w) in missed.items()]
