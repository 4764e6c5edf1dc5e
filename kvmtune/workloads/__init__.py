"""Benchmark workloads: definitions, the guest job, console framing, parsers.

A workload is one YAML file in ``kvmtune/data/workloads/`` (package
data): which tool, against a disk, a peer or nothing (``none``: CPU and
memory workloads need only the guest's vCPUs and RAM), whether
it writes, default runtime and size, and the tool's options. The same
definition drives the guest (``kvmtune.workloads.guestjob``) and the bare host
(``kvmtune baseline``), so both run the same command line.
"""

from collections.abc import Iterable
from collections.abc import Mapping
import dataclasses
import os
import re
from typing import Any

from kvmtune.errors import InputError

TOOLS = ('fio', 'iperf3', 'sockperf', 'sysbench')
TARGETS = ('disk', 'peer', 'none')
WRITE_MODES = ('write', 'randwrite', 'rw', 'randrw', 'trim', 'randtrim')
SIZE_RE = re.compile(r'^[0-9]+[KMG]?\Z')


def workload_dirs() -> list[str]:
    """The packaged directory (package data)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return [d for d in (os.path.join(here, 'data', 'workloads'),)
            if os.path.isdir(d)]


@dataclasses.dataclass(frozen=True)
class Workload:
    name: str
    description: str
    tool: str
    target: str
    access: str
    source: str
    defaults: dict[str, Any]
    options: dict[str, Any]

    def settings(self, params: Mapping[str, Any] | None = None
                 ) -> dict[str, Any]:
        """The options with ``params`` applied (only known keys)."""
        params = dict(params or {})
        known = set(self.options) | set(self.defaults)
        unknown = sorted(set(params) - known)
        if unknown:
            raise InputError(f'unknown parameter {unknown[0]!r}',
                             source=self.name, key='params',
                             fix=f'use one of {", ".join(sorted(known))}')
        merged = {**self.defaults, **self.options, **params}
        if 'size' in merged and not SIZE_RE.match(str(merged['size'])):
            raise InputError(f'not a size: {merged["size"]!r}',
                             source=self.name, key='size',
                             fix='bytes with an optional K, M or G suffix')
        return merged

    def check_params(self, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` a user gave (``--param``) as settings() takes them:
        a parameter whose default is a whole number (runtime, iodepth,
        port, ...) must be one, >= 1. "--param runtime=abc" was an
        internal error further on (tests/unit/test_hostile.py)."""
        self.settings(params)
        defaults = {**self.options, **self.defaults}
        for key, value in params.items():
            default = defaults.get(key)
            if isinstance(default, int) and not isinstance(default, bool) \
                    and (isinstance(value, bool) or
                         not isinstance(value, int) or value < 1):
                raise InputError(f'not a whole number >= 1: {value!r}',
                                 source=self.name, key=key,
                                 fix=f'e.g. --param {key}={default}')
        return params

    def writes(self, params: Mapping[str, Any] | None = None) -> bool:
        """True when the workload overwrites its target disk."""
        if self.tool != 'fio':
            return False
        return self.settings(params).get('rw') in WRITE_MODES


def _from_dict(data: Any, source: str) -> Workload:
    if not isinstance(data, dict):
        raise InputError('not a mapping', source=source,
                         fix='a workload file maps name, tool and target')
    missing = [k for k in ('name', 'tool', 'target') if k not in data]
    if missing:
        raise InputError(f'missing {missing[0]!r}', source=source,
                         fix='see kvmtune/data/workloads/ for the format')
    if data['tool'] not in TOOLS:
        raise InputError(f'unknown tool {data["tool"]!r}', source=source,
                         key='tool', fix=f'one of {", ".join(TOOLS)}')
    if data['target'] not in TARGETS:
        raise InputError(f'unknown target {data["target"]!r}',
                         source=source, key='target',
                         fix=f'one of {", ".join(TARGETS)}')
    return Workload(
        name=data['name'], description=data.get('description', ''),
        tool=data['tool'], target=data['target'],
        access=data.get('access', 'read'), source=data.get('source', ''),
        defaults=dict(data.get('defaults') or {}),
        options=dict(data.get('options') or {}))


def load_all(dirs: Iterable[str] | None = None) -> dict[str, Workload]:
    """{name: Workload} from every ``*.yaml`` in ``dirs``."""
    from kvmtune import yamlinput

    found = {}
    for d in (dirs if dirs is not None else workload_dirs()):
        for name in sorted(os.listdir(d)):
            if not name.endswith('.yaml'):
                continue
            path = os.path.join(d, name)
            # Duplicate or non-string keys, nesting, non-UTF-8: one line.
            data = yamlinput.load_yaml(path, max_bytes=1 << 20)
            workload = _from_dict(data, path)
            if workload.name != name[:-5]:
                raise InputError(f'name {workload.name!r} differs from the '
                                 'file name', source=path, key='name',
                                 fix=f'name it {name[:-5]!r} or rename the '
                                     'file')
            found[workload.name] = workload
    return found


def get(name: str, dirs: Iterable[str] | None = None) -> Workload:
    workloads = load_all(dirs)
    if name not in workloads:
        raise InputError(f'unknown workload {name!r}', key='--workload',
                         fix=f'one of {", ".join(sorted(workloads))}')
    return workloads[name]
