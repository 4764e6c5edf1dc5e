"""Tabulate and plot a Rally scaling run, or compare several runs.

  kvmtune report TASK_RESULTS.json [--baseline FILE] [--png FILE]
                 [--html FILE]
  kvmtune report BEFORE.json AFTER.json [MORE.json ...] [--baseline FILE]
                 [--png FILE] [--html FILE]

With several files (or one file of `kvmtune bench local --json`, or of
`kvmtune baseline`), runs are compared (kvmtune.report.compare): per VM
count each run's per-VM and aggregate figures, the change against the
first run, the share of the bare host when a baseline is given, latency
across guests (mean, worst guest's p99 or max: never summed), and the
runs' linear fits side by side. Rally sweeps, bench local results and
baselines mix freely. Results of different workloads are refused (exit
status 2); different hosts, accelerators, parameters or runtimes, and
files without a record, are compared with a warning line each.

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
    parser.add_argument('results', metavar='RESULTS.json', nargs='+',
                        help='Rally task result (report --json or '
                             'results), bench local --json or baseline '
                             'file; several: compared.')
    parser.add_argument('--baseline', metavar='FILE',
                        help='Bare-metal result written by kvmtune baseline.')
    parser.add_argument('--png', metavar='FILE', help='Write the plot here.')
    parser.add_argument('--html', metavar='FILE',
                        help='Write a self-contained HTML report here.')


def _check_outputs(args):
    """Every output writable and none of them an input, before the first
    is written (a PNG written, then the HTML refused, was half a run)."""
    import os

    from kvmtune import fileio
    from kvmtune.errors import InputError

    results = args.results if isinstance(args.results, list) \
        else [args.results]
    inputs = {os.path.realpath(p) for p in results + [args.baseline] if p}
    outputs = [p for p in (args.png, args.html) if p]
    for path in outputs:
        real = fileio.check_writable(path)
        # the same name, or another name of the same file (a hard link:
        # kvmtune.fileio writes a multiply-linked file in place)
        if real in inputs or any(_same_file(real, i) for i in inputs):
            raise InputError('is one of the input files; it would be '
                             'overwritten', source=path,
                             fix='write the plot or page to another path')
    if len(outputs) == 2 and os.path.realpath(args.png) == \
            os.path.realpath(args.html):
        raise InputError('--png and --html name the same file',
                         source=args.png, fix='give two paths')


def _same_file(a, b):
    import os

    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _compare(args):
    from kvmtune import report
    from kvmtune.report import compare

    _check_outputs(args)
    paths = list(args.results) + ([args.baseline] if args.baseline else [])
    cmp = compare.load_all(paths)
    print(compare.text(cmp), end='')
    png = compare.png_bytes(cmp) if (args.png or args.html) else None
    for path, data in ((args.png, png),
                       (args.html, args.html and compare.html_page(
                           cmp, png).encode('utf-8'))):
        if path:
            changed = report.write_atomic(path, data)
            print(f'{"wrote" if changed else "unchanged"}: {path}')
    return 0


def _is_rally(path):
    from kvmtune.report import rally_results

    doc = rally_results.read(path)
    return not (isinstance(doc, dict) and 'kind' in doc)


def run(args):
    from kvmtune import report

    if len(args.results) > 1 or not _is_rally(args.results[0]):
        return _compare(args)
    args.results = args.results[0]
    _check_outputs(args)
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
