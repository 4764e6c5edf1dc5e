"""Seed 000's experiment: one workload on the host, in L1 and in L2.

    kvmtune image build --nested
    kvmtune bench nested --workload sysbench-cpu
    kvmtune bench nested --workload fio-randread-4k --runtime 10 -o rr.json

Runs the workload on the bare host (as kvmtune baseline), then in one
guest of the nested image (L1, kvmtune.level=1), then in a guest of that
guest (L2: the L1 guest loads kvm_amd or kvm_intel with nested=1 and runs
the benchmark image with QEMU on its /dev/kvm, kvmtune.level=2), one after
the other, each guest under a hard timeout. Prints the seed's table (host,
L1, L2, L2 vs L1, the article's figures beside them), what L1 said of its
nesting, every cell's validity and the wall time. Under QEMU TCG (no
usable VT-x/AMD-V here) L1 gets --l1-cpu (default EPYC,+svm,+npt: QEMU
emulates SVM, not VMX) and every guest figure is emulated. Where L2
cannot start (--l1-cpu EPYC,-svm, a module that refuses), its row says
why. Exit 0 when every cell is valid, 1 when one is not, 2 on bad input.
"""

import argparse
import sys
import types

from kvmtune.cmd import output
from kvmtune.errors import EXIT_DIFFERS
from kvmtune.errors import EXIT_OK

# the Row columns of each level (kvmtune.results.row: one unit set)
FIGURES = ['events_s', 'iops', 'bw_bytes_s', 'lat_mean_ns']
COLUMNS = ['level', 'status', *FIGURES, 'seconds', 'reason']


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('--workload',
                        help='a disk or CPU/memory workload '
                             '(e.g. sysbench-cpu, fio-randread-4k)')
    parser.add_argument('--capture-l1', metavar='DIR',
                        help='instead of a run: boot L1 (it runs L2 once) '
                             'and capture the /proc and /sys files kvmtune '
                             'host inspect reads there into DIR (kvmtune '
                             'host inspect --root DIR)')
    parser.add_argument('--runtime', type=int, metavar='SECONDS',
                        help='seconds the tool runs (default: the '
                             'workload\'s)')
    parser.add_argument('--param', action='append', default=[],
                        metavar='KEY=VALUE',
                        help='a workload parameter (repeatable)')
    parser.add_argument('--vcpus', type=int, default=1,
                        help='vCPUs of L1 (L2 gets as many; default 1)')
    parser.add_argument('--ram-mb', type=int, default=1024,
                        help='RAM of L1 in MiB (L2 gets half, at most 1 '
                             'GiB; default 1024)')
    parser.add_argument('--l1-cpu', default=None, metavar='MODEL',
                        help='QEMU -cpu of L1 under TCG (default '
                             'EPYC,+svm,+npt)')
    parser.add_argument('--accel', choices=('auto', 'kvm', 'tcg'),
                        default='auto',
                        help='L1\'s accelerator (default: KVM where it '
                             'works with vmx/svm, else TCG)')
    parser.add_argument('--levels', default='host,L1,L2',
                        help='which rows to run, comma-separated '
                             '(default host,L1,L2)')
    parser.add_argument('--image-dir', metavar='DIR',
                        help='the benchmark image directory (the nested '
                             'image is its nested/)')
    output.add_format(parser, columns=False)
    output.add_output(parser, what='run as JSON')


def _log(line: str) -> None:
    print(f'bench nested: {line}', file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int | None:
    from kvmtune.bench import nested
    from kvmtune.cmd import baseline
    from kvmtune.errors import InputError
    from kvmtune import fileio
    from kvmtune import jsonout
    from kvmtune import workloads

    for name in ('vcpus', 'ram_mb'):
        if getattr(args, name) < 1:
            raise InputError('must be 1 or more',
                             key='--' + name.replace('_', '-'),
                             fix='give a positive number')
    if args.runtime is not None and args.runtime < 1:
        raise InputError('must be 1 or more', key='--runtime',
                         fix='give the seconds the tool runs')
    if args.capture_l1:
        return _capture(args, nested)
    if not args.workload:
        raise InputError('no workload given', key='--workload',
                         fix='e.g. --workload sysbench-cpu')
    workload = workloads.get(args.workload)
    params = workload.check_params(baseline.parse_params(args.param))
    levels = tuple(level.strip() for level in args.levels.split(',')
                   if level.strip())
    doc = nested.run(workload, runtime=args.runtime, params=params,
                     vcpus=args.vcpus, ram_mb=args.ram_mb,
                     cpu=args.l1_cpu or nested.TCG_CPU, accel=args.accel,
                     image_dir=args.image_dir, levels=levels, log=_log)
    if args.output:
        fileio.write_atomic(args.output, (jsonout.dumps(
            doc, source=args.output) + '\n').encode())
    if args.format == 'table':
        print('\n'.join(nested.table(doc)))
    else:
        rows = [[r['level'], r['row']['status'],
                 *(r['row'][k] for k in FIGURES), r['seconds'],
                 r['row']['reason']] for r in doc['runs']]
        output.emit(args, COLUMNS, rows, document=doc)
    if args.output:
        output.wrote(args.output)
    ok = all(r['row']['status'] == 'ok' for r in doc['runs'])
    return EXIT_OK if ok else EXIT_DIFFERS


def _capture(args: argparse.Namespace, nested: types.ModuleType) -> int:
    record = nested.capture_l1(args.capture_l1, image_dir=args.image_dir,
                               cpu=args.l1_cpu or nested.TCG_CPU,
                               vcpus=args.vcpus, ram_mb=args.ram_mb,
                               accel=args.accel, log=_log)
    said = record['l1_said']
    print(f'L1 said: {" ".join(f"{k}={said[k]}" for k in sorted(said))}')
    print(f'captured {len(record["files"])} files; kvmtune host inspect '
          f'--root {args.capture_l1}')
    output.wrote(args.capture_l1)
    return EXIT_OK if record['kvm_probe']['usable'] else EXIT_DIFFERS
