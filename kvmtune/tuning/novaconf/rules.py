"""kvmtune's own checks of nova.conf changes, made with or without Nova.

They keep the file readable by oslo.config (names and values that fit on
one ``key = value`` line) and catch the mistakes in the options kvmtune
itself sets, with the syntax Nova documents for them. Nova's own option
definitions, when Nova is importable, are checked after these
(kvmtune.tuning.novaconf.nova_check).
"""

from collections.abc import Callable
from collections.abc import Mapping
import re
from typing import Any

from kvmtune.facts.cpulist import parse_cpu_spec

# {section: {option: value}}: a str, a list of them (a multi-valued
# option), or None (remove the option)
Changes = Mapping[str, Mapping[str, Any]]

_SECTION = re.compile(r'^[A-Za-z0-9_.\-]+\Z')
_OPTION = re.compile(r'^[A-Za-z0-9_\-]+\Z')
_PAGE_SIZE = re.compile(r'^\d+([KMGT]i?B?)?\Z', re.IGNORECASE)
CPU_SET_OPTIONS = {('compute', 'cpu_shared_set'),
                   ('compute', 'cpu_dedicated_set'),
                   ('DEFAULT', 'vcpu_pin_set')}
RESERVED_HUGE_PAGES = ('DEFAULT', 'reserved_huge_pages')
HUGE_PAGES_KEYS = ('node', 'size', 'count')


class Problem(ValueError):
    """A change that cannot go into nova.conf: what and how to fix it."""

    def __init__(self, section: str, option: str, reason: str,
                 fix: str) -> None:
        self.section, self.option = section, option
        self.reason, self.fix = reason, fix
        super().__init__(reason)


def _check_huge_pages(item: str) -> None:
    pairs = dict(p.partition(':')[::2] for p in item.split(','))
    if sorted(pairs) != sorted(HUGE_PAGES_KEYS):
        raise ValueError(f'{item!r} is not node:N,size:S,count:N')
    if not (pairs['node'].isdigit() and pairs['count'].isdigit()
            and _PAGE_SIZE.match(pairs['size'])):
        raise ValueError(f'{item!r}: node and count are numbers, size is '
                         'KiB or has a unit (2048, 2MB, 1GB)')


def _check_value(section: str, option: str, value: object) -> None:
    if not isinstance(value, str):
        raise Problem(section, option, f'value {value!r} is not a string',
                      'give nova.conf values as strings')
    if any(c in value for c in '\r\n\0'):
        raise Problem(section, option, 'a value must fit on one line',
                      'remove line breaks from the value')
    try:
        if (section, option) in CPU_SET_OPTIONS:
            parse_cpu_spec(value)
        elif (section, option) == RESERVED_HUGE_PAGES:
            _check_huge_pages(value)
    except ValueError as exc:
        raise Problem(section, option, str(exc),
                      'give the value in the syntax Nova documents') from None


def check(changes: Changes) -> None:
    """Raise Problem for the first change that cannot be written."""
    for section, options in changes.items():
        if not _SECTION.match(section or ''):
            raise Problem(section, '', f'{section!r} is not a section name',
                          'use letters, digits, "_", "-" and "."')
        for option, value in options.items():
            if not _OPTION.match(option or ''):
                raise Problem(section, option, f'{option!r} is not an '
                              'option name', 'use letters, digits, "_", "-"')
            values = value if isinstance(value, list) else [value]
            for item in values:
                _check_value(section, option, item)
    _check_cpu_sets_disjoint(changes.get('compute', {}))


def _check_cpu_sets_disjoint(compute: Mapping[str, Any]) -> None:
    shared = compute.get('cpu_shared_set')
    dedicated = compute.get('cpu_dedicated_set')
    if not shared or not dedicated:
        return
    both = parse_cpu_spec(shared) & parse_cpu_spec(dedicated)
    if both:
        raise Problem('compute', 'cpu_dedicated_set',
                      f'CPUs {sorted(both)} are also in cpu_shared_set; '
                      'Nova refuses to start with overlapping sets',
                      'give each host CPU to one of the two sets')


# Nova's guest CPU rule (nova/conf/libvirt.py, the help of cpu_mode and
# cpu_models; enforced at nova-compute start by
# LibvirtDriver._check_cpu_compatibility in nova/virt/libvirt/driver.py):
# [libvirt] cpu_models (deprecated name cpu_model) is refused unless
# cpu_mode is custom, and required when it is. cpu_model_extra_flags is
# valid with every mode, so it stays.
CPU_MODE = ('libvirt', 'cpu_mode')
CPU_MODELS = ('cpu_models', 'cpu_model')


def follow_ups(changes: Changes, current: Callable[[str, str], str | None]
               ) -> tuple[dict[str, dict[str, None]], list[str]]:
    """What Nova requires to go with ``changes`` in a file that has
    ``current(section, option)`` (its value or None).

    Returns ({section: {option: None}} of options to delete, [notices]);
    raises Problem when no edit can satisfy Nova.
    """
    libvirt = changes.get(CPU_MODE[0], {})
    mode = libvirt.get(CPU_MODE[1])
    if mode is None:
        return {}, []
    models = [o for o in CPU_MODELS if libvirt.get(o)]
    if mode == 'custom':
        if not models and not any(current(CPU_MODE[0], o)
                                  for o in CPU_MODELS):
            raise Problem(CPU_MODE[0], 'cpu_models',
                          'cpu_mode = custom needs cpu_models: nova-compute '
                          'refuses to start without it',
                          'name the CPU models in the profile, or use '
                          'cpu_mode host-model or host-passthrough')
        return {}, []
    if models:
        raise Problem(CPU_MODE[0], models[0],
                      f'set with cpu_mode = {mode}: nova-compute refuses to '
                      'start with cpu_models unless cpu_mode is custom',
                      'drop cpu_models from the profile, or use cpu_mode '
                      'custom')
    gone = {o: None for o in CPU_MODELS
            if current(CPU_MODE[0], o) is not None and o not in libvirt}
    notices = [f'[libvirt] {o} = {current(CPU_MODE[0], o)} removed: '
               f'nova-compute refuses it with cpu_mode = {mode}'
               for o in gone]
    return ({CPU_MODE[0]: gone} if gone else {}), notices
