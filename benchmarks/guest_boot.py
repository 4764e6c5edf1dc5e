#!/usr/bin/env python3
"""Benchmark guest: image sizes and boot-to-result time of one guest.

Prints the sizes of the built image (raw, qcow2, xz-compressed raw) and the
seconds from launching QEMU to a verified, parsed result for one guest
(256 MB, 1 vCPU, fio-randread-4k for 3 s by default) under TCG. Figures
under TCG are labelled "emulated": they show the mechanics, not KVM speed.

  python benchmarks/guest_boot.py [--image-dir DIR] [--boot kernel|disk]
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

from kvmtune.bench import qemu
from kvmtune import image
from kvmtune import workloads
from kvmtune.workloads import console
from kvmtune.workloads import guestjob
from kvmtune.workloads import parsers

TARGET_SECONDS = 20


def xz_size(path):
    proc = subprocess.run(['xz', '-T0', '-6', '-c', path],
                          stdout=subprocess.PIPE, check=True)
    return len(proc.stdout)


def boot_to_result(image_dir, boot, workload, runtime, ram_mb):
    workdir = tempfile.mkdtemp(prefix='kvmtune-boot-', dir='/var/tmp')
    guest = qemu.Guest(0, str(uuid.uuid4()), workdir)
    try:
        data = os.path.join(workdir, 'data.raw')
        qemu.data_disk(data, '256M', 'raw')
        the_job = guestjob.build(workload, target=qemu.DATA_DISK,
                                 runtime=runtime)   # no start_at: run at once
        cdrom = os.path.join(workdir, 'config-2.iso')
        qemu.config_drive(cdrom, workdir, guest.instance_id,
                          guestjob.encode(the_job))
        argv = guest.argv('tcg', 1, ram_mb, image_dir, data, 'raw', 'none',
                          cdrom=cdrom, boot=boot)
        start = time.monotonic()
        guest.start(argv)
        result_at = None
        while time.monotonic() - start < 300:
            if console.status(guest.console_text(), guest.instance_id):
                result_at = time.monotonic() - start
                break
            if guest.poll() is not None:
                break
            time.sleep(0.2)
        guest.proc.wait(60)
        text = guest.console_text()
        (payload,) = console.extract(text, guest.instance_id)
        result = parsers.parse(payload['tool'], payload['raw'],
                               workload.name, emulated=True)
        return result_at, time.monotonic() - start, result
    finally:
        guest.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--image-dir')
    parser.add_argument('--boot', choices=('kernel', 'disk'),
                        default='kernel')
    parser.add_argument('--workload', default='fio-randread-4k')
    parser.add_argument('--runtime', type=int, default=3)
    parser.add_argument('--ram', type=int, default=256)
    args = parser.parse_args()
    image_dir = image.image_dir(args.image_dir)
    raw = os.path.join(image_dir, image.RAW)
    qcow2 = os.path.join(image_dir, image.QCOW2)
    print(f'image {image_dir}')
    print(f'  raw   {os.path.getsize(raw) / 1e6:7.1f} MB')
    print(f'  qcow2 {os.path.getsize(qcow2) / 1e6:7.1f} MB (compressed '
          'qcow2)')
    xz = xz_size(raw)      # the build leaves this figure to us
    print(f'  xz    {xz / 1e6:7.1f} MB (raw, xz -6)')
    workload = workloads.get(args.workload)
    result_at, exited_at, result = boot_to_result(
        image_dir, args.boot, workload, args.runtime, args.ram)
    verdict = 'within' if result_at <= TARGET_SECONDS else 'over'
    print(f'boot-to-result, 1 guest, {args.ram} MB, {args.boot} boot, '
          f'{workload.name} {args.runtime} s: {result_at:.1f} s '
          f'(QEMU exited at {exited_at:.1f} s; {verdict} the '
          f'{TARGET_SECONDS} s target) [emulated (TCG)]')
    print(f'  result: {result["iops"]:.0f} IOPS, '
          f'{result["bw_bytes_s"] / 1e6:.1f} MB/s [emulated (TCG)]')
    return 0


if __name__ == '__main__':
    sys.exit(main())
