"""Compare the runs in result files: always a comparison, one file too.

  kvmtune report RESULTS.json [MORE.json ...] [--baseline FILE]
                 [--png FILE] [--html FILE]

Every file is read into runs (kvmtune.results): one per Rally sweep
(flavor) of `rally task report --json` or `rally task results`, per
`kvmtune bench local -o FILE` run (or column of a --compare), per level
of `kvmtune bench nested -o`, and the bare host of a `kvmtune baseline`
file (--baseline FILE is one more file). They are analysed once
(kvmtune.results.analysis) and printed by the one renderer: per VM count
each run's per-VM and aggregate figures, the change against the first
run and against its own 1-VM figure, the share of the bare host, latency
across guests (mean, worst guest's p99 or max: never summed), the runs'
linear fits of per-VM throughput over VM counts side by side (R² >= 0.9
is called linear), each Rally step's time budget, and every guest that
reported `late`, an error or no valid result (listed, never averaged).
Runs at one VM count (bench local, nested) print as a step table.
Results of different workloads are refused (exit status 2); different
hosts, accelerators, parameters or runtimes, and files without a
record, are compared with a warning line each.

--png draws the per-VM figure (bars, or curves by VM count with their
fits) beside latency; with a bare host, as its share of the bare host,
the per-VM figure on a second axis. --html writes a self-contained page
with the tables and the plot. Figures from QEMU without KVM (TCG) are
labelled "emulated" in the table, the plot and the page.
"""

import argparse
import sys

from kvmtune.cmd import output


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('results', metavar='RESULTS.json', nargs='+',
                        help='Rally task result (rally task report '
                             '--json or results), bench local -o, bench '
                             'nested -o or baseline file; all compared.')
    parser.add_argument('--baseline', metavar='FILE',
                        help='Bare-metal result written by kvmtune baseline.')
    parser.add_argument('--png', metavar='FILE', help='Write the plot here.')
    parser.add_argument('--html', metavar='FILE',
                        help='Write a self-contained HTML report here.')
    output.add_format(parser, columns=False,
                      formats=('table', 'json', 'yaml'))


def _check_outputs(args: argparse.Namespace) -> None:
    """Every output writable and none of them an input, before the first
    is written (a PNG written, then the HTML refused, was half a run)."""
    import os

    from kvmtune.errors import InputError
    from kvmtune import fileio

    inputs = {os.path.realpath(p)
              for p in list(args.results) + [args.baseline] if p}
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


def _same_file(a: str, b: str) -> bool:
    import os

    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def run(args: argparse.Namespace) -> int | None:
    from kvmtune import fileio
    from kvmtune import report
    from kvmtune.results import analysis

    _check_outputs(args)
    paths = list(args.results) + ([args.baseline] if args.baseline else [])
    analysed = analysis.load(paths)
    as_table = output.format_of(args) == 'table'
    if as_table:
        print(report.render.text(analysed), end='')
    else:
        output.emit(args, [], [], document=analysed.to_dict())
    png = report.plot.png_bytes(analysed) if (args.png or args.html) \
        else None
    for path, data in ((args.png, png),
                       (args.html, args.html and png is not None and
                        report.page.html_page(
                            analysed, png).encode('utf-8'))):
        if path and data:
            # beside a JSON or YAML document the line goes to stderr
            output.wrote(path, fileio.write_if_changed(path, data),
                         stream=None if as_table else sys.stderr)
    return 0
