"""Flavor extra specs kvmtune sets, with the rules Nova checks them by.

Nova validates extra specs at API microversion 2.86 and later (its
declarations live in nova/api/validation/extra_specs/); a flavor kvmtune
writes must pass there, so the same rules are declared here for the keys
kvmtune sets, and checked before anything reaches a cloud. Read against
nova 34.0.0: hw.py, traits.py, resources.py, validators.py and base.py.
"""

from collections.abc import Callable
from collections.abc import Mapping
import dataclasses
import re
from typing import cast

from kvmtune.errors import InputError

# strutils.bool_from_string(strict=True), which Nova uses for bool specs.
TRUE_STRINGS = ('1', 't', 'true', 'on', 'y', 'yes')
FALSE_STRINGS = ('0', 'f', 'false', 'off', 'n', 'no')

# Request-group suffix of numbered/named groups: ``trait1:``, ``resources_x:``
GROUP_PATTERN = r'([a-zA-Z0-9_-]{1,64})?'
CUSTOM_NAME_PATTERN = r'[A-Z0-9_]+'


@dataclasses.dataclass(frozen=True)
class ExtraSpec:
    """One extra spec: its name (maybe with ``{param}`` parts) and value."""

    name: str
    description: str
    type: type = str
    enum: tuple[str, ...] = ()
    pattern: str | None = None
    min: int | None = None
    # ((param name, regex), ...) for name parts
    parameters: tuple[tuple[str, str], ...] = ()
    values_help: str | None = None  # words for a pattern, shown in errors

    @property
    def name_regex(self) -> str:
        regex = re.escape(self.name)
        for param, pattern in self.parameters:
            regex = regex.replace(re.escape('{%s}' % param),
                                  f'(?P<{param}>{pattern})')
        return regex

    def valid_values(self) -> str:
        """Human words for what the value may be (used in errors)."""
        if self.enum:
            return ', '.join(self.enum)
        if self.type is bool:
            return 'true or false'
        if self.type is int:
            return ('an integer' if self.min is None
                    else f'an integer >= {self.min}')
        return self.values_help or f'a string matching {self.pattern}'

    def problem(self, value: object) -> str | None:
        """None if ``value`` is valid, else what is wrong with it."""
        text = _as_text(value)
        if self.type is bool:
            ok = text.lower() in TRUE_STRINGS + FALSE_STRINGS
        elif self.type is int:
            ok = re.fullmatch(r'[+-]?\d+', text.strip()) is not None and (
                self.min is None or int(text) >= self.min)
        elif self.pattern:
            ok = re.fullmatch(self.pattern, text) is not None
        else:
            ok = not self.enum or text in self.enum
        if ok:
            return None
        return f"'{text}' is not valid"


def _as_text(value: object) -> str:
    if isinstance(value, bool):
        return 'true' if value else 'false'
    return str(value)


# -- hw: (nova/api/validation/extra_specs/hw.py) ---------------------------

HW = (
    ExtraSpec(
        name='hw:cpu_policy',
        description='Pin each guest CPU to its own host CPU (dedicated), '
                    'float over the shared set (shared), or both (mixed).',
        enum=('dedicated', 'shared', 'mixed'),
    ),
    ExtraSpec(
        name='hw:cpu_thread_policy',
        description='How pinned guest CPUs use host SMT siblings.',
        enum=('prefer', 'isolate', 'require'),
    ),
    ExtraSpec(
        name='hw:emulator_threads_policy',
        description='Where QEMU emulator threads run: on the shared set '
                    '(share) or on a core of their own (isolate).',
        enum=('share', 'isolate'),
    ),
    ExtraSpec(
        name='hw:cpu_dedicated_mask',
        description='With hw:cpu_policy=mixed: the guest CPUs that are '
                    'pinned (the others float).',
        pattern=r'\^?\d+((-\d+)?(,\^?\d+(-\d+)?)?)*',
        values_help='a guest CPU list such as 0-1 or ^0',
    ),
    ExtraSpec(
        name='hw:mem_page_size',
        description='Guest RAM page size: small, large, any, or a size '
                    'such as 2MB, 1GB, 2048 (KiB).',
        pattern=r'(large|small|any|\d+([kKMGT]i?)?(b|bit|B)?)',
        values_help='small, large, any, or a size such as 2MB, 1GB, '
                    '2048 (KiB)',
    ),
    ExtraSpec(
        name='hw:numa_nodes',
        description='Number of guest NUMA nodes, each on its own host node.',
        type=int, min=1,
    ),
    ExtraSpec(
        name='hw:vif_multiqueue_enabled',
        description='virtio-net multiqueue: one queue pair per guest vCPU.',
        type=bool,
    ),
)

# -- trait: (traits.py) and resources: (resources.py) ----------------------

TRAIT_VALUES = ('required', 'forbidden')

CUSTOM_TRAIT = ExtraSpec(
    name='trait{group}:CUSTOM_{trait}',
    description='Require or forbid a custom trait.',
    enum=TRAIT_VALUES,
    parameters=(('group', GROUP_PATTERN), ('trait', CUSTOM_NAME_PATTERN)),
)
STANDARD_TRAIT = ExtraSpec(
    name='trait{group}:{trait}',
    description='Require or forbid a standard os-traits trait.',
    enum=TRAIT_VALUES,
    parameters=(('group', GROUP_PATTERN), ('trait', CUSTOM_NAME_PATTERN)),
)
CUSTOM_RESOURCE = ExtraSpec(
    name='resources{group}:CUSTOM_{resource}',
    description='Amount of a custom resource class.',
    type=int,
    parameters=(('group', GROUP_PATTERN),
                ('resource', CUSTOM_NAME_PATTERN)),
)
STANDARD_RESOURCE = ExtraSpec(
    name='resources{group}:{resource}',
    description='Amount of a standard os-resource-classes class.',
    type=int,
    parameters=(('group', GROUP_PATTERN),
                ('resource', CUSTOM_NAME_PATTERN)),
)

# Per guest NUMA node (hw.py's ``{num}`` specs): an uneven split.
NUMA_CPUS = ExtraSpec(
    name='hw:numa_cpus.{num}',
    description='The guest CPUs of guest NUMA node {num}.',
    pattern=r'\^?\d+((-\d+)?(,\^?\d+(-\d+)?)?)*',
    parameters=(('num', r'\d+'),),
    values_help='a guest CPU list such as 0-1 or 0,2',
)
NUMA_MEM = ExtraSpec(
    name='hw:numa_mem.{num}',
    description='The memory (MB) of guest NUMA node {num}.',
    type=int, min=1,
    parameters=(('num', r'\d+'),),
)

SPECS = {spec.name: spec for spec in HW}

# Namespaces whose unknown keys Nova rejects; kvmtune refuses them too.
KNOWN_NAMESPACES = ('hw', 'trait' + GROUP_PATTERN, 'resources' + GROUP_PATTERN)


def _standard_traits() -> set[str]:
    import os_traits
    return set(os_traits.get_traits())


def _standard_resource_classes() -> set[str]:
    import os_resource_classes
    return set(os_resource_classes.STANDARDS)


def find(name: str) -> tuple[ExtraSpec | None, str | None]:
    """Return (ExtraSpec, problem) for an extra spec name.

    The problem is None for a name Nova knows; the spec is None when the
    name is not one kvmtune can check.
    """
    if name in SPECS:
        return SPECS[name], None
    for spec in (NUMA_CPUS, NUMA_MEM):
        if re.fullmatch(spec.name_regex, name):
            return spec, None
    known: Callable[[], set[str]] | None
    for spec, known in ((CUSTOM_TRAIT, None),
                        (STANDARD_TRAIT, _standard_traits),
                        (CUSTOM_RESOURCE, None),
                        (STANDARD_RESOURCE, _standard_resource_classes)):
        match = re.fullmatch(spec.name_regex, name)
        if not match:
            continue
        groups = match.groupdict()
        part = groups.get('trait') or groups.get('resource')
        if known is not None and part not in known():
            kind = 'trait' if spec is STANDARD_TRAIT else 'resource class'
            return spec, (f"'{part}' is not a standard {kind}; custom names "
                          f"start with CUSTOM_ and use {CUSTOM_NAME_PATTERN}")
        return spec, None
    namespace = name.split(':', 1)[0] if ':' in name else None
    if namespace == 'hw':
        return None, "not an extra spec Nova knows in the 'hw' namespace"
    if namespace and any(re.fullmatch(ns, namespace)
                         for ns in KNOWN_NAMESPACES):
        return None, (f"not a valid name in the '{namespace}' namespace "
                      f"(trait and resource class names match "
                      f"{CUSTOM_NAME_PATTERN})")
    return None, 'not an extra spec kvmtune sets'


def validate(name: str, value: object, source: object = None,
             key: str | None = None) -> None:
    """Raise InputError unless ``name=value`` passes Nova's rules.

    :param source: the profile file the value came from
    :param key: where in that file (defaults to the extra spec name)
    """
    spec, problem = find(name)
    where = key or name
    if problem:
        raise InputError(problem, source=source, key=where,
                         fix='use an extra spec listed in '
                             'kvmtune/tuning/extra_specs.py')
    # find() names a spec whenever it finds no problem
    spec = cast(ExtraSpec, spec)
    problem = spec.problem(value)
    if problem:
        if key and key != name:
            problem = f'{problem} (for {name})'
        raise InputError(problem, source=source, key=where,
                         fix=f'valid values: {spec.valid_values()}')


def validate_all(extra_specs: Mapping[str, object],
                 source: object = None) -> None:
    for name, value in extra_specs.items():
        validate(name, value, source=source)


# KiB in one unit, as libvirt reads <page unit> / <memory unit> (any case).
KIB_PER_UNIT = {'k': 1, 'kb': 1, 'kib': 1, 'm': 1024, 'mb': 1024,
                'mib': 1024, 'g': 1024 ** 2, 'gb': 1024 ** 2,
                'gib': 1024 ** 2}

# hw:mem_page_size as nova/virt/hardware.py _get_numa_pagesize_constraint
# reads it: the words (case as written), digits (KiB), else
# oslo_utils.strutils.string_to_bytes in its IEC system: a number, an
# optional K/M/G/T/P prefix (with or without "i", powers of 1024) and a
# unit that must be there: B (bytes), or b / bit (bits, an eighth).
_IEC_SIZE = re.compile(r'(\d+)([KMGTP]i?)?(b|bit|B)')
_IEC_POWER = {'K': 1, 'M': 2, 'G': 3, 'T': 4, 'P': 5}


def page_size_kb(spec: str | None) -> str | int | float | None:
    """``hw:mem_page_size`` as Nova reads it: None (not given), 'small',
    'large', 'any', or a size in KiB (``2048``, ``2MB``, ``1GiB``; a bit
    size such as ``2Mb`` is an eighth, and may be no whole KiB: a float,
    a size no host has).

    :raises ValueError: what Nova refuses (MemoryPageSizeInvalid), such
        as ``1G`` (no unit) or ``Large``
    """
    if not spec:
        return None
    if spec in ('small', 'large', 'any'):
        return spec
    if spec.isdigit():
        return int(spec)
    match = _IEC_SIZE.fullmatch(spec)
    if not match:
        raise ValueError(f'hw:mem_page_size {spec!r}')
    number, prefix, unit = match.groups()
    size = int(number) * 1024 ** _IEC_POWER[prefix[0]] if prefix \
        else int(number)
    if unit in ('b', 'bit'):
        if size % (8 * 1024) == 0:
            return size // (8 * 1024)
        return size / (8 * 1024)
    return size // 1024 if size % 1024 == 0 else size / 1024


def required_traits(specs: Mapping[str, object]) -> set[str]:
    """The traits extra specs require of a host, ``trait:NAME=required``
    (the unnumbered request group's: the flavor's own)."""
    return {key[len('trait:'):] for key, value in specs.items()
            if key.startswith('trait:') and value == 'required'}
