"""Boot N benchmark guests with QEMU here and run a workload in each.

All guests start at once from the image of `kvmtune image build`, each
with its own preallocated scratch data disk (virtio-blk, /dev/vdb) for
disk workloads, or paired as server and client on a private QEMU socket
network for network ones (image built with --with-net), and a job (config
drive by default, or the kernel command line). They wait for a
common start time, run the workload, and print the result on their serial
console; each is checked (byte count, sha256), parsed and shown per VM
and summed over the guests that succeeded. A guest that fails or times
out is listed with its reason, never averaged in.

--accel auto uses KVM only when it works with vmx/svm; on hosts whose
KVM is provided by kvm_pvm (software nested virtualization) it picks TCG.
Figures under TCG are labelled "emulated (TCG)": they show the mechanics,
never KVM's speed. Every QEMU process and scratch file is removed at the
end, also on Ctrl-C.

Example:
  kvmtune bench local --vms 2 --workload fio-randread-4k
"""

from kvmtune.errors import InputError


def add_arguments(parser):
    parser.add_argument('--vms', type=int, required=True,
                        help='Guests to boot at once.')
    parser.add_argument('--workload', required=True,
                        help='Workload (kvmtune/data/workloads); network '
                             'ones pair the guests as server, client.')
    parser.add_argument('--vcpus', type=int, default=1)
    parser.add_argument('--ram', type=int, default=256, metavar='MB')
    parser.add_argument('--disk-size', default='256M',
                        help='Scratch data disk per guest (default 256M).')
    parser.add_argument('--cache', choices=('none', 'writeback'),
                        default='none', help='QEMU cache mode of the data '
                        'disk (seeds/003: none for raw/LVM).')
    parser.add_argument('--format', choices=('raw', 'qcow2'),
                        default='raw', help='Data disk format.')
    parser.add_argument('--accel', choices=('auto', 'kvm', 'tcg'),
                        default='auto')
    parser.add_argument('--vhost', choices=('on', 'off'), default='off',
                        help='vhost-net for guest NICs (network workloads '
                        'only; bench local runs disk workloads).')
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
    parser.add_argument('--start-delay', type=int, metavar='SECONDS',
                        help='Seconds from launch to the common start '
                        '(default: a boot allowance per accelerator and '
                        'guest count).')
    parser.add_argument('--image-dir', metavar='DIR',
                        help='Default $KVMTUNE_IMAGE_DIR or '
                             '/var/lib/kvmtune/images.')
    parser.add_argument('--json', metavar='FILE',
                        help='Also write the rows and aggregate as JSON.')


def _fmt(value, scale=1.0, digits=1):
    return '-' if value is None else f'{value / scale:.{digits}f}'


def print_table(rows, total):
    head = (f'{"VM":>3} {"status":<10} {"IOPS":>10} {"MB/s":>9} '
            f'{"Gbit/s":>7} {"trans/s":>8} '
            f'{"lat mean ms":>11} {"p99 ms":>8} {"CPU%":>6} {"time s":>6}'
            '  accel')
    print(head)
    for row in rows:
        r = row['result'] or {'iops': None, 'bw_bytes_s': None,
                              'gbit_s': None, 'tps': None,
                              'lat_ns': {'mean': None, 'p99': None},
                              'cpu_pct': None}
        print(f'{row["vm"]:>3} {row["status"]:<10} {_fmt(r["iops"]):>10} '
              f'{_fmt(r["bw_bytes_s"], 1e6):>9} '
              f'{_fmt(r["gbit_s"], 1, 3):>7} {_fmt(r["tps"], 1, 0):>8} '
              f'{_fmt(r["lat_ns"]["mean"], 1e6, 2):>11} '
              f'{_fmt(r["lat_ns"]["p99"], 1e6, 2):>8} '
              f'{_fmt(r["cpu_pct"]):>6} {_fmt(row["seconds"]):>6}'
              f'  {row["accel"]}')
        if row['status'] not in ('ok', 'server'):
            print(f'    {row["instance_id"]}: {row["reason"]}')
    label = rows[0]['accel'] if rows else ''
    print(f'{"all":>3} {str(total["vms_ok"]) + " ok":<10} '
          f'{_fmt(total["iops"]):>10} {_fmt(total["bw_bytes_s"], 1e6):>9} '
          f'{_fmt(total["gbit_s"], 1, 3):>7} {_fmt(total["tps"], 1, 0):>8} '
          f'{_fmt(total["lat_mean_ns"], 1e6, 2):>11} '
          f'{_fmt(total["lat_p99_ns"], 1e6, 2):>8} '
          f'{_fmt(total["cpu_pct"]):>6} {"":>6}  {label}')
    if total['vms_failed']:
        print(f'{total["vms_failed"]} guest(s) failed: not in the '
              'aggregate')


def run(args):
    from kvmtune.bench import local
    from kvmtune.bench import qemu
    from kvmtune.cmd.baseline import parse_params
    from kvmtune import workloads

    if args.vms < 1 or args.vcpus < 1 or args.ram < 128:
        raise InputError('--vms and --vcpus must be >= 1, --ram >= 128',
                         key='--vms/--vcpus/--ram')
    workload = workloads.get(args.workload)
    if args.vhost == 'on':
        raise InputError('bench local links guests by a QEMU socket network,'
                         ' which has no vhost-net', key='--vhost',
                         fix='leave --vhost off; vhost-net is measured '
                         'through Nova (tap + /dev/vhost-net)')
    accel, why = qemu.choose_accel(args.accel)
    print(f'accelerator: {qemu.accel_label(accel)} ({why})')
    rows = local.run(workload, args.vms, vcpus=args.vcpus, ram_mb=args.ram,
                     disk_size=args.disk_size, cache=args.cache,
                     fmt=args.format, accel=accel, job_via=args.job_via,
                     runtime=args.runtime, params=parse_params(args.param),
                     image_dir=args.image_dir, delay=args.start_delay,
                     boot=args.boot)
    total = local.aggregate(rows)
    setup = (f'data disk {args.disk_size} {args.format} cache={args.cache}'
             if workload.target == 'disk' else
             'server/client pairs on a QEMU socket network, no vhost')
    print(f'{workload.name}: {args.vms} VM(s), {args.vcpus} vCPU, '
          f'{args.ram} MB, {setup}; results verified (bytes + sha256)')
    print_table(rows, total)
    if args.json:
        from kvmtune.bench import baseline
        baseline.save({'workload': workload.name, 'accel': accel,
                       'emulated': accel == 'tcg', 'rows': rows,
                       'aggregate': total}, args.json)
        print(f'written {args.json}')
    return 0 if total['vms_failed'] == 0 else 1
