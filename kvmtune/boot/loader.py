"""How a host boots: which GRUB, where kvmtune's kernel arguments go, and
the distribution's tool that regenerates the boot entries.

Read from the host tree, never from the machine kvmtune runs on:

- ``grub-debian`` (Debian, Ubuntu and their ID_LIKE=debian kin):
  grub-mkconfig sources /etc/default/grub and then every
  /etc/default/grub.d/*.cfg (Debian's grub2-common,
  /usr/sbin/grub-mkconfig), so the arguments are a drop-in of their own,
  kvmtune.tuning.export.common.GRUB_FILE (the file ``kvmtune export``
  writes too), and ``update-grub`` regenerates /boot/grub/grub.cfg.
- ``grub-rhel`` (RHEL-likes whose /etc/default/grub does not set
  GRUB_ENABLE_BLSCFG=true: RHEL/CentOS 7 and such): their grub2-mkconfig
  reads /etc/default/grub only (no grub.d), so the arguments are a block of
  that file between kvmtune's markers, and ``grub2-mkconfig -o`` rewrites
  each grub.cfg the tree has (/boot/grub2/grub.cfg, /boot/efi/EFI/*/
  grub.cfg), as tripleo-ansible's roles/tripleo_kernel/tasks/kernelargs.yml
  does.
- ``grubby-bls`` (GRUB_ENABLE_BLSCFG=true and /boot/loader/entries/*.conf:
  RHEL 8 and later, Fedora): the entries carry their own options, so
  ``grubby --update-kernel=ALL --remove-args/--args`` edits them; the same
  block in /etc/default/grub keeps the arguments for a later grub2-mkconfig
  and tells the next run what kvmtune added (edpm-ansible's
  roles/edpm_kernel/tasks/kernelargs.yml keeps GRUB_EDPM_KERNEL_ARGS there
  the same way).

Anything else (no /etc/default/grub, another distribution, BLS without
entries) is an unknown bootloader: one InputError line, nothing written.
"""

import dataclasses
import glob
import os
import re

from kvmtune.errors import InputError
from kvmtune import inputs
from kvmtune.tuning.export import common

DEFAULT_GRUB = 'etc/default/grub'
OS_RELEASE = ('etc/os-release', 'usr/lib/os-release')
BLS_ENTRIES = 'boot/loader/entries'
# The grub.cfg files a RHEL-like without BLS may boot from (BIOS, EFI).
RHEL_GRUB_CFGS = ('boot/grub2/grub.cfg', 'boot/efi/EFI/*/grub.cfg')
BEGIN = '# BEGIN kvmtune: kernel arguments (kvmtune boot apply; do not edit)'
END = '# END kvmtune'
_DEBIAN_IDS = {'debian', 'ubuntu'}
_RHEL_IDS = {'rhel', 'centos', 'fedora', 'rocky', 'almalinux', 'ol'}
_ARGS_LINE = re.compile(
    r'^GRUB_CMDLINE_LINUX="\$GRUB_CMDLINE_LINUX (?P<args>[^"]*)"$', re.M)
_FIX = ('set the kernel arguments by hand (kvmtune plan shows them); '
        'kvmtune boot apply knows GRUB on Debian/Ubuntu and RHEL-likes')


@dataclasses.dataclass(frozen=True)
class Loader:
    """The boot loader of one host tree."""

    name: str           # 'grub-debian' | 'grub-rhel' | 'grubby-bls'
    config: str         # the file holding kvmtune's arguments (tree path)
    os_name: str        # os-release PRETTY_NAME, for messages
    # grub.cfg files grub2-mkconfig rewrites (grub-rhel only)
    grub_cfgs: tuple[str, ...] = ()


def os_release(root: str) -> dict[str, str]:
    """os-release(5) of the tree: KEY=value lines, values unquoted; {}
    when the tree has none."""
    for rel in OS_RELEASE:
        try:
            text = inputs.read_text(os.path.join(root, rel),
                                    max_bytes=64 * 1024)
        except InputError as exc:
            if exc.problem == 'no such file':
                continue
            raise
        fields = {}
        for line in text.splitlines():
            key, eq, value = line.strip().partition('=')
            if eq and key and not key.startswith('#'):
                value = value.strip()
                if len(value) >= 2 and value[0] == value[-1] \
                        and value[0] in '"\'':
                    value = value[1:-1]
                fields[key] = value
        return fields
    return {}


def _family(fields: dict[str, str]) -> str | None:
    ids = {fields.get('ID', '')} | set(fields.get('ID_LIKE', '').split())
    if ids & _DEBIAN_IDS:
        return 'debian'
    if ids & _RHEL_IDS:
        return 'rhel'
    return None


def _bls_enabled(grub_text: str) -> bool:
    """GRUB_ENABLE_BLSCFG=true set in /etc/default/grub (the last
    assignment wins, as when the shell sources it)."""
    values = re.findall(r'^\s*GRUB_ENABLE_BLSCFG=["\']?(\w+)["\']?\s*$',
                        grub_text, re.M)
    return bool(values) and values[-1] == 'true'


def read_default_grub(root: str) -> str | None:
    """/etc/default/grub of the tree, or None when it has none."""
    try:
        return inputs.read_text(os.path.join(root, DEFAULT_GRUB),
                                max_bytes=1 << 20)
    except InputError as exc:
        if exc.problem == 'no such file':
            return None
        raise


def detect(root: str) -> Loader:
    """The boot loader of the tree ``root``; InputError (one line, the
    caller writes nothing) when kvmtune does not know how it boots."""
    fields = os_release(root)
    name = fields.get('PRETTY_NAME') or fields.get('ID') or 'unknown'
    family = _family(fields)
    if family is None:
        raise InputError(
            f'unknown bootloader: the distribution {name!r} is neither '
            'Debian/Ubuntu nor a RHEL-like (etc/os-release ID and ID_LIKE)',
            source=root, key='etc/os-release', fix=_FIX)
    grub = read_default_grub(root)
    if grub is None:
        raise InputError(f'unknown bootloader: {name} without '
                         'etc/default/grub (not booted by GRUB?)',
                         source=root, key=DEFAULT_GRUB, fix=_FIX)
    if family == 'debian':
        return Loader('grub-debian', common.GRUB_FILE, name)
    if _bls_enabled(grub):
        if not glob.glob(os.path.join(root, BLS_ENTRIES, '*.conf')):
            raise InputError(
                'unknown bootloader: GRUB_ENABLE_BLSCFG=true but no '
                f'{BLS_ENTRIES}/*.conf', source=root, key=DEFAULT_GRUB,
                fix='check how this host boots (grubby --info=ALL); '
                    + _FIX)
        return Loader('grubby-bls', DEFAULT_GRUB, name)
    cfgs = tuple(sorted(
        os.path.relpath(path, root) for pattern in RHEL_GRUB_CFGS
        for path in glob.glob(os.path.join(root, pattern))))
    if not cfgs:
        raise InputError(
            f'unknown bootloader: {name} without BLS and without a grub.cfg '
            f'({" or ".join(RHEL_GRUB_CFGS)})', source=root,
            key='boot', fix=_FIX)
    return Loader('grub-rhel', DEFAULT_GRUB, name, cfgs)


def _header(profile: str) -> str:
    return (f'# Written by kvmtune boot apply --profile {profile}: the '
            'kernel arguments\n# of its plan for this host. Regenerate the '
            'boot entries and reboot\n# for them to take effect.\n')


def owned_args(loader: Loader, root: str) -> list[str]:
    """The kernel arguments kvmtune's file (or block) holds now."""
    try:
        text = inputs.read_text(os.path.join(root, loader.config),
                                max_bytes=1 << 20)
    except InputError as exc:
        if exc.problem == 'no such file':
            return []
        raise
    if loader.name != 'grub-debian':
        text = _block(text)[1]
    return [arg for match in _ARGS_LINE.finditer(text)
            for arg in match.group('args').split()]


def _block(text: str) -> tuple[str, str]:
    """(/etc/default/grub without kvmtune's block, the block)."""
    start = text.find(BEGIN + '\n')
    if start < 0:
        return text, ''
    stop = text.find(END + '\n', start)
    if stop < 0:
        raise InputError('kvmtune\'s block has a BEGIN line but no END line',
                         source=DEFAULT_GRUB, key=BEGIN,
                         fix=f'put back the line {END!r} after it, or '
                             'remove the block')
    stop += len(END) + 1
    return text[:start] + text[stop:], text[start:stop]


def render(loader: Loader, root: str, profile: str,
           args: list[str]) -> str:
    """The new content of ``loader.config`` holding ``args``."""
    body = _header(profile) + (common.grub_line(args) if args else
                               '# (none: the plan has no kernel argument)\n')
    if loader.name == 'grub-debian':
        return body
    current = read_default_grub(root) or ''
    rest = _block(current)[0]
    if rest and not rest.endswith('\n'):
        rest += '\n'
    return f'{rest}{BEGIN}\n{body}{END}\n'


def commands(loader: Loader, old: list[str], new: list[str]
             ) -> list[list[str]]:
    """The distribution's commands that put ``new`` (kvmtune's arguments,
    ``old`` before) into the boot entries, after the file is written."""
    if loader.name == 'grub-debian':
        # /usr/sbin/update-grub: grub-mkconfig -o /boot/grub/grub.cfg
        return [['update-grub']]
    if loader.name == 'grub-rhel':
        return [['grub2-mkconfig', '-o', '/' + cfg]
                for cfg in loader.grub_cfgs]
    steps = []
    gone = [arg for arg in old if arg not in new]
    if gone:
        steps.append(['grubby', '--update-kernel=ALL',
                      '--remove-args=' + ' '.join(gone)])
    if new:
        steps.append(['grubby', '--update-kernel=ALL',
                      '--args=' + ' '.join(new)])
    return steps
