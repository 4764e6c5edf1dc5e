"""Tabulate and plot a Rally scaling run against the bare-metal baseline.

  kvmtune report TASK_RESULTS.json [--baseline FILE] [--png FILE]
                 [--html FILE]

TASK_RESULTS.json is what `rally task report --json --out FILE` (or the
older `rally task results`) wrote for a task built from
rally_scenarios/tasks/. For every flavor and workload it prints: VM count,
per-VM and aggregate throughput, share of bare metal (with --baseline, a
file written by `kvmtune baseline`), change against one VM, and a linear
fit of per-VM throughput against the VM count (slope per added VM, R²;
R² >= 0.9 is called linear). Guests that reported `late`, an error or no
valid result are listed, never averaged.

--png draws per-VM throughput by VM count, one curve per flavor (tuned
and default on one plot); --html writes a self-contained page with the
tables and the plot. Figures from QEMU without KVM (TCG) are labelled
"emulated" in the table, the plot and the page.
"""


def add_arguments(parser):
    parser.add_argument('results', metavar='TASK_RESULTS.json',
                        help='Rally task result (report --json or results).')
    parser.add_argument('--baseline', metavar='FILE',
                        help='Bare-metal result written by kvmtune baseline.')
    parser.add_argument('--png', metavar='FILE', help='Write the plot here.')
    parser.add_argument('--html', metavar='FILE',
                        help='Write a self-contained HTML report here.')


def run(args):
    from kvmtune import report

    analysed = report.analyse(args.results, args.baseline)
    print(report.render.text(analysed), end='')
    png = report.render.png_bytes(analysed) if (args.png or args.html) \
        else None
    for path, data in ((args.png, png),
                       (args.html, args.html and report.render.html_page(
                           analysed, png).encode('utf-8'))):
        if path:
            changed = report.write_atomic(path, data)
            print(f'{"wrote" if changed else "unchanged"}: {path}')
    return 0
