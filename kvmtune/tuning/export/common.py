"""What every export target shares: the context, the host files and how
its files are rendered.

A target module has ``build(ctx) -> [OutFile]``; the files are relative to
the output directory and mirror where the tool (or the operator) puts them,
e.g. ``etc/kolla/config/nova/compute-1/nova-compute.conf``. Writing them,
all or nothing, is kvmtune.tuning.export.writer.
"""

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
import dataclasses
import os
import re
from typing import Any
from typing import TYPE_CHECKING

import yaml

from kvmtune.errors import InputError
from kvmtune.facts.types import Facts
from kvmtune.tuning.novaconf import inifile
from kvmtune.tuning.novaconf import services
from kvmtune.tuning import traits as kvmtune_traits

if TYPE_CHECKING:
    from kvmtune.tuning.novaconf.effective import Reader
    from kvmtune.tuning.plan import Plan

# Drop-in name: RHOSO/EDPM reserve numbers below 25 for themselves, SUSE
# gives 100-499 to config management; 50 sorts after a tool's own files.
DROPIN_NAME = '50-kvmtune.conf'
# One modprobe.d file for every kvm module, the name OpenStack-Ansible's
# os_nova role writes (tasks/drivers/kvm/nova_compute_kvm.yml): two files
# setting options of one module would fight.
MODPROBE_FILE = 'etc/modprobe.d/kvm.conf'
# Debian/Ubuntu's update-grub sources /etc/default/grub.d/*.cfg.
GRUB_FILE = 'etc/default/grub.d/50-kvmtune.cfg'
PROVIDER_FILE = 'kvmtune.yaml'
_HOST_NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]{0,252}\Z')


@dataclasses.dataclass
class OutFile:
    path: str       # relative to the output directory
    text: str
    fmt: str        # 'ini', 'yaml' or 'text': how conflicts are explained


@dataclasses.dataclass
class Context:
    """Everything a target needs, as plain values."""

    plan: 'Plan'
    facts: Facts
    host: str | None = None  # inventory / node name; None: the whole group
    # {section: {option: [values]}} of nova.conf
    base: dict[str, Any] | None = None
    base_path: str | None = None
    base_text: str | None = None   # that nova.conf as it is (oslo-dropin)
    # oslo-dropin: {service: (argv, systemd unit or None)} of the services
    # the drop-ins are for (--service-cmdline, or read on this host)
    cmdlines: dict[str, tuple[list[str], str | None]] = dataclasses.field(
        default_factory=dict)
    under: 'Reader | None' = None    # this host's files
    anyway: bool = False    # --dropin-anyway

    @property
    def header(self) -> str:
        return (f'Written by "kvmtune export" from profile '
                f'{self.plan.profile} and the facts of '
                f'{self.plan.facts_source}; an export with other facts or '
                f'another profile replaces it.')

    def nova_conf(self) -> dict[str, dict[str, Any]]:
        """The plan's nova.conf options, each list kvmtune extends
        (kvmtune.tuning.novaconf.update.EXTENDED_LISTS) merged with the
        base nova.conf's items the way "nova-conf apply" merges them:
        the operator's items stay, kvmtune's are appended."""
        from kvmtune.tuning.novaconf import update

        if self.base_text is None:
            return self.plan.nova_conf
        ini = update.parse_config(self.base_path or '--nova-conf',
                                  self.base_text)
        return update.resolve_changes(ini, self.plan.nova_conf)

    def extended(self) -> list[tuple[str, str, str]]:
        """[(section, option, value)] of the lists kvmtune extends that
        this export writes, as merged with the base."""
        from kvmtune.tuning.novaconf import update

        return [(section, option, value)
                for section, options in self.nova_conf().items()
                for option, value in options.items()
                if (section, option) in update.EXTENDED_LISTS]

    def extension_notes(self, notes: list[str],
                        beaten_by: Callable[[str, str], str | None]) -> None:
        """Say, for each list kvmtune extends, whose items the export
        carries and what in the tool's own order can still beat it
        (``beaten_by(section, option)``, or None)."""
        for section, option, value in self.extended():
            key = f'[{section}] {option}'
            if self.base_path is None:
                notes.append(
                    f'{key} = {value}, without --nova-conf: it replaces '
                    f'the items your nova.conf has for {option}; give '
                    f'that nova.conf with --nova-conf to keep them')
            else:
                notes.append(f'{key} = {value}: the items of '
                             f'{self.base_path}, then kvmtune\'s')
            beaten = beaten_by(section, option)
            if beaten:
                notes.append(f'{key}: {beaten}')

    def by_service(self) -> dict[str, dict[str, dict[str, Any]]]:
        """{service: {section: {option: value}}} of the plan's nova.conf
        (merged with the base: nova_conf): an option goes to every service
        that reads it."""
        found: dict[str, dict[str, dict[str, Any]]] = {}
        for section, options in self.nova_conf().items():
            for option, value in options.items():
                for service in services.readers(section, option):
                    found.setdefault(service, {}).setdefault(
                        section, {})[option] = value
        return found

    def traits(self) -> list[str]:
        return sorted(kvmtune_traits.from_facts(self.facts))


def check_host(name: str | None, facts: Facts) -> str | None:
    """The host name an export is for, or InputError: a name a tool would
    not take, or facts of a host that is not a KVM compute node."""
    source = facts.get('source') or 'the facts'
    if name is not None and not _HOST_NAME.match(name):
        raise InputError(f'not a host name: {name!r}', key='--host',
                         fix='give the inventory name of the compute host')
    virt = facts.get('virt') or {}
    flags = (facts.get('cpu') or {}).get('flags') or []
    # A capture made with kvm_intel/kvm_amd unloaded has no /dev/kvm and no
    # mechanism, but its CPU's vmx/svm make it a KVM host all the same (plan
    # accepted such a capture while export refused it:
    # tests/unit/test_hostile.py).
    if not virt.get('kvm_device') and not virt.get('mechanism') and \
            not {'vmx', 'svm'} & set(flags):
        raise InputError('not a KVM compute node: no /dev/kvm and no '
                         'VT-x/AMD-V in its facts', source=source,
                         fix='export for a compute host, from facts made '
                             'on it ("kvmtune host inspect --format json")')
    made_on = facts.get('hostname')
    if name and made_on and name.split('.')[0] != made_on.split('.')[0]:
        raise InputError(f'the facts were made on {made_on}, not on {name}: '
                         f'{name} is not the compute node they describe',
                         source=source, key='--host',
                         fix=f'run "kvmtune host inspect --format json" on '
                             f'{name} and give it with --facts')
    return name


def read_base(path: str, with_text: bool = False) -> Any:
    """nova.conf at ``path`` as {section: {option: [values]}} (and its
    text, ``with_text``)."""
    from kvmtune.tuning.novaconf import update

    text = update.read_config(path)
    ini = update.parse_config(path, text)
    return (ini_items(ini), text) if with_text else ini_items(ini)


def ini_items(ini: inifile.IniFile) -> dict[str, dict[str, list[str]]]:
    items: dict[str, dict[str, list[str]]] = {}
    for block in ini.blocks:
        if block.section is None:
            continue
        section = inifile.normalize_section(block.section)
        for entry in block.entries:
            items.setdefault(section, {}).setdefault(entry.key, []).append(
                entry.value)
    return items


def render_ini(conf: Mapping[str, Mapping[str, Any]], header: str) -> str:
    """oslo.config INI: a list value is a multi-valued option, one line per
    value (oslo.config's MultiOpt)."""
    lines = [f'# {line}' for line in _wrap(header)]
    for section, options in conf.items():
        lines += ['', f'[{section}]']
        for option, value in options.items():
            values = value if isinstance(value, list) else [value]
            lines.extend(f'{option} = {item}' for item in values)
    return '\n'.join(lines) + '\n'


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "'" if value in ('', 'yes', 'no', 'on', 'off', 'true',
                             'false', 'null', '~') else None
    return dumper.represent_scalar('tag:yaml.org,2002:str', value,
                                   style=style)


def _set(dumper: yaml.SafeDumper, value: set[Any]) -> yaml.Node:
    # Sorted: a set's own order changes from run to run (hash seeds).
    return dumper.represent_mapping('tag:yaml.org,2002:set',
                                    {item: None for item in sorted(value)})


_Dumper.add_representer(str, _str)
_Dumper.add_representer(set, _set)


def render_yaml(data: Any, header: str) -> str:
    body = yaml.dump(data, Dumper=_Dumper, default_flow_style=False,
                     sort_keys=False, width=1000)
    lines = [f'# {line}' for line in _wrap(header)]
    return '---\n' + '\n'.join(lines) + '\n' + body


def _wrap(text: str, width: int = 76) -> list[str]:
    words, line = text.split(), ''
    lines: list[str] = []
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f'{line} {word}' if line else word
    return lines + ([line] if line else [])


def provider_config(traits: Iterable[str]) -> dict[str, Any]:
    """Nova's provider config (doc/source/admin/managing-resource-
    providers.rst): kvmtune's traits on this compute node's provider."""
    return {'meta': {'schema_version': '1.0'},
            'providers': [{'identification': {'uuid': '$COMPUTE_NODE'},
                           'traits': {'additional': list(traits)}}]}


def modprobe_text(plan: 'Plan') -> str | None:
    """One file for all kvm modules' options, or None."""
    lines: list[str] = []
    for path in sorted(plan.modprobe):
        lines.extend(line for line in plan.modprobe[path].splitlines()
                     if line.strip())
    return '\n'.join(lines) + '\n' if lines else None


def host_files(ctx: Context, prefix: str = '') -> list[OutFile]:
    """The kernel arguments and modprobe lines, as files for the host
    (``prefix`` puts them under hosts/<host>/ for a tool that does not
    manage them)."""
    files = []
    text = modprobe_text(ctx.plan)
    if text:
        files.append(OutFile(
            os.path.join(prefix, MODPROBE_FILE),
            ''.join(f'# {line}\n' for line in _wrap(ctx.header)) + text,
            'text'))
    if ctx.plan.kernel_args:
        files.append(OutFile(os.path.join(prefix, GRUB_FILE), ''.join(
            f'# {line}\n' for line in _wrap(
                ctx.header + ' Kernel arguments: run update-grub and '
                'reboot for them to take effect.'))
            + grub_line(ctx.plan.kernel_args), 'text'))
    return files


# Inside the double quotes of a shell assignment (grub-mkconfig sources
# /etc/default/grub and grub.d/*.cfg with /bin/sh) these would be
# expanded or end the string.
_SHELL_SPECIAL = re.compile(r'["$`\\]')


def grub_line(args: Iterable[str]) -> str:
    """The line of /etc/default/grub (or a grub.d drop-in) that adds
    ``args`` to GRUB_CMDLINE_LINUX, which grub-mkconfig's 10_linux puts on
    every entry, recovery ones included; InputError for an argument the
    shell would change."""
    args = list(args)
    for arg in args:
        if _SHELL_SPECIAL.search(arg):
            raise InputError(f'kernel argument {arg!r} holds a character '
                             'the shell would expand in /etc/default/grub '
                             '(", $, ` or \\)', key='kernel_args',
                             fix='give the argument without it')
    return f'GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX {" ".join(args)}"\n'
