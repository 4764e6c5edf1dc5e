"""Run a workload on the bare host and save the result.

The same tool and command line a benchmark guest runs (the workload
definitions in kvmtune/data/workloads), here on the physical host, saved
as JSON with the host's facts so that `kvmtune report` can compare guests
against it (kvmtune.bench.baseline.load reads it back).

Disk workloads use a fresh scratch file by default (filled with data for
read workloads, removed afterwards). --target names a file or a block
device instead: a write workload refuses a block device or a non-empty
file unless --destroy-data. Network workloads need --peer, a host where
the server runs (iperf3 -s, or sockperf server --tcp -i 0.0.0.0). CPU
and memory workloads (sysbench-*) need neither.

The file carries a record (kvmtune.results.records): host facts digest
and key facts, the workload, its parameters and command, kvmtune's
version and the time, so that `kvmtune report` can check what it
compares.

Example:
  kvmtune baseline --workload fio-randread-4k --output baseline.json
"""

import argparse
from collections.abc import Iterable
from collections.abc import Mapping
from typing import Any

from kvmtune.errors import InputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--workload', required=True,
                        help='Workload name (kvmtune/data/workloads).')
    where = parser.add_mutually_exclusive_group()
    where.add_argument('--target', metavar='PATH',
                       help='File or block device for disk workloads '
                            '(default: a fresh scratch file).')
    where.add_argument('--peer', metavar='HOST',
                       help='Server address for network workloads.')
    parser.add_argument('-o', '--output', required=True, metavar='FILE',
                        help='Baseline JSON to write (atomically).')
    parser.add_argument('--runtime', type=int, metavar='SECONDS',
                        help='Override the workload\'s runtime.')
    parser.add_argument('--param', action='append', default=[],
                        metavar='KEY=VALUE',
                        help='Override a workload option, e.g. size=256M '
                             'or rw=randwrite (repeatable).')
    parser.add_argument('--destroy-data', action='store_true',
                        help='Allow a write workload on a block device or '
                             'a file holding data.')


def parse_params(pairs: Iterable[str]) -> dict[str, int | str]:
    params: dict[str, int | str] = {}
    for pair in pairs:
        key, sep, value = pair.partition('=')
        if not sep or not key:
            raise InputError(f'not KEY=VALUE: {pair!r}', key='--param',
                             fix='e.g. --param bs=8k (the workload\'s '
                                 'parameters: kvmtune/data/workloads)')
        params[key] = int(value) if value.isdigit() else value
    return params


def figures(result: Mapping[str, Any]) -> list[str]:
    """A baseline result's figures as the summary line prints them: the
    unscaled ones to one decimal, bytes/s and latency by the renderer in
    its units (MiB/s, us; kvmtune.results.units)."""
    from kvmtune.report import render
    from kvmtune.results.units import UNITS

    out = [f'{k} {result[k]:.1f}'
           for k in ('iops', 'events_s', 'tps', 'gbit_s')
           if result.get(k) is not None]
    if result.get('bw_bytes_s') is not None:
        out.append(f'{render.figure("bw_bytes_s", result["bw_bytes_s"])} '
                   f'{UNITS["bw_bytes_s"][0]}')
    mean = (result.get('lat_ns') or {}).get('mean')
    if mean is not None:
        out.append(f'lat mean {render.figure("lat_mean_ns", mean)} us')
    return out


def run(args: argparse.Namespace) -> int | None:
    from kvmtune.bench import baseline
    from kvmtune import workloads

    workload = workloads.get(args.workload)
    if args.runtime is not None and args.runtime <= 0:
        raise InputError('must be positive', key='--runtime',
                         fix='give the seconds the tool runs, e.g. '
                             '--runtime 10')
    doc = baseline.run(workload, target=args.target, peer=args.peer,
                       runtime=args.runtime,
                       params=workload.check_params(
                           parse_params(args.param)),
                       destroy_data=args.destroy_data)
    baseline.save(doc, args.output)
    print(f'{workload.name} on the bare host ({" ".join(doc["command"])}):'
          f' {", ".join(figures(doc["result"]))}')
    print(f'baseline saved to {args.output}'
          + ('' if doc['facts'] else ' (no host facts: kvmtune.facts '
             'unavailable)'))
    return 0
