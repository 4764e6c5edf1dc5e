"""The shape of a facts document (doc/facts.md), checked when loading one.

Specs read like the JSON they describe: a type, ``Optional(spec)``,
``[spec]`` for a list, ``MapOf(spec)`` for free-form keys, and a dict for an
object whose listed keys are required (extra keys are allowed: parts may add
keys, never drop or rename one).
"""

from collections.abc import Iterator
from typing import Any

SCHEMA_VERSION = 1


class Optional:
    def __init__(self, spec: Any) -> None:
        self.spec = spec


class MapOf:
    def __init__(self, spec: Any) -> None:
        self.spec = spec


class OneOf:
    def __init__(self, *values: Any) -> None:
        self.values = values


_MODULE = Optional(MapOf(str))
_POOL = {'size_kb': int, 'total': Optional(int), 'free': Optional(int)}
_MECHANISM = OneOf('vmx', 'svm', 'pvm', None)

FACTS: dict[str, Any] = {
    'schema': int,
    'hostname': Optional(str),
    'cpu': {
        'vendor': Optional(str),
        'model_name': Optional(str),
        'flags': Optional([str]),
        'online': [int],
        'sockets': Optional(int),
        'cores_per_socket': Optional(int),
        'threads_per_core': Optional(int),
        'thread_siblings': Optional([[int]]),
        'pdpe1gb': Optional(bool),
    },
    'virt': {
        'kvm_device': bool,
        'kvm_usable': Optional(bool),
        'modules': {'kvm': _MODULE, 'kvm_intel': _MODULE,
                    'kvm_amd': _MODULE, 'kvm_pvm': _MODULE},
        'mechanism': _MECHANISM,
        'nested': Optional(bool),
        'nested_mechanism': _MECHANISM,
        'ept': Optional(bool),
        'is_guest': Optional(bool),
        'hypervisor_vendor': Optional(str),
    },
    'memory': {'total_mb': Optional(int),
               'hugepage_default_kb': Optional(int)},
    'numa': {'nodes': [{'id': int, 'cpus': Optional([int]),
                        'memory_mb': Optional(int),
                        'hugepages': [_POOL]}]},
    'vhost_net': {'available': bool, 'device': bool,
                  'module': OneOf('loaded', 'builtin', 'absent')},
    'kernel': {
        'release': Optional(str),
        'cmdline': Optional(str),
        'args': {
            'isolcpus': [int],
            'isolcpus_flags': [str],
            'nohz_full': [int],
            'hugepages': [{'size': Optional(str), 'count': int}],
            'default_hugepagesz': Optional(str),
            'hugepagesz': [str],
            'iommu': MapOf(Optional(str)),
        },
    },
    'versions': {'libvirt': Optional(str), 'qemu': Optional(str)},
}

_TYPE_NAMES = {int: 'an integer', str: 'a string', bool: 'true or false',
               dict: 'an object', list: 'a list'}


def _is(value: Any, kind: type) -> bool:
    if kind is int:     # JSON true is not a CPU number
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def problems(value: Any, spec: Any = FACTS,
             key: str = '') -> Iterator[tuple[str, str]]:
    """Yield (key, problem) for every place ``value`` breaks ``spec``."""
    if isinstance(spec, Optional):
        if value is not None:
            yield from problems(value, spec.spec, key)
    elif isinstance(spec, OneOf):
        if value not in spec.values:
            allowed = ', '.join(str(v).replace('None', 'null')
                                for v in spec.values)
            yield key, f'{_short(value)} is not one of {allowed}'
    elif isinstance(spec, list):
        if not _is(value, list):
            yield key, f'expected {_TYPE_NAMES[list]}, got {_short(value)}'
            return
        for index, item in enumerate(value):
            yield from problems(item, spec[0], f'{key}[{index}]')
    elif isinstance(spec, (dict, MapOf)):
        if not _is(value, dict):
            yield key, f'expected {_TYPE_NAMES[dict]}, got {_short(value)}'
            return
        if isinstance(spec, MapOf):
            for name, item in value.items():
                yield from problems(item, spec.spec, f'{key}.{name}')
            return
        for name, item_spec in spec.items():
            path = f'{key}.{name}' if key else name
            if name not in value:
                yield path, 'missing'
            else:
                yield from problems(value[name], item_spec, path)
    elif not _is(value, spec):
        yield key, f'expected {_TYPE_NAMES[spec]}, got {_short(value)}'


def _short(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + '...'
