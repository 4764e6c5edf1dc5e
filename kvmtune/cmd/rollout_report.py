"""The canary gate's analysis in a rollout's state file: table and page.

  kvmtune rollout-report rollout.json
  kvmtune rollout-report rollout.json --html canary.html \\
      --facts-dir facts/ --prometheus \\
      /var/lib/node_exporter/textfile_collector/kvmtune_canary.prom

Reads the state file's measurements (one record per host and metric,
kvmtune.rollout.measure_record) and prints per host and metric the
samples (canary and control, before/after), the change (the
difference-in-differences ratio of medians minus one), its interval,
the band and the verdict with its reason, and per host its verdict
(the worst metric's, or accepted with the reason a person gave).
--html writes a self-contained page with a plot per metric: the samples
before and after per host, and the interval against the band.
--facts-dir (HOST.json from kvmtune host inspect -f json) adds the peer
outliers: hosts of one hardware class whose medians stand apart, and the
facts they differ in; --bench adds hosts' kvmtune bench local results to
them. --prometheus writes the measured ratio and its
bounds per host and metric for node_exporter's textfile collector.
Changes nothing in the state file.

Exit status: 0 every measured host passed or was accepted; 1 a host
failed, is inconclusive, refused, in error or still measuring; 2 a
state file or facts that do not read (one line).
"""

import argparse
import os
import sys

from kvmtune import cmd
from kvmtune.cmd import output
from kvmtune.errors import EXIT_DIFFERS

HELP = ('Show the canary gate\'s measurements in a rollout state file: '
        'table, HTML page.')


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('state', metavar='STATE',
                        help='the rollout\'s state file (--state)')
    parser.add_argument('--html', metavar='FILE',
                        help='write a self-contained HTML page here')
    parser.add_argument('--prometheus', metavar='FILE',
                        help='write the ratios and their bounds per host '
                             'and metric as a node_exporter textfile '
                             '(NAME.prom)')
    cmd.add_facts_dir(parser, 'the peer outliers among the measured hosts')
    parser.add_argument('--bench', action='append', default=[],
                        metavar='RESULTS.json',
                        help='with --facts-dir: a kvmtune bench local '
                             '--json (or Rally, bench nested) result of a '
                             'host, compared with its peers too '
                             '(repeatable)')
    output.add_format(parser, formats=('table', 'json', 'yaml', 'value'))


def run(args: argparse.Namespace) -> int:
    from kvmtune.errors import InputError
    from kvmtune import fileio
    from kvmtune.report import canary_page
    from kvmtune.rollout import measure_record
    from kvmtune import textfile

    if args.html:
        fileio.check_writable(args.html)
        if os.path.realpath(args.html) == os.path.realpath(args.state):
            raise InputError('is the state file; it would be overwritten',
                             source=args.html,
                             fix='write the page to another path')
    if args.bench and not args.facts_dir:
        raise InputError('--bench needs --facts-dir: peers are hosts of '
                         'one hardware class, read from their facts',
                         key='--bench', fix='add --facts-dir DIR')
    data, found = canary_page.load(args.state, args.facts_dir, args.bench)
    as_table = output.format_of(args) == 'table'
    output.emit(args, canary_page.COLUMNS, canary_page.rows(data),
                document=canary_page.document(data, found))
    if as_table:
        print()
        output.emit(args, canary_page.HOST_COLUMNS,
                    canary_page.host_rows(data))
        if found:
            print()
            output.emit(args, canary_page.OUTLIER_COLUMNS,
                        canary_page.outlier_rows(found))
    stream = None if as_table else sys.stderr
    if args.html:
        page = canary_page.html_page(
            data, f'Canary gate: {os.path.basename(args.state)}', found)
        output.wrote(args.html, fileio.write_if_changed(
            args.html, page.encode('utf-8')), stream=stream)
    verdicts = {h: measure_record.host_verdict(data, h)
                for h in data['hosts']}
    if args.prometheus:
        textfile.write(args.prometheus, 'rollout-report',
                       measure_record.families(data),
                       {h: v in ('pass', 'accepted')
                        for h, v in verdicts.items()})
        output.wrote(args.prometheus, stream=stream)
    good = all(v in ('pass', 'accepted') for v in verdicts.values())
    return 0 if good else EXIT_DIFFERS
