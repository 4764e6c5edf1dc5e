"""Copy the /proc, /sys and /dev facts of this host into a directory.

Every file ``kvmtune host inspect`` reads is copied to DIR under the same
relative path (/dev nodes and other files whose existence is all that counts
become empty marker files), with ``kvmtune-capture.json`` recording the live
/dev/kvm probe, the time and the kvmtune version. ``kvmtune host inspect
--root DIR`` (and ``kvmtune plan --root DIR``) then give the same facts as on
this host, anywhere. Every CPU's topology and online files and each node's
cpulist, cpumap and cpuN entries are copied too, read or not, so that a
tree sent with a bug report (user guide, "Host facts") answers questions
kvmtune does not ask yet; it has the shape of tests/fixtures/hosts/real/.

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


def run(args: argparse.Namespace) -> int | None:
    from kvmtune.facts import capture
    target = args.directory
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
    record = capture.capture('/', target)
    print(f'{target}: {len(record["files"])} files captured from '
          f'{record["hostname"]}; /dev/kvm usable: '
          f'{record["kvm_probe"]["usable"]}', file=sys.stderr)
    return 0
