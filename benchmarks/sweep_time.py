#!/usr/bin/env python3
"""Wall time of each step of a scaling sweep, from a Rally task result.

A sweep's cost grows with the VM count: the guests boot together (under
QEMU TCG they share two cores) and every guest must report before the
step ends. This prints, per flavor and step, the iteration's wall time
(duration plus the scenario's idle waits) and where it went: creating
servers, waiting for ACTIVE, waiting for the guests' results (mostly the
common start_at margin plus the workload's runtime), deleting them.

  python benchmarks/sweep_time.py TASK_RESULTS.json

TASK_RESULTS.json: `rally task report --json` or `rally task results`.
"""

import argparse
import sys

from kvmtune.errors import KvmtuneError
from kvmtune.report import rally_results
from kvmtune.report import vmtable

PHASES = (('kvmtune.create_servers', 'create'),
          ('kvmtune.wait_active', 'active'),
          ('kvmtune.wait_results', 'results'),
          ('kvmtune.delete_servers', 'delete'))


def phase_seconds(atomic_actions):
    """Seconds per atomic action name, in either Rally format."""
    if isinstance(atomic_actions, dict):    # old: {name: duration}
        return {k: v or 0.0 for k, v in atomic_actions.items()}
    out = {}
    for action in atomic_actions:
        if action.get('finished_at') is not None:
            out[action['name']] = out.get(action['name'], 0.0) + (
                action['finished_at'] - action['started_at'])
    return out


def steps(doc, source):
    """(flavor, VM count, wall s, {phase: s}, error) per iteration."""
    for name, args, data, _ in rally_results.workloads(doc, source):
        if name not in rally_results.SCENARIOS:
            continue
        counts = args.get('vm_counts') or []
        flavor = rally_results._name(args.get('flavor'))
        for i, it in enumerate(data):
            rows = vmtable.rows_as_dicts(it.get('output'))
            vms = (len(vmtable.clients(rows)) if rows is not None
                   else counts[i % len(counts)] if counts else '?')
            wall = it['duration'] + it.get('idle_duration', 0.0)
            yield (flavor, vms, wall, phase_seconds(it['atomic_actions']),
                   ': '.join(it['error'][:1]) if it.get('error') else '')


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('results', metavar='TASK_RESULTS.json')
    args = parser.parse_args(argv)
    try:
        doc = rally_results.read(args.results)
        rows = list(steps(doc, args.results))
    except KvmtuneError as exc:
        print(f'sweep_time: error: {exc.line()}', file=sys.stderr)
        return 2
    except (KeyError, TypeError) as exc:
        print(f'sweep_time: error: {args.results}: malformed Rally result '
              f'({exc!r})', file=sys.stderr)
        return 2
    if not rows:
        print(f'sweep_time: error: {args.results}: no KvmTune scaling '
              'workload', file=sys.stderr)
        return 2
    head = ['flavor', 'VMs', 'wall s'] + [p for _, p in PHASES] + ['error']
    table = [[f, str(n), f'{w:.1f}']
             + [f'{ph.get(k, 0.0):.1f}' for k, _ in PHASES] + [e]
             for f, n, w, ph, e in rows]
    widths = [max(len(r[i]) for r in table + [head])
              for i in range(len(head))]
    for r in [head] + table:
        print('  '.join(c.ljust(w) if i in (0, len(head) - 1) else
                        c.rjust(w) for i, (c, w) in
                        enumerate(zip(r, widths))).rstrip())
    print(f'total: {sum(r[2] for r in rows):.1f} s over {len(rows)} steps')
    return 0


if __name__ == '__main__':
    sys.exit(main())
