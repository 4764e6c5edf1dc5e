"""kvmtune bench local's table of one run: the guests' Rows analysed and
printed by the one renderer, on a recorded run (its file of schema 1,
tests/fixtures/outputs/bench-local-2vm-fio-randread-4k-tcg-schema1.json,
whose old table printed MB/s and milliseconds)."""

import json

from kvmtune.bench.local import Measured
from kvmtune.cmd import bench_local
from kvmtune.results import bench
from tests.unit.results.test_bench import SCHEMA1


def test_the_table_of_a_recorded_run():
    with open(SCHEMA1) as f:
        doc = json.load(f)
    guests = [Measured(r['vm'], bench.row_of(r, SCHEMA1, 'row'),
                       r['signal_s']) for r in doc['rows']]
    text = bench_local.guest_text(guests, doc['record'])
    lines = text.splitlines()
    assert lines[0].split()[:5] == ['VM', 'status', 'IOPS', 'events/s',
                                    'MiB/s']
    every = lines[3].split()
    total = doc['aggregate']
    # the old table's figures (its aggregate: IOPS 12768.9, MB/s 52.3,
    # lat mean 20.68 ms, p99 442.50 ms, CPU 47.7 %), in the one renderer's
    # units
    assert every[:4] == ['all', '2', 'ok', f'{total["iops"]:,.0f}']
    assert every[5] == f'{total["bw_bytes_s"] / 1048576:,.1f}'
    assert every[8:11] == [f'{total["lat_mean_ns"] / 1e3:,.0f}',
                           f'{total["lat_p99_ns"] / 1e3:,.0f}',
                           f'{total["cpu_pct"]:,.1f}']
    assert lines[1].split()[:2] == ['0', 'ok'] and 'emulated' in lines[1]
    assert lines[-1].startswith('    (aggregate: throughput summed')
    # -o FILE now: the Rows' columns, read back as the same Rows
    again = [bench.row_of(g.flat(), 'new.json', 'row') for g in guests]
    assert again == [g.row for g in guests]


def test_the_old_spellings_reach_the_run_with_a_deprecation_line(
        monkeypatch, capsys):
    # --disk-format (not --format, which means the output format
    # on every other command) and -o for the written file; the old
    # spellings work for one release and say so.
    from kvmtune import cli
    from kvmtune.cmd import bench_local

    seen = {}

    def run(args):
        seen.update(disk_format=args.disk_format, output=args.output)
        return 0

    monkeypatch.setattr(bench_local, 'run', run)
    assert cli.main(['bench', 'local', '--vms', '1', '--workload',
                     'fio-randread-4k', '--format', 'qcow2', '--json',
                     'x.json']) == 0
    assert seen == {'disk_format': 'qcow2', 'output': 'x.json'}
    err = capsys.readouterr().err
    assert 'deprecated: --format is now --disk-format' in err
    assert 'deprecated: --json is now -o/--output' in err
