"""Run one workload's tool on this host and parse what it prints."""

from collections.abc import Mapping
import os
import subprocess
from typing import Any

from kvmtune.errors import KvmtuneError
from kvmtune.workloads import commands
from kvmtune.workloads import parsers
from kvmtune.workloads import Workload


def run(workload: Workload, target: str | None = None,
        peer: str | None = None, runtime: int | str | None = None,
        params: Mapping[str, Any] | None = None,
        timeout_margin: int = 60) -> tuple[list[str], dict[str, Any]]:
    """(argv, result) of ``workload`` run here, as the guest would run it."""
    argv = commands.argv(workload, 'client', target, peer, runtime, params)
    argv = [a.replace(commands.VCPUS, str(os.cpu_count())) for a in argv]
    seconds = int(runtime or workload.settings(params).get('runtime', 10))
    try:
        proc = subprocess.run(argv, capture_output=True, text=True,
                              timeout=seconds + timeout_margin)
    except FileNotFoundError:
        raise KvmtuneError(f'{argv[0]} not found',
                           fix=f'apt-get install {workload.tool}')
    except subprocess.TimeoutExpired:
        raise KvmtuneError(f'{workload.tool} did not finish within '
                           f'{seconds + timeout_margin} s')
    if proc.returncode:
        tail = (proc.stderr.strip().splitlines() or
                proc.stdout.strip().splitlines() or ['?'])[-1]
        raise KvmtuneError(f'{workload.tool} exited {proc.returncode}: '
                           f'{tail}', source=workload.name)
    return argv, parsers.parse(workload.tool, proc.stdout, workload.name,
                               emulated=False)
