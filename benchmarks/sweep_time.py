#!/usr/bin/env python3
"""Wall time of each step of a scaling sweep, from a Rally task result.

A sweep's cost grows with the VM count: the guests boot together (under
QEMU TCG they share two cores) and every guest must report before the
step ends. This prints, per flavor and step, the iteration's wall time
(duration plus the scenario's idle waits) and its budget from the
scenario's atomic actions (kvmtune.results.rally.BUDGET): boot (API
calls to ACTIVE), ready (ACTIVE to every guest ready), workload (start
signal to every verdict; with start_mode "at" the whole wait for
start_at), collect, delete. With the signal start (doc/design.md 6) it
also prints the slowest guest's API-to-ready time and checks the step against
the target: wall <= slowest ready + runtime + 20 s.

  python benchmarks/sweep_time.py TASK_RESULTS.json... [--against OLD.json...]

TASK_RESULTS.json: `rally task report --json` or `rally task results`;
several files are one run (e.g. a step rerun on its own). --against: a run
of the same sweep in the old start_at mode; its table follows and the
ratio of the two totals closes the output. Totals count the steps in which
every guest was valid (a step that failed is listed, not counted), and a
ratio is given only when both runs have the same VM counts.
"""

import argparse
import sys

from kvmtune.errors import KvmtuneError
from kvmtune.results import rally as rally_results

PHASES = tuple(name for name, _ in rally_results.BUDGET)
# The target (doc/design.md 6, step time budget): a step ends this long
# after its slowest guest was ready and the workload ran.
SLACK = 20.0


def steps(doc, source):
    """(flavor, VM count, valid guests, budget, runtime, error) per
    iteration of every KvmTune scaling workload."""
    for name, args, data, _ in rally_results.workloads(doc, source):
        if name not in rally_results.SCENARIOS:
            continue
        counts = args.get('vm_counts') or []
        flavor = rally_results.name_of(args.get('flavor'))
        runtime = float(args.get('runtime') or 10)
        for i, it in enumerate(data):
            rows = rally_results.rows_of(it.get('output'), source)
            guests = rally_results.measuring(rows or [])
            if rows is not None:
                vms = len(guests)
                valid = sum(r.ok for r in guests)
            else:
                vms = counts[i % len(counts)] if counts else '?'
                valid = 0
            yield (flavor, vms, valid, rally_results.budget(it, guests),
                   runtime,
                   ': '.join(it['error'][:1]) if it.get('error') else '')


def _fmt(value):
    return '-' if value is None else f'{value:.1f}'


def table(rows):
    """The printed lines for ``rows`` (from steps) and their total."""
    head = (['flavor', 'VMs', 'valid', 'wall s'] + list(PHASES) +
            ['slowest ready', 'target', 'within', 'error'])
    out = []
    for flavor, vms, valid, b, runtime, error in rows:
        target = (b['slowest_ready'] + runtime + SLACK
                  if b['slowest_ready'] is not None else None)
        within = ('-' if target is None else
                  'yes' if b['wall'] <= target else 'NO')
        out.append([flavor, str(vms), f'{valid}/{vms}', _fmt(b['wall'])] +
                   [_fmt(b[p]) for p in PHASES] +
                   [_fmt(b['slowest_ready']), _fmt(target), within, error])
    widths = [max(len(r[i]) for r in out + [head])
              for i in range(len(head))]
    lines = ['  '.join(c.ljust(w) if i in (0, len(head) - 1) else
                       c.rjust(w) for i, (c, w) in
                       enumerate(zip(r, widths))).rstrip()
             for r in [head] + out]
    good = [r for r in rows if r[1] == r[2] and not r[5]]
    total = sum(r[3]['wall'] for r in good)
    lines.append(f'total: {total:.1f} s over {len(good)} steps with every '
                 f'guest valid ({len(rows) - len(good)} other steps not '
                 'counted)')
    return lines, total, sorted((r[0], r[1]) for r in good)


def _load(paths):
    rows = []
    for path in paths:
        found = list(steps(rally_results.read(path), path))
        if not found:
            raise KvmtuneError('no KvmTune scaling workload', source=path,
                               fix='pass the JSON of a disk or network '
                                   'sweep')
        rows += found
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('results', metavar='TASK_RESULTS.json', nargs='+')
    parser.add_argument('--against', metavar='OLD.json', nargs='+',
                        help='the same sweep run in the old start_at mode')
    args = parser.parse_args(argv)
    try:
        runs = [(' + '.join(args.results), _load(args.results))]
        if args.against:
            runs.append((' + '.join(args.against), _load(args.against)))
    except KvmtuneError as exc:
        print(f'sweep_time: error: {exc.line()}', file=sys.stderr)
        return 2
    except (KeyError, TypeError, ValueError) as exc:
        print(f'sweep_time: error: malformed Rally result ({exc!r})',
              file=sys.stderr)
        return 2
    totals, covered = [], []
    for path, rows in runs:
        lines, total, steps_counted = table(rows)
        print(f'{path}:')
        print('\n'.join(lines))
        totals.append(total)
        covered.append(steps_counted)
    if len(totals) == 2 and totals[0] > 0:
        if covered[0] != covered[1]:
            print('no speed-up: the runs counted different steps '
                  f'({covered[0]} vs {covered[1]})')
        else:
            print(f'speed-up: {totals[1]:.1f} s / {totals[0]:.1f} s = '
                  f'{totals[1] / totals[0]:.2f}x')
    return 0


if __name__ == '__main__':
    sys.exit(main())
