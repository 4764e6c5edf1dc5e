"""Copy the /proc, /sys and /dev facts and the boot side of this host into
a directory.

Every file ``kvmtune host inspect`` reads is copied to DIR under the same
relative path (/dev nodes and other files whose existence is all that counts
become empty marker files), with ``kvmtune-capture.json`` recording the live
/dev/kvm probe, the time and the kvmtune version. ``kvmtune host inspect
--root DIR`` (and ``kvmtune plan --root DIR``) then give the same facts as on
this host, anywhere. Every CPU's topology and online files and each node's
cpulist, cpumap and cpuN entries are copied too, read or not, so that a
tree sent with a bug report (user guide, "Host facts") answers questions
kvmtune does not ask yet; it has the shape of tests/fixtures/hosts/real/.

The boot side comes too, so that the tree stands for the host in ``kvmtune
boot apply --root``, ``kvmtune verify --root`` and ``rollout --check``
(``kvmtune_root``): os-release, /etc/default/grub and grub.d, the BLS
entries, /etc/kernel/cmdline, /etc/modprobe.d, tuned's cpu-partitioning
files, and the nova.conf files nova-compute reads (its own command line
when it runs, else oslo.config's defaults) with every secret-bearing
option removed (kvmtune.tuning.novaconf.capture). ``--root`` captures a
host tree (a mounted root, another capture) instead of this host.

  kvmtune host capture /tmp/compute-1
  tar czf compute-1.tgz -C /tmp compute-1

DIR must be empty or not exist yet.
"""

import argparse
import os
import sys

from kvmtune.errors import InputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument('directory', metavar='DIR',
                        help='where to write the captured tree')
    parser.add_argument('--root', default='/', metavar='ROOT',
                        help='capture the host tree ROOT (a mounted root '
                             'or another capture) instead of this host')


def run(args: argparse.Namespace) -> int | None:
    from kvmtune.facts import capture
    from kvmtune.tuning.novaconf import capture as nova_capture
    target = args.directory
    root = args.root
    if not os.path.isdir(root):
        raise InputError('is not a directory', source=root, key='--root',
                         fix='give the root of a host tree')
    if not target.strip():
        raise InputError('an empty path', source="''", key='DIR',
                         fix='give a new directory')
    try:
        taken = os.path.lexists(target) and (not os.path.isdir(target)
                                             or os.listdir(target))
    except OSError as exc:
        raise InputError(f'cannot look into it: {exc.strerror}',
                         source=target, fix='give a new directory') from None
    if taken:
        raise InputError('exists and is not an empty directory',
                         source=target, fix='give a new directory')
    nova = nova_capture.read(root, nova_capture.nova_secrets())
    record = capture.capture(root, target, extra=nova)
    probe = record['kvm_probe']
    print(f'{target}: {len(record["files"])} files captured from '
          f'{record["hostname"]}; /dev/kvm usable: '
          f'{"unknown" if probe is None else probe["usable"]}',
          file=sys.stderr)
    for path, why in record['not_copied'].items():
        print(f'{target}: {path} not copied: {why}', file=sys.stderr)
    return 0
