"""What the filesystem under a path says, for the writer's errors and
its in-place rule (kvmtune.fileio and its replace): the mount points
(a bind-mounted file is one), and a filesystem mounted read-only, named
with its mount and the fix (root is refused there too, so "permission
denied" or "run as root" would mislead)."""

import os
import re

from kvmtune.errors import InputError


def mount_points() -> set[str]:
    points = set()
    try:
        with open('/proc/self/mountinfo', encoding='utf-8',
                  errors='replace') as handle:
            for line in handle:
                fields = line.split()
                if len(fields) > 4:
                    points.add(re.sub(r'\\([0-7]{3})',
                                      lambda m: chr(int(m.group(1), 8)),
                                      fields[4]))
    except OSError:
        pass
    return points


def mount_point_of(path: str) -> str:
    """The mount point of the filesystem holding the existing ``path``
    (fileio names it when that filesystem is read-only)."""
    real = os.path.realpath(path)
    found = '/'
    for point in mount_points():
        inside = real == point or real.startswith(point.rstrip('/') + '/')
        if inside and len(point) > len(found):
            found = point
    return found


def read_only_error(path: str, source: object = None) -> InputError | None:
    """The one line for a ``path`` (a file, or where one would be made) on
    a filesystem mounted read-only, naming the mount and the fix; None
    when its filesystem is writable (or cannot be looked at).

    A filesystem that went read-only (remounted after an I/O error, a
    read-only bind mount, a container's root) refuses root too, so
    "permission denied" or "run as root" would send the user the wrong
    way."""
    probe = path
    while not os.path.lexists(probe):
        parent = os.path.dirname(probe.rstrip('/')) or '.'
        if parent == probe:
            return None
        probe = parent
    try:
        if not os.statvfs(probe).f_flag & os.ST_RDONLY:
            return None
    except OSError:
        return None
    mount = mount_point_of(probe)
    return InputError(f'is on a read-only filesystem (mounted read-only '
                      f'at {mount}); nothing was written',
                      source=source or path,
                      fix=f'remount it read-write: mount -o remount,rw '
                          f'{mount} (after I/O errors, check the disk '
                          'first); or give a path on a writable filesystem')
