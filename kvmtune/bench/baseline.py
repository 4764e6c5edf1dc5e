"""The bare-host baseline: the same workload, same command line, no guest.

This module measures and writes the baseline file; its shape (JSON,
schema 1) is described, checked and read as the bare host's Run in one
place, kvmtune.results.baseline.
"""

from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
import contextlib
import datetime
import os
import shutil
import tempfile
from typing import Any
from typing import cast
from typing import TYPE_CHECKING

from kvmtune.errors import InputError
from kvmtune.facts.types import Facts
from kvmtune.results import baseline as results_baseline
from kvmtune.results import kinds
from kvmtune.workloads import Workload

if TYPE_CHECKING:
    from kvmtune.results.records import Record

SCRATCH_DIR = '/var/tmp'   # not tmpfs: fio needs O_DIRECT
_UNITS = {'': 1, 'K': 1024, 'M': 1024 ** 2, 'G': 1024 ** 3}


def size_bytes(size: int | str) -> int:
    text = str(size).upper()
    unit = text[-1] if text[-1] in _UNITS else ''
    return int(text[:-1] if unit else text) * _UNITS[unit]


@contextlib.contextmanager
def scratch_file(size: int | str, fill: bool) -> Iterator[str]:
    """A fresh file of ``size`` bytes, removed afterwards.

    :param fill: write real blocks (read workloads: reads of holes are
        answered without I/O and would flatter the host)
    """
    tmpdir = tempfile.mkdtemp(prefix='kvmtune-baseline-', dir=SCRATCH_DIR)
    path = os.path.join(tmpdir, 'scratch.img')
    try:
        with open(path, 'wb') as f:
            if fill:
                block = os.urandom(1024 * 1024)
                for _ in range(size_bytes(size) // len(block)):
                    f.write(block)
            f.flush()
            os.fsync(f.fileno())
        yield path
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def _facts() -> Facts | None:
    try:
        from kvmtune import facts
    except ImportError:
        return None
    return facts.gather()


def run(workload: Workload, target: str | None = None,
        peer: str | None = None, runtime: int | str | None = None,
        params: dict[str, Any] | None = None,
        destroy_data: bool = False) -> dict[str, Any]:
    """Run ``workload`` on this host and return the baseline document."""
    from kvmtune.bench import hostrun
    from kvmtune.bench import targets

    settings = workload.settings(params)
    scratch = workload.target == 'disk' and not target
    if workload.target == 'peer':
        target = None
        if not peer:
            raise InputError('a network workload needs --peer', key='--peer',
                             fix=f'start "{workload.tool}" as a server '
                                 'there and give its address')
        argv, result = hostrun.run(workload, peer=peer, runtime=runtime,
                                   params=params)
    elif workload.target == 'none':    # CPU, memory: nothing to name
        target = None
        argv, result = hostrun.run(workload, runtime=runtime, params=params)
    elif scratch:
        with scratch_file(settings['size'],
                          fill=not workload.writes(params)) as target:
            argv, result = hostrun.run(workload, target=target,
                                       runtime=runtime, params=params)
    else:
        why = targets.refusal(cast(str, target), workload.writes(params))
        if why and not destroy_data:
            raise InputError(f'refusing to write to {why}', source=target,
                             key='--target', fix='name an empty file, or '
                             'pass --destroy-data if its data may go')
        argv, result = hostrun.run(workload, target=target, runtime=runtime,
                                   params=params)
    facts = _facts()
    runtime = int(runtime or settings.get('runtime', 10))
    return {
        'schema': results_baseline.SCHEMA, 'kind': kinds.FILE_BASELINE,
        'time': datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec='seconds').replace('+00:00', 'Z'),
        'workload': workload.name, 'params': dict(params or {}),
        'runtime': runtime,
        'target': target, 'scratch': scratch, 'peer': peer,
        'command': argv,
        'emulated': False, 'result': result, 'facts': facts,
        'record': record(workload, facts, params, runtime, argv),
    }


def record(workload: Workload, facts: Facts | None,
           params: dict[str, Any] | None, runtime: int,
           argv: list[str]) -> 'Record':
    """The result record (kvmtune.results.records) of a bare-host run."""
    from kvmtune.bench import qemu
    from kvmtune.results import records

    virt = why = None
    if facts:
        virt, why = qemu.choose_accel('auto', facts.get('virt') or {})
    return records.make(kinds.BASELINE, workload, facts, 'bare',
                        records.Conditions(params=params, runtime=runtime,
                                           command=argv, virt=virt,
                                           why=why))


def save(doc: Mapping[str, Any], path: str) -> None:
    """Write atomically (kvmtune.fileio, the one writer)."""
    from kvmtune import fileio

    from kvmtune import jsonout

    fileio.write_atomic(path, jsonout.dumps(doc, source=path,
                                            sort_keys=True) + '\n')


def load(path: str) -> dict[str, Any]:
    """Read a baseline file back, validating its shape."""
    from kvmtune import inputs

    return results_baseline.validate(inputs.load_json(path), path)


def for_compare(choice: str | None, workload: Workload,
                params: dict[str, Any], runtime: int | str | None,
                say: Callable[[str], object] = print
                ) -> tuple[dict[str, Any] | None, str | None]:
    """The bare host's document for a --compare's last column, or (None,
    why not): ``choice`` is ``run`` (measure here; the default but for a
    network workload), ``none``, or a baseline file of this workload."""
    choice = choice or ('run' if workload.target != 'peer' else 'none')
    if choice == 'none':
        return None, 'no bare-host column (--baseline none)'
    if choice == 'run':
        if workload.target == 'peer':
            return None, ('no bare-host column: a network baseline needs '
                          'a peer (kvmtune baseline --peer HOST, then '
                          '--baseline FILE)')
        say(f'bare host: running {workload.name} here (kvmtune '
            'baseline)')
        return run(workload, runtime=runtime, params=params), None
    doc = load(choice)
    if doc['workload'] != workload.name:
        raise InputError(f'a baseline of {doc["workload"]}, not '
                         f'{workload.name}', source=choice,
                         key='workload', fix='record one with kvmtune '
                         f'baseline --workload {workload.name}')
    return doc, None
