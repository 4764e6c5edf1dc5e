"""post-config and clean: nova.conf options, modprobe files, hugepages.

nova.conf is undone option by option, not from kvmtune's backup copy
(``nova.conf.kvmtune.bak``, removed at clean if the plugin made it): DevStack
and later plugins keep editing nova.conf after post-config, and restoring
a whole file would drop their lines. Each option kvmtune set goes back to
its value before kvmtune (or is deleted when it had none), unless someone
changed it since: that value is left alone and reported.
"""

import os
import subprocess
import sys

from kvmtune.devstack import inifile
from kvmtune.errors import InputError

HUGEPAGES_SYSCTL_FILE = '90-kvmtune-hugepages.conf'
# "kvmtune nova-conf apply" keeps the previous nova.conf there.
NOVA_CONF_BACKUP_SUFFIX = '.kvmtune.bak'


def kvmtune_cli(*argv, capture=False):
    """Run the kvmtune command with this interpreter; one-line errors."""
    cmd = [sys.executable, '-m', 'kvmtune.cli', *argv]
    result = subprocess.run(cmd, text=True,
                            stdout=subprocess.PIPE if capture else None)
    if result.returncode != 0:
        raise InputError(f'"kvmtune {" ".join(argv)}" failed with exit '
                         f'status {result.returncode} (its error is above)')
    return result.stdout


def plan(profile):
    import json

    return json.loads(kvmtune_cli('plan', '--profile', profile,
                                  '--format', 'json', capture=True))


def _values(value):
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def nova_options(plans):
    """{(section, option): [values]} over all plans; conflicts refused."""
    merged = {}
    owner = {}
    for built in plans:
        for section, options in built.get('nova_conf', {}).items():
            for option, value in options.items():
                key = (section, option)
                values = _values(value)
                if key in merged and merged[key] != values:
                    raise InputError(
                        f'profiles {owner[key]} and {built["profile"]} want '
                        f'different values ({merged[key]} and {values})',
                        source='KVMTUNE_PROFILES',
                        key=f'[{section}] {option}',
                        fix='choose profiles that agree on it')
                merged[key] = values
                owner[key] = built['profile']
    return merged


def post_config(changes, nova_conf, profiles, modprobe_dir=None,
                hugepages_2m=None, sysctl_dir=None, proc_sys_vm=None):
    if not os.path.exists(nova_conf):
        raise InputError('does not exist', source=nova_conf,
                         fix='run post-config after Nova is configured')
    plans = [plan(name) for name in profiles]
    wanted = nova_options(plans)
    # Record what is there before writing anything.
    for (section, option) in wanted:
        if changes.find('nova_conf', path=nova_conf, section=section,
                        option=option) is None:
            changes.entries('nova_conf').append({
                'path': nova_conf, 'section': section, 'option': option,
                'before': inifile.get(nova_conf, section, option),
                'section_existed': inifile.has_section(nova_conf, section),
                'ended_blank': inifile.ends_blank(nova_conf),
                'after': None})
    backup = nova_conf + NOVA_CONF_BACKUP_SUFFIX
    if not os.path.exists(backup) and changes.find(
            'created', path=backup) is None:
        changes.entries('created').append({'path': backup})
    changes.save()
    for name in profiles:
        kvmtune_cli('nova-conf', 'apply', '--profile', name,
                    '--config', nova_conf)
    for entry in changes.entries('nova_conf'):
        if entry['path'] == nova_conf:
            entry['after'] = inifile.get(nova_conf, entry['section'],
                                         entry['option'])
    changes.save()

    if modprobe_dir:
        for built in plans:
            for path, text in sorted(built.get('modprobe', {}).items()):
                target = os.path.join(modprobe_dir, os.path.basename(path))
                _write_file(changes, target, text)
    else:
        _say_skipped(plans, 'modprobe', 'KVMTUNE_ENABLE_NESTED=True')

    if hugepages_2m is not None:
        if any(_wants_hugepages(built) for built in plans):
            _allocate_hugepages(changes, hugepages_2m, sysctl_dir,
                                proc_sys_vm)
        else:
            print('kvmtune: no profile uses hugepages; none allocated')
    elif any(_wants_hugepages(built) for built in plans):
        print('kvmtune: profiles use hugepages but none are allocated here '
              '(set KVMTUNE_ALLOCATE_HUGEPAGES=True, or reserve them on the '
              'kernel command line)')
    for built in plans:
        if built.get('kernel_args'):
            print(f'kvmtune: profile {built["profile"]} wants kernel '
                  f'arguments {" ".join(built["kernel_args"])}: DevStack '
                  'does not change the boot loader; add them and reboot')


def _wants_hugepages(built):
    return 'hw:mem_page_size' in built.get('extra_specs', {})


def _say_skipped(plans, kind, setting):
    for built in plans:
        for path in sorted(built.get(kind, {})):
            print(f'kvmtune: profile {built["profile"]} asks for {path}; '
                  f'not written (set {setting})')


def _read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _write_file(changes, path, text):
    entry = changes.find('files', path=path)
    if entry is None:
        entry = {'path': path, 'before': _read(path), 'after': None}
        changes.entries('files').append(entry)
        changes.save()
    if _read(path) == text:
        print(f'kvmtune: {path} already says so, unchanged')
    else:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        inifile.write_atomic(path, text)
        print(f'kvmtune: wrote {path}')
    entry['after'] = text
    changes.save()


def _allocate_hugepages(changes, count, sysctl_dir, proc_sys_vm):
    _write_file(changes, os.path.join(sysctl_dir, HUGEPAGES_SYSCTL_FILE),
                f'# kvmtune DevStack plugin: 2 MB pages for guest RAM\n'
                f'vm.nr_hugepages = {count}\n')
    knob = os.path.join(proc_sys_vm, 'nr_hugepages')
    entry = changes.find('sysctl', path=knob)
    if entry is None:
        entry = {'path': knob, 'before': _read(knob).strip(), 'after': None}
        changes.entries('sysctl').append(entry)
        changes.save()
    with open(knob, 'w') as handle:
        handle.write(f'{count}\n')
    got = _read(knob).strip()
    entry['after'] = got
    changes.save()
    print(f'kvmtune: vm.nr_hugepages = {got} (asked for {count})')
    if int(got) < count:
        print(f'kvmtune: warning: the kernel found memory for {got} of '
              f'{count} 2 MB pages')


def clean(changes):
    for entry in list(changes.entries('nova_conf')):
        _undo_option(entry)
        changes.drop('nova_conf', entry)
        changes.save()
    for entry in list(changes.entries('files')):
        _undo_file(entry)
        changes.drop('files', entry)
        changes.save()
    for entry in list(changes.entries('created')):
        if os.path.exists(entry['path']):
            os.unlink(entry['path'])
            print(f'kvmtune: removed {entry["path"]}')
        changes.drop('created', entry)
        changes.save()
    for entry in list(changes.entries('sysctl')):
        with open(entry['path'], 'w') as handle:
            handle.write(entry['before'] + '\n')
        print(f'kvmtune: {entry["path"]} back to {entry["before"]}')
        changes.drop('sysctl', entry)
        changes.save()


def _undo_option(entry):
    path, section, option = entry['path'], entry['section'], entry['option']
    where = f'{path} [{section}] {option}'
    if not os.path.exists(path):
        print(f'kvmtune: {path} is gone; nothing to undo there')
        return
    now = inifile.get(path, section, option)
    if now != entry['after']:
        print(f'kvmtune: {where} was changed after kvmtune set it; '
              'left as it is')
        return
    if now == entry['before']:
        return
    inifile.put(path, section, option, entry['before'])
    if entry['before'] is None:
        print(f'kvmtune: {where} removed')
    else:
        print(f'kvmtune: {where} back to its earlier value')
    if not entry.get('section_existed', True):
        if inifile.drop_section_if_empty(path, section,
                                         entry.get('ended_blank', True)):
            print(f'kvmtune: {path} [{section}] removed (empty)')


def _undo_file(entry):
    path = entry['path']
    now = _read(path)
    if now != entry['after']:
        print(f'kvmtune: {path} was changed after kvmtune wrote it; '
              'left as it is')
    elif entry['before'] is None:
        if now is not None:
            os.unlink(path)
            print(f'kvmtune: removed {path}')
    elif now != entry['before']:
        inifile.write_atomic(path, entry['before'])
        print(f'kvmtune: {path} back to its earlier content')
