"""Write a profile's options into nova.conf, in place.

Read, edit with kvmtune.tuning.novaconf.inifile, check the values (kvmtune's
rules, then Nova's own option definitions when Nova can be found), show a diff
with secrets masked, and only when something changed: replace the file with
kvmtune.fileio.write_atomic (owner, mode, xattrs and ACLs kept; in place
for hard links and bind-mounted files), then keep the previous content in
``<file>.kvmtune.bak``. A file that already has the options is not
rewritten; its mtime stays.

The whole read-check-write holds kvmtune.fileio's lock, so two applies run
one after the other and the second one edits what the first one wrote.
Anything but a regular file (a device, a FIFO, a directory) is refused
before it is opened.

A symbolic link is followed: the file it points to is edited and backed up
next to itself, and the link stays a link.
"""

from collections.abc import Callable
from collections.abc import Sequence
import dataclasses
import os
from typing import Any
from typing import TYPE_CHECKING

from kvmtune.errors import InputError
from kvmtune.errors import MASK
from kvmtune import fileio
from kvmtune import inputs
from kvmtune import nova_releases
from kvmtune.tuning.novaconf import diff as ini_diff
from kvmtune.tuning.novaconf import inifile
from kvmtune.tuning.novaconf import rules
from kvmtune.tuning.novaconf import validate

if TYPE_CHECKING:
    from kvmtune.tuning.novaconf import effective
    from kvmtune.tuning.plan import Plan

# {section: {option: str | [str, ...] | None}}; None removes the option
Changes = dict[str, dict[str, Any]]
# called with the new text before anything is written: notices
Checker = Callable[[str], list[str]]

BACKUP_SUFFIX = '.kvmtune.bak'

# Comma-separated lists (oslo.config ListOpt) kvmtune extends rather than
# owns: the operator's items stay, in their order, and only the items kvmtune
# needs (those beyond Nova's default: list_default) are appended. Where two
# items can say one thing two ways, a key says so and kvmtune's item takes
# the operator's item's place:
# - [filter_scheduler] enabled_filters: default the planned release's;
# - [libvirt] cpu_model_extra_flags: '+vmx', '-vmx' and 'VMX' are one flag
#   (nova/conf/libvirt.py: String(ignore_case=True), + or - turns it on/off);
# - [libvirt] disk_cachemodes: 'file=writeback' and 'file=none' set one
#   source type (LibvirtDriver.__init__ keeps the last mode of each type).
# nova-conf apply and kvmtune export both merge through resolve_changes.
EXTENDED_LISTS: dict[tuple[str, str], Callable[[str], str] | None] = {
    ('filter_scheduler', 'enabled_filters'): None,
    ('libvirt', 'cpu_model_extra_flags'):
        lambda item: item.lstrip('+-').lower(),
    ('libvirt', 'disk_cachemodes'): lambda item: item.partition('=')[0],
}


def list_default(section: str, option: str) -> list[str] | None:
    """Nova's default items of an option kvmtune extends, else None."""
    if (section, option) not in EXTENDED_LISTS:
        return None
    if (section, option) == ('filter_scheduler', 'enabled_filters'):
        return nova_releases.get().default_filters()
    return []


_BOM = '\ufeff'


@dataclasses.dataclass
class ApplyResult:
    path: str
    changed: bool           # the new text differs from the file
    written: bool           # and it was written (not a dry run)
    diff: str               # unified diff, secrets masked
    notices: list[str]
    nova: str | None = None  # Nova version the values were checked with
    backup: str | None = None
    # the service written for (apply_plan) and how many of the plan's
    # options it left to other services
    service: str | None = None
    left_out: int = 0
    applied: int | None = None

    def message(self, profile: str | None = None) -> str:
        whose = f"profile {profile}'s" if profile else "the requested"
        if not self.changed and self.applied == 0:
            # Not "already has": nothing of the plan is this service's
            # (io-tuned with --service scheduler said it had options it
            # did not have; tests/unit/test_hostile.py).
            return (f'nothing to write for nova-{self.service}: none of '
                    f'{whose} options is read by it ({self.left_out} left '
                    f'to other services, named above); {self.path} '
                    'unchanged')
        if not self.changed:
            return (f'nova.conf already has {whose} options; nothing '
                    f'changed ({self.path})')
        if not self.written:
            return f'dry run: {self.path} not written'
        return f'wrote {self.path} (previous content: {self.backup})'


def read_config(path: str) -> str:
    """The text of nova.conf, or InputError saying why it cannot be read."""
    fix = 'give the path of a readable nova.conf with --config'
    return decode_config(path, inputs.read_bytes(path, source=path or "''",
                                                 fix=fix))


def decode_config(path: str, data: bytes) -> str:
    """The text of nova.conf ``path`` from its bytes ``data`` (read here,
    or on another host), or InputError saying why it is not text Nova
    reads."""
    if b'\0' in data:
        raise InputError('has NUL bytes: not a text file', source=path,
                         fix='restore nova.conf from a backup')
    try:
        text = data.decode('utf-8')
    except UnicodeDecodeError as exc:
        raise InputError(f'not UTF-8 text (byte {exc.start})', source=path,
                         fix='save nova.conf as UTF-8') from None
    if text.startswith(_BOM):
        raise InputError('starts with a UTF-8 byte order mark, which '
                         'oslo.config reads as part of the first line',
                         source=path, key='line 1',
                         fix='save nova.conf without the BOM')
    return text


def parse_config(path: str, text: str) -> inifile.IniFile:
    try:
        return inifile.IniFile(text)
    except inifile.ParseError as exc:
        raise InputError(exc.problem, source=path, key=f'line {exc.lineno}',
                         fix='correct the line as oslo.config reads it '
                         '(Nova would not start with it either)') from None


def extend_list(current: str, planned: str, default: Sequence[str],
                key: Callable[[str], str] | None = None) -> str:
    """``current`` with the items of ``planned`` that are not in ``default``
    appended when missing: 'A,B' + 'A,C' over default (A,) -> 'A,B,C'.
    With ``key``, a planned item takes the place of the current items with
    its key: 'file=writeback,network=writeback' + 'file=none' ->
    'file=none,network=writeback'."""
    items = [i.strip() for i in current.split(',') if i.strip()]
    needed = [i.strip() for i in planned.split(',')
              if i.strip() and i.strip() not in default]
    for item in needed:
        if item in items:
            continue
        same = ([n for n, have in enumerate(items) if key(have) == key(item)]
                if key else [])
        if same:
            items[same[0]] = item
            items = [have for n, have in enumerate(items)
                     if n not in same[1:]]
        else:
            items.append(item)
    return ','.join(items)


def resolve_changes(ini: inifile.IniFile, changes: rules.Changes) -> Changes:
    """The values to write, given what nova.conf already has."""
    resolved: Changes = {}
    for section, options in changes.items():
        for option, value in options.items():
            default = list_default(section, option)
            current = ini.get(section, option)
            if default is not None and current is not None:
                value = extend_list(current, value, default,
                                    EXTENDED_LISTS[(section, option)])
            resolved.setdefault(section, {})[option] = value
    return resolved


def add_follow_ups(path: str, ini: inifile.IniFile, changes: rules.Changes
                   ) -> tuple[Changes, list[str]]:
    """``changes`` plus the deletions Nova then requires (see
    kvmtune.tuning.novaconf.rules.follow_ups: a cpu_mode other than custom
    takes cpu_models away); returns (changes, notices). A deletion is None."""
    try:
        gone, notices = rules.follow_ups(changes, ini.get)
    except rules.Problem as problem:
        raise InputError(problem.reason, source=path,
                         key=f'[{problem.section}] {problem.option}',
                         fix=problem.fix) from None
    merged: Changes = {section: dict(options)
                       for section, options in changes.items()}
    for section, options in gone.items():
        merged.setdefault(section, {}).update(options)
    return merged, notices


def planned_changes(path: str, changes: rules.Changes) -> Changes:
    """What ``apply`` would set (and delete: None) in nova.conf at
    ``path``, given what the file has now; nothing is written."""
    old = parse_config(path, read_config(path))
    resolved = resolve_changes(old, changes)
    check_rules(path, resolved)
    return add_follow_ups(path, old, resolved)[0]


def _set_only(changes: rules.Changes) -> Changes:
    return {section: {o: v for o, v in options.items() if v is not None}
            for section, options in changes.items()}


def edit(ini: inifile.IniFile, changes: rules.Changes) -> None:
    """Apply {section: {option: value | [values]}} to ``ini`` in place."""
    for section, options in changes.items():
        for option, value in options.items():
            if value is None:
                # An option Nova requires gone (rules.follow_ups).
                ini.set_multi(section, option, [])
            elif isinstance(value, list):
                ini.set_multi(section, option, value)
            else:
                ini.set(section, option, value)


def _mask(option: str, value: Any, text: str, section: str | None = None,
          secrets: ini_diff.Secrets | None = None) -> str:
    if not ini_diff.is_secret(option, section, secrets):
        return text
    for item in value if isinstance(value, list) else [value]:
        if item:
            text = text.replace(item, MASK)
    return text


def check_rules(path: str, changes: rules.Changes) -> None:
    """kvmtune's own rules (kvmtune.tuning.novaconf.rules), Nova or not."""
    try:
        rules.check(changes)
    except rules.Problem as problem:
        value = changes.get(problem.section, {}).get(problem.option, '')
        raise InputError(_mask(problem.option, value, problem.reason),
                         source=path,
                         key=f'[{problem.section}] {problem.option}'.rstrip(),
                         fix=problem.fix) from None


def check_nova(path: str, changes: rules.Changes,
               nova_python: str | None = None
               ) -> tuple[str | None, list[str], set[tuple[str, str]]]:
    """Nova's option definitions; return (Nova version, notices, secrets).

    ``secrets`` is {(group, option)} Nova defines with secret=True (empty
    without Nova)."""
    answer = validate.check_with_nova(changes, python=nova_python)
    secrets = {(group, option)
               for group, option in answer.get('secrets') or ()}
    if answer['problems']:  # the first one; fixing it shows the next
        problem = answer['problems'][0]
        section, option = problem['section'], problem['option']
        value = changes.get(section, {}).get(option, '')
        raise InputError(_mask(option, value, problem['reason'], section,
                               secrets),
                         source=path, key=f'[{section}] {option}',
                         fix=problem['fix'])
    return answer['nova'], answer['notices'], secrets


def write_config(path: str, old_text: str, new_text: str) -> str:
    """Replace the file, then back up the old content; return the backup.

    Call it holding fileio.lock(path)."""
    target = os.path.realpath(path)
    backup = target + BACKUP_SUFFIX
    # The Nova check takes seconds: someone (not kvmtune: it holds the
    # lock) may have edited meanwhile.
    current = inputs.read_bytes(path, source=path)
    if current != old_text.encode('utf-8'):
        raise InputError('changed while kvmtune was checking it; '
                         'nothing written', source=path,
                         fix='run kvmtune nova-conf apply again')
    fileio.write_atomic(path, new_text, backup=backup, source=path,
                        fix='run as root or as the owner of nova.conf and '
                        'its directory')
    return backup


def apply(path: str, changes: rules.Changes, dry_run: bool = False,
          nova_python: str | None = None,
          check: Checker | None = None) -> ApplyResult:
    """Make nova.conf at ``path`` have ``changes``; return ApplyResult.

    :param changes: {section: {option: str | [str, ...]}}, as
        kvmtune.tuning.plan's ``nova_conf``; a list is a multi-valued option.
    :param nova_python: a Python that can import nova, to check values
        against Nova (see kvmtune.tuning.novaconf.validate for where else Nova
        is looked for).
    :param check: called with the new text before anything is written;
        returns notices, or raises InputError (a service would not read
        the values: kvmtune.tuning.novaconf.dropin.after_edit).
    :raises InputError: unreadable or unparsable file, a value kvmtune or
        Nova rejects, or a failed write; the file is then untouched.
    """
    if dry_run:
        return _apply(path, changes, True, nova_python, check)
    read_config(path)   # a device, FIFO or unreadable file: before the lock
    with fileio.lock(path, source=path or "''"):
        return _apply(path, changes, False, nova_python, check)


def _apply(path: str, changes: rules.Changes, dry_run: bool,
           nova_python: str | None, check: Checker | None = None
           ) -> ApplyResult:
    old_text = read_config(path)
    old = parse_config(path, old_text)
    resolved = resolve_changes(old, changes)
    check_rules(path, resolved)
    resolved, follow_notices = add_follow_ups(path, old, resolved)
    new = parse_config(path, old_text)
    edit(new, resolved)
    new_text = new.text
    result = ApplyResult(path=path, changed=new_text != old_text,
                         written=False, diff='', notices=[])
    # Where the file stands in the services' oslo.config order: checked
    # even when it already has the values (another file may still win).
    placed = check(new_text) if check else []
    if not result.changed:
        result.notices = placed
        return result
    result.nova, result.notices, secrets = check_nova(
        path, _set_only(resolved), nova_python)
    result.notices = follow_notices + list(result.notices) + placed
    result.diff = ini_diff.unified_diff(old, new, path, path,
                                        secrets=secrets)
    if not dry_run:
        result.backup = write_config(path, old_text, new_text)
        result.written = True
    return result


def apply_plan(plan: 'Plan', path: str, service: str, *,
               dry_run: bool = False, nova_python: str | None = None,
               why: str | None = None,
               cmdlines: Sequence[tuple[str, Sequence[str], int | None]] = (),
               strict: bool = False,
               under: 'effective.Reader | None' = None
               ) -> ApplyResult:
    """Apply what ``plan`` (kvmtune.tuning.plan.Plan) sets for the Nova
    ``service`` ('compute', 'scheduler' or 'all') to the nova.conf at
    ``path``: the one call of ``kvmtune nova-conf apply`` (the CLI parses
    and prints; this decides). Options other services read are left out,
    each named in the result's notices, never dropped silently; ``why``
    (how the service was chosen) is the first notice when given.

    ``cmdlines`` [(service, argv, pid or None)]: the command lines of the
    services that should read the file; an option one of them would read
    from another file (oslo.config's order: kvmtune.tuning.novaconf.dropin) is
    a notice, or with ``strict`` an InputError with nothing written.
    """
    from kvmtune.tuning.novaconf import dropin
    from kvmtune.tuning.novaconf import services

    notices = [f'--service {service}: {why}'] if why else []
    changes, left = services.split(plan.nova_conf, service)
    left_out = 0
    for section, options in left.items():
        for option in options:
            names = services.readers(section, option)
            readers = ', '.join(f'nova-{name}' for name in names)
            other = 'compute' if 'compute' in names else 'scheduler'
            notices.append(
                f'not written: [{section}] {option} is read by {readers}, '
                f'not nova-{service}: apply it with --service {other} on '
                f'the hosts that run it (or see "kvmtune export")')
            left_out += 1

    def check(text: str) -> list[str]:
        found: list[str] = []
        for name, argv, pid in cmdlines:
            reads, _ = services.split(changes, name)
            found += dropin.after_edit(path, text, name, argv, reads,
                                       under=under, pid=pid, strict=strict)
        return found

    result = apply(path, changes, dry_run=dry_run, nova_python=nova_python,
                   check=check if cmdlines else None)
    result.notices = notices + list(result.notices)
    result.service = service
    result.left_out = left_out
    result.applied = sum(len(options) for options in changes.values())
    return result
