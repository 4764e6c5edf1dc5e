#!/usr/bin/env python3
"""Per-VM share of a scaling sweep (N VMs against 1), from a Rally task
result: the figure the kvmtune_scaling SLA judges.

Whether emulated guests on a busy 2-core host reach a share is the host's
doing, not the code's: the functional tier asserts that the SLA judged
the figures right (tests/functional/test_rally_sweep.py,
sla_as_computed), and this prints the figures and the SLA's verdict.

  python benchmarks/sweep_share.py TASK_RESULTS.json [--min-share 0.5]

TASK_RESULTS.json: `rally task report --json` or `rally task results` of
a disk or network sweep.
"""

import argparse
import json
import sys

from kvmtune.errors import KvmtuneError
from kvmtune.results import analysis
from kvmtune.results import rally as rally_results


def shares(doc, source):
    """{VM count: per-VM share against 1 VM} and the metric's unit."""
    an = analysis.analyse(rally_results.runs_from(doc, source))
    points = next(iter(an.points.values()), [])
    return {p.vms: p.vs_one for p in points}, an.unit


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('results')
    parser.add_argument('--min-share', type=float, default=0.5)
    args = parser.parse_args(argv)
    try:
        with open(args.results) as f:
            doc = json.load(f)
        found, unit = shares(doc, args.results)
        verdicts = [s for _, _, _, sla in rally_results.workloads(
            doc, args.results) for s in sla
            if s['criterion'] == 'kvmtune_scaling']
    except (OSError, ValueError, KvmtuneError) as exc:
        line = exc.line() if isinstance(exc, KvmtuneError) else exc
        print(f'sweep_share: error: {line}', file=sys.stderr)
        return 1
    print(f'{"VMs":>4} {"per-VM " + (unit or "figure") + " vs 1 VM":>26}')
    for vms, share in sorted(found.items()):
        shown = '-' if share is None else f'{share:.0%}'
        low = share is not None and share < args.min_share
        print(f'{vms:>4} {shown:>26}{"  < min_share" if low else ""}')
    for verdict in verdicts:
        said = 'passed' if verdict['success'] else 'failed'
        print(f'SLA kvmtune_scaling: {said}: {verdict["detail"]}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
