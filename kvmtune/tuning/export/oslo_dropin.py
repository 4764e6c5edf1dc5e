"""oslo.config drop-in files: the tool-neutral way to add to nova.conf.

Each service's options go to that service's own directory
(``nova-compute.conf.d``, ``nova-scheduler.conf.d``,
``nova-conductor.conf.d``, oslo.config's ``<prog>.conf.d``), so a file never
carries an option its reader does not run.

Where a drop-in stands in oslo.config's order depends on how the service is
started (kvmtune.tuning.novaconf.dropin, from oslo_config/cfg.py
``ConfigOpts._parse_config_files``): started with no ``--config-file`` (RDO's
openstack-nova-compute.service) the default directories come after nova.conf
and the drop-in wins; started ``--config-file /etc/nova/nova.conf`` (Debian's
and Ubuntu's units, through openstack-pkg-tools' init script) they come
*before* it, and a value in nova.conf beats the drop-in
(tests/unit/tuning/export/test_oslo_dropin.py). So with the base nova.conf
(``--nova-conf``):

- a single-valued option the base sets to another value is refused, naming
  it; with ``--dropin-anyway`` the drop-in is written and a note says in
  which start-up shapes it takes effect;
- a list kvmtune extends (``[filter_scheduler] enabled_filters``,
  kvmtune.tuning.novaconf.update.EXTENDED_LISTS) is written merged as
  "nova-conf apply" merges it: the base's items, then kvmtune's. Read
  after the base, the drop-in gives the union; read before it, the base's
  list stays. Nothing of the operator's is lost either way, so it is not
  refused: a note says in which start-up shapes kvmtune's items take
  effect;
- a multi-valued option (``[DEFAULT] reserved_huge_pages``) adds up across
  files in every shape: the same values are left out of the drop-in, other
  values are refused (``--dropin-anyway`` does not change that);
- with the service's command line (``--service-cmdline``, or its
  /proc/<pid>/cmdline when exporting for this host) the files it reads are
  computed in oslo.config's order with the drop-in in place: when a file
  read after it would win, a systemd drop-in for the unit
  (``etc/systemd/system/<unit>.d/50-kvmtune.conf``) starts the service with
  ``--config-dir`` after its ``--config-file``s; when even that would not
  do, the export is refused.
"""

from collections.abc import Sequence
import os
from typing import Any
from typing import cast

from kvmtune.errors import InputError
from kvmtune.tuning.export import common
from kvmtune.tuning.novaconf import dropin as placing

DIRS = {'compute': 'etc/nova/nova-compute.conf.d',
        'scheduler': 'etc/nova/nova-scheduler.conf.d',
        'conductor': 'etc/nova/nova-conductor.conf.d'}


# {section: {option: value}}
Conf = dict[str, dict[str, Any]]
# [(section, option, base value, planned value)]
Conflicts = list[tuple[str, str, str, Any]]


def fold_multi(conf: Conf, ctx: common.Context, notes: list[str]) -> Conf:
    """``conf`` without the multi-valued options the base nova.conf already
    has with the same values; InputError when it has other values."""
    if ctx.base is None:
        return conf
    folded: Conf = {}
    for section, options in conf.items():
        for option, value in options.items():
            have = ctx.base.get(section, {}).get(option)
            if isinstance(value, list) and have:
                if sorted(have) == sorted(value):
                    notes.append(f'[{section}] {option} is in '
                                 f'{ctx.base_path} already: left out of the '
                                 f'drop-in (values of a multi-valued option '
                                 f'add up across files)')
                    continue
                raise InputError(
                    f'[{section}] {option} is multi-valued and is set there '
                    f'to {", ".join(have)}: oslo.config would add the '
                    f'drop-in\'s {", ".join(value)} to it, not replace it, '
                    f'however the service is started; nothing written',
                    source=ctx.base_path, key=f'[{section}] {option}',
                    fix=f'remove {option} from {ctx.base_path} and export '
                        f'again (the drop-in then carries it alone)')
            folded.setdefault(section, {})[option] = value
    return folded


def conflicts(conf: Conf, ctx: common.Context) -> Conflicts:
    """[(section, option, base value, planned value)] of the single-valued
    options of ``conf`` that the base nova.conf sets to another value (the
    last line setting it: the one oslo.config keeps)."""
    found: Conflicts = []
    for section, options in conf.items():
        for option, value in options.items():
            have = (ctx.base or {}).get(section, {}).get(option)
            if have and not isinstance(value, list) and \
                    have[-1].strip() != str(value).strip():
                found.append((section, option, have[-1].strip(), value))
    return found


def _keys(found: Sequence[Sequence[Any]]) -> str:
    return ', '.join(f'[{item[0]}] {item[1]}' for item in found)


def _where(where: Any) -> str:
    if where == 'environment':
        return 'the service\'s environment (OS_<GROUP>__<OPTION>)'
    if isinstance(where, list):
        return ', '.join(where)
    return where or 'no file (its default)'


def _spell(value: Any) -> str:
    if value is None:
        return 'nothing'
    return ', '.join(value) if isinstance(value, list) else value


def _unplaced(service: str, conf: Conf, found: Conflicts,
              ctx: common.Context, notes: list[str]) -> None:
    """No command line for the service: a base value that would win in
    some start-up shape is refused, or stated (--dropin-anyway)."""
    from kvmtune.tuning.novaconf import update

    directory = placing.dropin_dir(service)
    lists = [item for item in found
             if (item[0], item[1]) in update.EXTENDED_LISTS]
    found = [item for item in found if item not in lists]
    for section, option, have, want in lists:
        # Not refused: the drop-in's list holds the base's items, so
        # whichever file wins, none of the operator's is lost.
        notes.append(
            f'[{section}] {option}: the drop-in has {ctx.base_path}\'s '
            f'items and kvmtune\'s ({want}); read after {ctx.base_path} '
            f'(nova-{service} started without --config-file, or with '
            f'--config-dir {directory} after it) it gives them all; '
            f'started with --config-file and no such --config-dir '
            f'(Debian\'s and Ubuntu\'s units) {ctx.base_path}\'s {have} '
            f'stays: give --service-cmdline for the systemd drop-in that '
            f'makes the drop-in win, or remove {option} from '
            f'{ctx.base_path} (the drop-in keeps its items)')
    if not found:
        return
    if not ctx.anyway:
        section, option, have, want = found[0]
        more = (f' ({len(found) - 1} more option(s) likewise)'
                if len(found) > 1 else '')
        names = ', '.join(item[1] for item in found)
        raise InputError(
            f'{option} is set there to {have} and the plan wants {want}: '
            f'nova-{service} started with --config-file (as Debian\'s and '
            f'Ubuntu\'s units start it) reads {directory} before that '
            f'file and keeps {have}{more}; nothing written',
            source=ctx.base_path, key=_keys(found),
            fix=f'remove {names} from {ctx.base_path} and export again, '
                f'or apply in place with "kvmtune nova-conf apply", or '
                f'give the service\'s command line with --service-cmdline '
                f'(the export then writes what makes the drop-in win), or '
                f'--dropin-anyway to write it and be told when it takes '
                f'effect')
    for section, option, have, want in found:
        notes.append(
            f'[{section}] {option}: {ctx.base_path} sets {have}; the '
            f'drop-in\'s {want} takes effect only when nova-{service} is '
            f'started without --config-file, or with --config-dir '
            f'{directory} after its last --config-file; started with '
            f'--config-file and no such --config-dir (Debian\'s and '
            f'Ubuntu\'s units) it keeps {have} (--service-cmdline writes '
            f'the systemd drop-in that adds the --config-dir)')


def _comments(ctx: common.Context, service: str, place: str,
              added: list[str]) -> list[str]:
    return common._wrap(
        f'{ctx.header} nova-{service} reads oslo.config\'s default '
        f'drop-in directories before its --config-file files '
        f'(oslo_config/cfg.py ConfigOpts._parse_config_files), so '
        f'{place} would beat {placing.dropin_path(service)}; an explicit '
        f'--config-dir after them is read after them. The empty '
        f'ExecStart= clears the unit\'s command (systemd.service(5)); the '
        f'next one is the service\'s own command line with --config-dir '
        f'{" --config-dir ".join(added)} appended. Then: systemctl '
        f'daemon-reload and restart the service.')


def _placed(service: str, conf: Conf, text: str | None, found: Conflicts,
            ctx: common.Context, notes: list[str]) -> list[common.OutFile]:
    """The service's command line is known: where its drop-in stands in
    oslo.config's order, and the systemd drop-in that makes it win."""
    original, unit = ctx.cmdlines[service]
    place = placing.base_place(original, ctx.base_path)
    files = {placing.dropin_path(service): text} if text else {}
    if ctx.base_text is not None:
        files[place] = ctx.base_text
    got = placing.place(service, original, conf, files, under=ctx.under)
    shown = ' '.join(got.argv)
    if not got.lost:
        notes.append(f'nova-{service} started as "{shown}" takes every '
                     f'planned value: its drop-in is read after the files '
                     f'that set them otherwise')
        for section, option, have, want in found:
            notes.append(
                f'[{section}] {option}: the drop-in\'s {want} wins over '
                f'{ctx.base_path}\'s {have} as nova-{service} is started '
                f'now; started with --config-file and no --config-dir '
                f'{placing.dropin_dir(service)} after it, {have} would '
                f'come back')
        return []
    (section, option), (value, where) = next(iter(got.lost.items()))
    want = conf[section][option]
    if got.fixable:
        # fixable: fixed_argv and added are set
        dirs = cast(list[str], got.added)
        unit = unit or f'nova-{service}.service'
        path = placing.systemd_path(unit)
        command = placing.exec_argv(original, cast(list[str], got.fixed_argv))
        body = placing.systemd_dropin(
            command, _comments(ctx, service, place, dirs))
        added = ' '.join(f'--config-dir {d}' for d in dirs)
        more = (f' (and so would {_keys(list(got.lost)[1:])})'
                if len(got.lost) > 1 else '')
        notes.append(
            f'nova-{service} started as "{shown}" reads '
            f'{placing.dropin_path(service)} before {_where(where)}: '
            f'[{section}] {option} would stay {_spell(value)}{more}; '
            f'{path} starts '
            f'{unit} with {added} after its --config-files, so the '
            f'drop-in wins: systemctl daemon-reload, then restart {unit}')
        if ctx.under is None and len(dirs) == 1:
            notes.append(
                f'an explicit --config-dir turns oslo.config\'s default '
                f'directories off: if the host has /etc/nova/nova.conf.d, '
                f'its files are no longer read unless you add '
                f'--config-dir /etc/nova/nova.conf.d before {added} in '
                f'{path} (export on the host to have it found)')
        return [common.OutFile(path, body, 'text')]
    still = got.fixed_lost or got.lost
    (section, option), (value, where) = next(iter(still.items()))
    want = conf[section][option]
    if not ctx.anyway:
        raise InputError(
            f'nova-{service} started as "{shown}" would read '
            f'{_spell(value)} from {_where(where)}, not the plan\'s '
            f'{_spell(want)}, even with its drop-in read last; nothing '
            f'written', key=_keys([(s, o) for s, o in still]),
            fix=f'remove {option} from {_where(where)} and export again, '
                f'or --dropin-anyway to write the drop-in all the same')
    for (section, option), (value, where) in still.items():
        notes.append(
            f'[{section}] {option}: nova-{service} started as "{shown}" '
            f'keeps {_spell(value)} from {_where(where)}, even with its '
            f'drop-in read last: the drop-in\'s '
            f'{_spell(conf[section][option])} does not take effect')
    return []


def build(ctx: common.Context, notes: list[str]) -> list[common.OutFile]:
    files = []
    for service, conf in sorted(ctx.by_service().items()):
        if service not in DIRS:
            continue
        dropin = fold_multi(conf, ctx, notes)
        text = common.render_ini(dropin, ctx.header) if dropin else None
        if text:
            files.append(common.OutFile(
                os.path.join(DIRS[service], common.DROPIN_NAME), text,
                'ini'))
        found = conflicts(conf, ctx)
        if service in ctx.cmdlines:
            files += _placed(service, conf, text, found, ctx, notes)
        else:
            _unplaced(service, conf, found, ctx, notes)
    if ctx.base_path is None:
        ctx.extension_notes(notes, lambda section, option: None)
    unknown = sorted(set(ctx.cmdlines) - set(DIRS))
    if unknown:
        raise InputError(f'nova-{unknown[0]} has no drop-in: kvmtune '
                         f'plans no option it reads',
                         key='--service-cmdline',
                         fix='give the command line of nova-compute, '
                             'nova-scheduler or nova-conductor')
    return files + common.host_files(ctx)
