"""Boot N benchmark guests with QEMU here and run a workload in each.

All guests start at once from the image of `kvmtune image build`, each
with its own preallocated scratch data disk (virtio-blk, /dev/vdb) for
disk workloads, or paired as server and client on a private QEMU socket
network for network ones (image built with --with-net), and a job (config
drive by default, or the kernel command line). The clients start
together, run the workload, and print the result on their serial
console; each is checked (byte count, sha256), parsed and shown per VM
and summed over the guests that succeeded. A guest that fails, is not
ready in time or times out is listed with its reason, never averaged in.

--start signal (default): each client says ready on its console and
waits; once every guest is ready (a server serving), each client gets an
NMI through its QEMU's QMP socket, back to back, and the run waits for
the verdicts. A guest not ready within --ready-timeout is reported late.
--start at: the old fixed start, launch + a boot allowance per
accelerator and guest count (--start-delay), idle once all have booted.

--accel auto uses KVM only when it works with vmx/svm; on hosts whose
KVM is provided by kvm_pvm (software nested virtualization) it picks TCG,
and --accel kvm is refused there with that reason (stock guests hang).
Figures under TCG are labelled "emulated (TCG)": they show the mechanics,
never KVM's speed. Every QEMU process and scratch file is removed at the
end, also on Ctrl-C.

--compare SETTING=V1,V2[,...] (repeatable) runs the workload once per
value, one setting at a time from the others' values on the command line:
cache (none writeback writethrough directsync unsafe), format (raw
qcow2), bus (virtio-blk virtio-scsi), iothread (on off), hugepages (on
off), pinning (on off), vhost (on off), vcpus (1 2 ...). It prints one
table in the shape of a step table (a column per run, the bare host
last: --baseline FILE, or measured now with --baseline run, the default
for disk, CPU and memory workloads) and its wall time. A value this host
cannot give (no free huge pages, no /dev/vhost-net, too few CPUs to pin)
is skipped with one line saying why.

The table (one row per guest, its aggregate last) is the run analysed
and printed as `kvmtune report` does (kvmtune.report): throughput in
IOPS, events/s, MiB/s, Gbit/s, transactions/s; latency in microseconds.

-o FILE writes one row per guest in the columns of kvmtune.results.row
(bytes/s, nanoseconds; schema 2) with a record (kvmtune.results.records:
host facts digest and key facts, settings, workload and parameters,
kvmtune version, time), which `kvmtune report A.json B.json` compares;
files of schema 1 (each guest's parsed result) are read as well.

Examples:
  kvmtune bench local --vms 2 --workload fio-randread-4k
  kvmtune bench local --vms 1 --workload fio-randwrite-4k \
      --compare cache=none,writeback,writethrough --compare iothread=on,off
  kvmtune bench local --vms 1 --workload sysbench-cpu -o cpu.json
"""

import argparse
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any
from typing import TYPE_CHECKING

from kvmtune.bench.compare import CHOICES
from kvmtune.cmd import output
from kvmtune.errors import EXIT_DIFFERS
from kvmtune.errors import EXIT_OK
from kvmtune.errors import InputError
from kvmtune.results import kinds
from kvmtune.results import units

if TYPE_CHECKING:
    from kvmtune.bench.local import Measured
    from kvmtune.workloads import Workload


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--vms', type=int, required=True,
                        help='Guests to boot at once.')
    parser.add_argument('--workload', required=True,
                        help='Workload (kvmtune/data/workloads); network '
                             'ones pair the guests as server, client.')
    parser.add_argument('--vcpus', type=int, default=1)
    parser.add_argument('--ram', type=int, default=256, metavar='MB')
    parser.add_argument('--disk-size', default='256M',
                        help='Scratch data disk per guest (default 256M).')
    parser.add_argument('--cache', choices=CHOICES['cache'],
                        default='none', help='QEMU cache mode of the data '
                        'disk (none, as for raw/LVM: the contributor docs\' '
                        'sources, [S3]).')
    parser.add_argument('--disk-format', choices=CHOICES['format'],
                        default='raw', help='Data disk format.')
    output.add_renamed(parser, '--format', '--disk-format', 'disk_format',
                       choices=CHOICES['format'])
    parser.add_argument('--bus', choices=CHOICES['bus'],
                        default='virtio-blk', help='Data disk bus.')
    parser.add_argument('--iothread', choices=CHOICES['iothread'],
                        default='on', help='The data disk on its own I/O '
                        'thread (as Nova gives every guest one).')
    parser.add_argument('--hugepages', choices=CHOICES['hugepages'],
                        default='off', help='Guest RAM on huge pages '
                        '(hugetlbfs; needs free pages).')
    parser.add_argument('--pinning', choices=CHOICES['pinning'],
                        default='off', help='Each guest on host CPUs of '
                        'its own (taskset).')
    parser.add_argument('--accel', choices=('auto', 'kvm', 'tcg'),
                        default='auto')
    parser.add_argument('--vhost', choices=('on', 'off'), default='off',
                        help='vhost-net for guest NICs (network workloads; '
                        'bench local links guests by a QEMU socket network, '
                        'which has none).')
    parser.add_argument('--compare', action='append', default=[],
                        metavar='SETTING=V1,V2',
                        help='Run once per value of SETTING (repeatable; '
                        'see above) and print the comparison.')
    parser.add_argument('--baseline', metavar='FILE|run|none',
                        help='The bare host column of --compare: a file of '
                        'kvmtune baseline, run (measure it now; default '
                        'for disk, CPU and memory workloads) or none.')
    parser.add_argument('--job-via', choices=('config-drive', 'cmdline'),
                        default='config-drive',
                        help='How the job reaches the guest.')
    parser.add_argument('--boot', choices=('kernel', 'disk'),
                        default='kernel',
                        help='Direct kernel boot (default, faster) or BIOS '
                        'and syslinux from the image, as Nova boots it.')
    parser.add_argument('--runtime', type=int, metavar='SECONDS',
                        help='Override the workload\'s runtime.')
    parser.add_argument('--param', action='append', default=[],
                        metavar='KEY=VALUE',
                        help='Override a workload option (repeatable).')
    parser.add_argument('--start', choices=('signal', 'at'),
                        default='signal',
                        help='Start the clients on a signal (NMI) once all '
                        'guests are ready (default), or at a fixed time.')
    parser.add_argument('--ready-timeout', type=int, metavar='SECONDS',
                        help='--start signal: seconds from launch for every '
                        'guest to be ready (default: per accelerator and '
                        'guest count); later ones are left out.')
    parser.add_argument('--start-delay', type=int, metavar='SECONDS',
                        help='--start at: seconds from launch to the common '
                        'start (default: a boot allowance per accelerator '
                        'and guest count).')
    parser.add_argument('--image-dir', metavar='DIR',
                        help='Default $KVMTUNE_IMAGE_DIR or '
                             '/var/lib/kvmtune/images.')
    output.add_output(parser, 'guests\' rows and the record as JSON')
    output.add_renamed(parser, '--json', '-o/--output', 'output')
    parser.add_argument('--png', metavar='FILE',
                        help='With --compare: write the comparison plot.')


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    return {'cache': args.cache, 'format': args.disk_format, 'bus': args.bus,
            'iothread': args.iothread, 'hugepages': args.hugepages,
            'pinning': args.pinning, 'vhost': args.vhost,
            'vcpus': args.vcpus}


def _check(args: argparse.Namespace) -> None:
    if args.vms < 1 or args.vcpus < 1 or args.ram < 128:
        raise InputError('--vms and --vcpus must be >= 1, --ram >= 128',
                         key='--vms/--vcpus/--ram',
                         fix='e.g. --vms 2 --vcpus 1 --ram 512')
    if args.runtime is not None and args.runtime <= 0:
        raise InputError('must be positive', key='--runtime',
                         fix='give the seconds the tool runs, e.g. '
                             '--runtime 10')
    from kvmtune.bench import local

    local.check_start(args.start, args.start_delay, args.ready_timeout)


def _one_run(args: argparse.Namespace, workload: 'Workload', accel: str,
             settings: Mapping[str, Any], params: dict[str, Any],
             log: Callable[[str], object] = print) -> list['Measured']:
    """Each guest Measured (kvmtune.bench.local) of one run with
    ``settings``."""
    import os

    from kvmtune.bench import compare
    from kvmtune.bench import local

    if settings['vhost'] == 'on':
        raise InputError('bench local links guests by a QEMU socket '
                         'network, which has no vhost-net', key='vhost',
                         fix='leave vhost off here; vhost-net is measured '
                         'through Nova (tap + /dev/vhost-net)')
    mount = None
    if settings['hugepages'] == 'on':
        why = compare.skip_reason(settings, args.vms, args.ram,
                                  len(os.sched_getaffinity(0)))
        if why:
            raise InputError(why, key='hugepages',
                             fix='reserve 2M pages first (kvmtune pages '
                                 'apply), or compare without hugepages')
        mount = compare.hugetlbfs_mount()
    return local.run(workload, local.Settings(
        vms=args.vms, vcpus=int(settings['vcpus']), ram_mb=args.ram,
        disk_size=args.disk_size, cache=settings['cache'],
        fmt=settings['format'], bus=settings['bus'],
        iothread=settings['iothread'] == 'on', hugepages=mount,
        pin=settings['pinning'] == 'on', accel=accel, boot=args.boot,
        job_via=args.job_via, runtime=args.runtime, params=params,
        image_dir=args.image_dir, start=args.start, delay=args.start_delay,
        ready_wait=args.ready_timeout), log=log)


def _save(doc: Mapping[str, Any], path: str) -> None:
    from kvmtune import fileio
    from kvmtune import jsonout

    fileio.write_atomic(path, jsonout.dumps(doc, source=path,
                                            sort_keys=True) + '\n')
    output.wrote(path)


def guest_text(guests: Sequence['Measured'], record: dict[str, Any] | None,
               source: str = '(this run)') -> str:
    """The table of one run's guests and its aggregate: the run analysed
    (kvmtune.results.analysis) and printed by the one renderer."""
    from kvmtune.report import render
    from kvmtune.results import analysis
    from kvmtune.results import bench

    rows = [g.row for g in guests]
    an = analysis.analyse([bench.guest_run('this run', source, record,
                                           rows)])
    return '\n'.join(render.guest_lines(an, rows)) + '\n'


def run(args: argparse.Namespace) -> int | None:
    from kvmtune.bench import qemu
    from kvmtune.cmd.baseline import parse_params
    from kvmtune.report import render
    from kvmtune import workloads

    _check(args)
    workload = workloads.get(args.workload)
    params = workload.check_params(parse_params(args.param))
    runtime = int(args.runtime or workload.settings(params).get('runtime',
                                                                10))
    if args.compare:
        return run_compare(args, workload, params, runtime)
    accel, why = qemu.choose_accel(args.accel)
    print(f'accelerator: {qemu.accel_label(accel)} ({why})')
    settings = _settings(args)
    guests = _one_run(args, workload, accel, settings, params)
    if workload.target == 'disk':
        setup = (f'data disk {args.disk_size} {args.disk_format} on '
                 f'{args.bus} cache={args.cache} iothread={args.iothread}')
    elif workload.target == 'peer':
        setup = 'server/client pairs on a QEMU socket network, no vhost'
    else:
        setup = 'no disk, no NIC'
    print(f'{workload.name}: {args.vms} VM(s), {args.vcpus} vCPU, '
          f'{args.ram} MB, {setup}, hugepages={args.hugepages} '
          f'pinning={args.pinning}; results verified (bytes + sha256)')
    print(guest_text(guests, None), end='')
    if args.output:
        from kvmtune.bench import compare

        record = compare.record(kinds.BENCH_LOCAL, workload, accel, why,
                                settings, params, runtime)
        from kvmtune.results import bench

        _save(bench.local_doc(workload.name, args.vms, accel, settings,
                              [g.flat() for g in guests], record),
              args.output)
    return EXIT_DIFFERS if render.failures([g.row for g in guests]) \
        else EXIT_OK


def run_compare(args: argparse.Namespace, workload: 'Workload',
                params: dict[str, Any], runtime: int) -> int:
    import os
    import time

    from kvmtune.bench import compare as ab
    from kvmtune.bench import qemu
    from kvmtune.report import render
    from kvmtune.results import analysis
    from kvmtune.results import baseline as bare_run
    from kvmtune.results import bench

    started = time.monotonic()
    axes = [ab.parse_axis(text) for text in args.compare]
    ab.check_axes(axes, workload)
    base = _settings(args)
    accel, why = qemu.choose_accel(args.accel)
    print(f'accelerator: {qemu.accel_label(accel)} ({why})')
    columns = ab.run_columns(
        ab.runs(base, axes), args.vms, args.ram,
        len(os.sched_getaffinity(0)), workload.name,
        lambda settings, log: _one_run(args, workload, accel, settings,
                                       params, log=log))
    ran = [c for c in columns if not c.skipped]
    if not ran:
        print('nothing ran: every column was skipped (see above)')
        return EXIT_DIFFERS
    from kvmtune.bench import baseline

    bare, no_bare = baseline.for_compare(args.baseline, workload, params,
                                         args.runtime)
    record = ab.record(kinds.BENCH_COMPARE, workload, accel, why, base, params,
                       runtime)
    doc = bench.compare_doc(workload.name, args.vms, accel,
                            [c.doc() for c in columns], bare, record)
    runs = [bench.guest_run(c.label, '(this run)',
                            dict(record, settings=c.settings),
                            [g.row for g in c.guests]) for c in ran]
    if bare:
        runs.append(bare_run.run_of(bare, '(this host, bare)'))
    cmp = analysis.analyse(runs)
    print()
    print(render.text(cmp), end='')
    if no_bare:
        print(no_bare)
    skipped = [c.label for c in columns if c.skipped]
    if skipped:
        print(f'skipped (see above): {", ".join(skipped)}')
    valid = all(p.valid == p.total and p.total
                for r in cmp.runs for p in cmp.points[r.label])
    wall = time.monotonic() - started
    print(f'{len({ab.key(c.settings) for c in ran})} guest run(s) for '
          f'{len(columns)} column(s), '
          f'{"every cell valid" if valid else "NOT every cell valid"}; '
          f'wall time {wall:.0f} s'
          + (f' ({units.EMULATED})' if accel == 'tcg' else ''))
    if args.output:
        doc['wall_seconds'] = round(wall, 1)
        _save(doc, args.output)
    if args.png:
        from kvmtune import fileio
        from kvmtune import report

        output.wrote(args.png, fileio.write_if_changed(
            args.png, report.plot.png_bytes(cmp)))
    return EXIT_OK if valid else EXIT_DIFFERS
