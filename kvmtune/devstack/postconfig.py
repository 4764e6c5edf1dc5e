"""post-config and clean: nova.conf options, modprobe files, huge pages.

nova.conf is edited with kvmtune's one writer of it
(kvmtune.tuning.novaconf.update.apply, which also removes what Nova then
refuses, such as ``[libvirt] cpu_models`` when a profile sets ``cpu_mode`` to
host-passthrough) and undone option by option, not from kvmtune's backup
copy (``nova.conf.kvmtune.bak``, removed at clean if the plugin made it):
DevStack and later plugins keep editing nova.conf after post-config, and
restoring a whole file would drop their lines. Each option kvmtune set or
removed goes back to its value before kvmtune, unless someone changed it
since: that value is left alone and reported.

DevStack makes nova-cpu.conf after post-config as a copy of nova.conf
(lib/nova, start_nova_compute), so kvmtune's options reach nova-compute
through that copy; clean undoes them in nova-cpu.conf too, option by
option under the same rule.

Host files (modprobe.d) and huge page pools belong to root: DevStack runs
as an unprivileged user, so they are changed through ``sudo -n``
(kvmtune.privileged), as DevStack changes the host itself.
"""

from collections.abc import Iterable
from collections.abc import Sequence
import os
from typing import Any
from typing import cast
from typing import Literal

from kvmtune.devstack.changes import Changes
from kvmtune.errors import InputError
from kvmtune import pagesize
from kvmtune import privileged
from kvmtune.tuning.novaconf import inifile
from kvmtune.tuning.novaconf import update
from kvmtune.tuning import pages
from kvmtune.tuning.plan import PlanDict

# plan dicts (kvmtune.tuning.plan.Plan.to_dict())
Plans = Sequence[PlanDict]

# The INI files whose options are recorded and undone one by one.
INI_KINDS = ('nova_conf', 'tempest_conf')


def build_plans(profiles: Iterable[str],
                config_files: Iterable[str] = ()) -> list[PlanDict]:
    """The plans (as dicts) of the named profiles on this host; InputError
    when one withheld values it could not safely decide."""
    from kvmtune.tuning import plan as plans

    if not profiles:
        return []
    # The front door: values withheld for safety (facts missing or
    # doubtful) are refused before anything is written.
    return [plan.to_dict() for plan in
            plans.for_host(list(profiles), config_files=config_files)]


def nova_options(plans: Plans) -> dict[str, dict[str, Any]]:
    """{section: {option: value}} over all plans; conflicts refused."""
    merged: dict[str, dict[str, Any]] = {}
    owner: dict[tuple[str, str], str] = {}
    for built in plans:
        for section, options in built.get('nova_conf', {}).items():
            for option, value in options.items():
                key = (section, option)
                have = merged.get(section, {})
                if option in have and have[option] != value:
                    raise InputError(
                        f'profiles {owner[key]} and {built["profile"]} want '
                        f'different values ({have[option]} and {value})',
                        source='KVMTUNE_PROFILES',
                        key=f'[{section}] {option}',
                        fix='choose profiles that agree on it')
                merged.setdefault(section, {})[option] = value
                owner[key] = built['profile']
    return merged


def plan_pools(plans: Plans) -> list[pages.Pool]:
    """The plans' huge page pools (their ``hugepages`` key), merged."""
    wanted: dict[tuple[int, int], pages.Pool] = {}
    for built in plans:
        for pool in pages.pools_from(built.get('hugepages', [])):
            key = (pool.node, pool.size_kb)
            if key in wanted and wanted[key].count != pool.count:
                raise InputError(
                    f'profiles want {wanted[key].count} and {pool.count} '
                    'pages', source='KVMTUNE_PROFILES', key=pool.label,
                    fix='set KVMTUNE_HUGEPAGES to the pools you want')
            wanted[key] = pool
    return [wanted[key] for key in sorted(wanted)]


def read_ini(path: str) -> inifile.IniFile:
    return update.parse_config(path, update.read_config(path))


def write_ini(path: str, ini: inifile.IniFile) -> None:
    privileged.write_file(path, ini.text,
                          mode=os.stat(path).st_mode & 0o7777)


def _has_section(ini: inifile.IniFile, section: str) -> bool:
    wanted = inifile.normalize_section(section)
    return any(inifile.normalize_section(block.section) == wanted
               for block in ini.blocks)


def _anchor(ini: inifile.IniFile, section: str, option: str) -> str | None:
    """The option just before ``option`` in its section, if any."""
    keys = [e.key for b in ini.blocks
            if inifile.normalize_section(b.section) ==
            inifile.normalize_section(section) for e in b.entries]
    if option not in keys:
        return None
    at = keys.index(option)
    return keys[at - 1] if at else None


def _values(ini: inifile.IniFile, section: str,
            option: str) -> list[str] | None:
    return ini.get_all(section, option) or None


def _record(changes: Changes, kind: str, path: str, ini: inifile.IniFile,
            keys: Iterable[tuple[str, str]]) -> None:
    """Remember each option's values before kvmtune's first change."""
    for section, option in keys:
        if changes.find(kind, path=path, section=section,
                        option=option) is None:
            changes.entries(kind).append({
                'path': path, 'section': section, 'option': option,
                'before': _values(ini, section, option),
                'anchor': _anchor(ini, section, option),
                'section_existed': _has_section(ini, section),
                'ended_blank': bool(ini.lines) and
                not ini.lines[-1].text.strip(),
                'after': None})
    changes.save()


def _record_after(changes: Changes, kind: str, path: str,
                  ini: inifile.IniFile) -> None:
    for entry in changes.entries(kind):
        if entry['path'] == path:
            entry['after'] = _values(ini, entry['section'], entry['option'])
    changes.save()


def set_options(changes: Changes, kind: str, path: str, section: str,
                pairs: Sequence[tuple[str, str]]) -> None:
    """Set [section] option = value for (option, value) pairs in the INI
    file at path (tempest.conf), recorded under ``kind`` for clean."""
    if not os.path.exists(path):
        raise InputError('does not exist', source=path,
                         fix='run the test-config phase after DevStack '
                             'configures Tempest')
    ini = read_ini(path)
    _record(changes, kind, path, ini,
            [(section, option) for option, _ in pairs])
    changed = [ini.set(section, option, value) for option, value in pairs]
    if any(changed):
        write_ini(path, ini)
    _record_after(changes, kind, path, read_ini(path))


def post_config(changes: Changes, nova_conf: str, plans: Plans,
                modprobe_dir: str | None = None,
                hugepages: Sequence[Any] | None = None,
                nova_python: str | None = None) -> None:
    """Write the plans into nova.conf and, when asked, the host.

    :param plans: plan dicts (build_plans).
    :param modprobe_dir: write the plans' modprobe files there, or None.
    :param hugepages: None (pools left alone), or the pools to set
        (kvmtune.tuning.pages.Pool; plan_pools gives the plans' own).
    """
    if not os.path.exists(nova_conf):
        raise InputError('does not exist', source=nova_conf,
                         fix='run post-config after Nova is configured')
    wanted = nova_options(plans)
    full = update.planned_changes(nova_conf, wanted)
    # Record what is there before writing anything.
    _record(changes, 'nova_conf', nova_conf, read_ini(nova_conf),
            [(section, option) for section, options in full.items()
             for option in options])
    backup = nova_conf + update.BACKUP_SUFFIX
    if not os.path.exists(backup) and changes.find(
            'created', path=backup) is None:
        changes.entries('created').append({'path': backup})
    changes.save()
    result = update.apply(nova_conf, wanted, nova_python=nova_python)
    for notice in result.notices:
        print(f'kvmtune: notice: {notice}')
    if result.nova:
        print(f'kvmtune: values checked against Nova {result.nova}')
    print(f'kvmtune: {result.message(" ".join(p["profile"] for p in plans))}')
    _record_after(changes, 'nova_conf', nova_conf, read_ini(nova_conf))

    if modprobe_dir:
        for built in plans:
            for path, text in sorted(built.get('modprobe', {}).items()):
                target = os.path.join(modprobe_dir, os.path.basename(path))
                _write_file(changes, target, text)
    else:
        _say_skipped(plans, 'modprobe', 'KVMTUNE_ENABLE_NESTED=True')

    if hugepages is not None:
        _set_pools(changes, hugepages)
    elif any(_wants_hugepages(built) for built in plans):
        print('kvmtune: profiles use huge pages but no pool is set here '
              '(set KVMTUNE_ALLOCATE_HUGEPAGES=True, or reserve them on the '
              'kernel command line)')
    for built in plans:
        if built.get('kernel_args'):
            print(f'kvmtune: profile {built["profile"]} wants kernel '
                  f'arguments {" ".join(built["kernel_args"])}: DevStack '
                  'does not change the boot loader; add them and reboot')


def _wants_hugepages(built: PlanDict) -> bool:
    return 'hw:mem_page_size' in built.get('extra_specs', {})


def _say_skipped(plans: Plans, kind: Literal['modprobe'],
                 setting: str) -> None:
    for built in plans:
        for path in sorted(built.get(kind, {})):
            print(f'kvmtune: profile {built["profile"]} asks for {path}; '
                  f'not written (set {setting})')


def _read(path: str) -> str | None:
    try:
        with open(path) as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _write_file(changes: Changes, path: str, text: str) -> None:
    entry = changes.find('files', path=path)
    if entry is None:
        entry = {'path': path, 'before': _read(path), 'after': None}
        changes.entries('files').append(entry)
        changes.save()
    if _read(path) == text:
        print(f'kvmtune: {path} already says so, unchanged')
    else:
        privileged.write_file(path, text)
        print(f'kvmtune: wrote {path}')
    entry['after'] = text
    changes.save()


def _set_pools(changes: Changes, pools: Sequence[Any] | None) -> None:
    if not pools:
        print('kvmtune: no huge page pool to set (no profile plans one, '
              'and KVMTUNE_HUGEPAGES is empty)')
        return
    pools = pages.pools_from(pools)
    pages.check(pools)
    for pool in pools:
        if changes.find('pages', node=pool.node,
                        size_kb=pool.size_kb) is None:
            changes.entries('pages').append({
                'node': pool.node, 'size_kb': pool.size_kb,
                'before': pages.read_count(pool.node, pool.size_kb),
                'after': None})
    changes.save()
    for applied in pages.apply(pools, say=lambda line: print(
            f'kvmtune: {line}')):
        entry = cast(dict[str, Any], changes.find(  # recorded above
            'pages', node=applied.pool.node, size_kb=applied.pool.size_kb))
        entry['after'] = applied.after
    changes.save()


def clean(changes: Changes, also: Iterable[str] = ()) -> None:
    """Undo post-config; ``also``: files made as copies of nova.conf after
    post-config (nova-cpu.conf), undone under the same rule."""
    for kind in INI_KINDS:
        by_path: dict[str, list[dict[str, Any]]] = {}
        for entry in changes.entries(kind):
            by_path.setdefault(entry['path'], []).append(entry)
        for path, entries in by_path.items():
            _undo_options(path, entries)
            for copy in also if kind == 'nova_conf' else ():
                if copy and copy != path:
                    _undo_options(copy, entries, copy_of=path)
        changes.drop(kind)
        changes.save()
    for entry in list(changes.entries('files')):
        _undo_file(entry)
        changes.drop('files', entry)
        changes.save()
    for entry in list(changes.entries('created')):
        if os.path.exists(entry['path']):
            privileged.remove_file(entry['path'])
            print(f'kvmtune: removed {entry["path"]}')
        changes.drop('created', entry)
        changes.save()
    pools = [entry for entry in changes.entries('pages')
             if entry['after'] is not None and entry['before'] is not None]
    if pools:
        now = {(e['node'], e['size_kb']): pages.read_count(e['node'],
                                                           e['size_kb'])
               for e in pools}
        back = [pages.Pool(e['node'], e['size_kb'], e['before'])
                for e in pools if now[(e['node'], e['size_kb'])] ==
                e['after']]
        for entry in pools:
            if now[(entry['node'], entry['size_kb'])] != entry['after']:
                print(f'kvmtune: huge pages on node {entry["node"]} '
                      f'({pagesize.text(entry["size_kb"])}) changed after '
                      'kvmtune set them; left as they are')
        pages.apply(back, say=lambda line: print(f'kvmtune: {line}'))
    changes.drop('pages')
    changes.save()


def _undo_options(path: str, entries: list[dict[str, Any]],
                  copy_of: str | None = None) -> None:
    if not os.path.exists(path):
        print(f'kvmtune: {path} is gone; nothing to undo there')
        return
    ini = read_ini(path)
    changed = False
    for entry in entries:
        section, option = entry['section'], entry['option']
        where = f'{path} [{section}] {option}'
        now = _values(ini, section, option)
        if now == entry['before']:
            continue
        if now != entry['after']:
            if copy_of is None:
                print(f'kvmtune: {where} was changed after kvmtune set it; '
                      'left as it is')
            continue
        if entry['before'] is None:
            ini.delete(section, option)
            print(f'kvmtune: {where} removed')
        elif now is None:
            ini.insert_after(section, entry.get('anchor'), option,
                             entry['before'])
            print(f'kvmtune: {where} put back')
        else:
            ini.set_multi(section, option, entry['before'])
            print(f'kvmtune: {where} back to its earlier value')
        changed = True
    for entry in entries:
        if not entry.get('section_existed', True) and \
                ini.remove_section_if_empty(entry['section'],
                                            not entry.get('ended_blank')):
            print(f'kvmtune: {path} [{entry["section"]}] removed (empty)')
            changed = True
    if changed:
        write_ini(path, ini)


def _undo_file(entry: dict[str, Any]) -> None:
    path = entry['path']
    now = _read(path)
    if now != entry['after']:
        print(f'kvmtune: {path} was changed after kvmtune wrote it; '
              'left as it is')
    elif entry['before'] is None:
        if now is not None:
            privileged.remove_file(path)
            print(f'kvmtune: removed {path}')
    elif now != entry['before']:
        privileged.write_file(path, entry['before'])
        print(f'kvmtune: {path} back to its earlier content')
