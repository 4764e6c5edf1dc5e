"""How many more guests of each flavor fit, per compute node and in all.

    kvmtune capacity --os-cloud kvmtune-admin
    kvmtune capacity --os-cloud admin --flavor m1.small.pinned-hugepages \\
        --facts-dir facts/ --profile pinned-hugepages -f json
    kvmtune capacity --os-cloud admin --aggregate pinned --prometheus \\
        /var/lib/node_exporter/textfile_collector/kvmtune_capacity.prom

For every compute node (``--host``/``--aggregate`` narrow them) and flavor
(``--flavor``, repeatable; default: every flavor kvmtune made), the number
of instances that still fit and the first thing to run out: a Placement
class (PCPU, VCPU, MEMORY_MB, DISK_GB), a required trait the node lacks,
``!trait:COMPUTE_STATUS_DISABLED`` (a disabled compute), or, with the
node's facts (``--facts-dir DIR``: HOST.json per node, "kvmtune host
inspect --format json" there), huge pages or pinned CPUs on its NUMA
nodes. Then the totals per flavor and per aggregate. The flavor is read
as Nova's scheduler reads it; only GET requests are sent.

A node that could not be read, or whose NUMA fit needs facts not given,
is marked partial (count "?", with the reason); the totals say so.
Exit 0 (also when partial), 2 on bad input.
"""

import argparse
import sys

from kvmtune import cmd
from kvmtune.cmd import output

COLUMNS = ['host', 'flavor', 'fits', 'limit', 'aggregates']


def add_arguments(parser: argparse.ArgumentParser) -> None:
    cmd.add_os_cloud(parser)
    parser.add_argument('--flavor', action='append', metavar='NAME',
                        help='a flavor to count (repeatable; default: '
                             'every flavor kvmtune made)')
    parser.add_argument('--host', action='append', metavar='NAME',
                        help='only this compute node (repeatable)')
    parser.add_argument('--aggregate', action='append', metavar='NAME',
                        help='only the nodes of this host aggregate '
                             '(repeatable)')
    cmd.add_facts_dir(parser, 'the NUMA fit of pinned and huge-page '
                              'flavors')
    parser.add_argument('--profile', action='append', metavar='NAME|FILE',
                        help='the profile the nodes were tuned with '
                             '(repeatable): their cpu_dedicated_set, '
                             'planned from each node\'s facts')
    output.add_format(parser)
    parser.add_argument('--prometheus', metavar='FILE',
                        help='also write the counts for node_exporter\'s '
                             'textfile collector (atomically)')


def run(args: argparse.Namespace) -> int | None:
    from kvmtune import capacity
    from kvmtune.capacity import prometheus
    from kvmtune.openstack.connection import Cloud

    result = capacity.for_hosts(
        Cloud.connect(args.os_cloud), args.flavor, facts_dir=args.facts_dir,
        profiles=args.profile, config_files=args.config_file or (),
        hosts=args.host, aggregates=args.aggregate)
    rows = [[fit.host, fit.flavor,
             '?' if fit.count is None else fit.count,
             fit.limit or (f'? {fit.reason}' if fit.reason else ''),
             ','.join(fit.aggregates)] for fit in result.fits]
    for flavor, (count, partial) in sorted(result.by_flavor().items()):
        rows.append(['(all)', flavor, f'{count}+' if partial else count,
                     'partial' if partial else '', ''])
    for (aggregate, flavor), (count, partial) in sorted(
            result.by_aggregate().items()):
        rows.append([f'(aggregate {aggregate})', flavor,
                     f'{count}+' if partial else count,
                     'partial' if partial else '', aggregate])
    output.emit(args, COLUMNS, rows, document=result.to_dict())
    if args.prometheus:
        prometheus.write(args.prometheus, result)
        output.wrote(args.prometheus, stream=sys.stderr)
    if args.format == 'table':
        print(f'{len(result.fits)} host x flavor counts from '
              f'{result.calls} API calls'
              + (' (partial: see "?")' if result.partial else ''),
              file=sys.stderr)
    return 0
