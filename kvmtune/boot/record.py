"""The reboot-required record: that a host needs a reboot, and why.

``<root>/var/lib/kvmtune/reboot-required.json`` (written by
``kvmtune boot apply``, kvmtune.boot.apply) holds::

    {"schema": 1,
     "profile": "pinned-hugepages",
     "boot_id": "<proc/sys/kernel/random/boot_id when it was written>",
     "reasons": {"cmdline": ["isolcpus=2-19"],
                 "hugepages": ["hugepagesz=2M", "hugepages=1024"],
                 "module": ["kvm_intel nested=1"]}}

A reason's list names what the booted system lacks: kernel arguments
missing from the booted command line (``hugepages`` for the huge page
pool arguments, ``cmdline`` for the others) and module options the loaded
module runs with another value (``module``).

The record is *pending* while it exists and its ``boot_id`` is the
current boot id of that root (/proc/sys/kernel/random/boot_id, as
ansible.builtin.reboot's default ``boot_time_command`` reads it): a
reboot since it was written makes it stale, and ``kvmtune boot apply``
then looks again at what the new boot runs. A tree without a boot_id file
(most captures) records ``null``, and null equals null: such a tree never
reboots. ``pending(root)`` is the one reader (the monitoring textfile's
kvmtune_reboot_required, the rollout's reboot step).
"""

from collections.abc import Mapping
from collections.abc import Sequence
import errno
import os
from typing import TypedDict

from kvmtune.errors import InputError
from kvmtune import fileio
from kvmtune import inputs
from kvmtune import jsonout

SCHEMA = 1
PATH = 'var/lib/kvmtune/reboot-required.json'
BOOT_ID = 'proc/sys/kernel/random/boot_id'
# The reasons, in the order they are shown.
REASONS = ('cmdline', 'hugepages', 'module')
_FIX = ('remove it; kvmtune boot apply --profile P writes it again when a '
        'reboot is needed')


class Record(TypedDict):
    schema: int
    profile: str
    boot_id: str | None
    reasons: dict[str, list[str]]


def path(root: str = '/') -> str:
    """Where the record of the host tree ``root`` is."""
    return os.path.join(root, PATH)


def boot_id(root: str = '/') -> str | None:
    """The boot id of ``root`` (a new one every boot), or None when the
    tree has none."""
    try:
        text = inputs.read_text(os.path.join(root, BOOT_ID), max_bytes=4096)
    except InputError as exc:
        if exc.problem == 'no such file':
            return None
        raise
    return text.strip() or None


def _reasons(reasons: Mapping[str, Sequence[str]], source: object
             ) -> dict[str, list[str]]:
    unknown = sorted(set(reasons) - set(REASONS))
    if unknown:
        raise InputError(f'unknown reboot reason {unknown[0]!r}',
                         source=source, key='reasons',
                         fix='use ' + ', '.join(REASONS))
    out: dict[str, list[str]] = {}
    for reason in REASONS:
        items = reasons.get(reason, [])
        if isinstance(items, str) or not isinstance(items, Sequence) \
                or not all(isinstance(item, str) for item in items):
            raise InputError('must be a list of strings', source=source,
                             key=f'reasons.{reason}', fix=_FIX)
        out[reason] = list(items)
    return out


def write(root: str, profile: str,
          reasons: Mapping[str, Sequence[str]]) -> str:
    """Record that ``root`` needs a reboot for ``profile``, and why
    (``reasons``: {reason: [what is not booted]}, REASONS only), stamped
    with the current boot id; atomically (kvmtune.fileio). Returns the
    record's path."""
    target = path(root)
    record = Record(schema=SCHEMA, profile=profile, boot_id=boot_id(root),
                    reasons=_reasons(reasons, 'reasons'))
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
    except OSError as exc:
        raise InputError(f'cannot create {os.path.dirname(target)}: '
                         f'{exc.strerror}', source=target,
                         fix='run as root') from None
    fileio.write_atomic(target, jsonout.dumps(record, source=target) + '\n',
                        mode=0o644)
    return target


def remove(root: str) -> bool:
    """Remove the record of ``root`` (the booted state matches the
    plan); True when there was one."""
    target = path(root)
    try:
        with fileio.lock(target):
            os.remove(target)
    except FileNotFoundError:
        return False
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return False
        raise InputError(f'cannot remove it: {exc.strerror}', source=target,
                         fix='run as root') from None
    return True


def read(root: str = '/') -> Record | None:
    """The record of ``root`` as written, or None when there is none;
    InputError naming the key for a record of another shape."""
    target = path(root)
    try:
        data = inputs.load_json(target, max_bytes=1 << 20)
    except InputError as exc:
        if exc.problem == 'no such file':
            return None
        raise
    if not isinstance(data, dict) or data.get('schema') != SCHEMA:
        raise InputError(f'not a schema {SCHEMA} reboot record',
                         source=target, key='schema', fix=_FIX)
    if not isinstance(data.get('profile'), str):
        raise InputError('must be a string', source=target, key='profile',
                         fix=_FIX)
    if not isinstance(data.get('boot_id'), (str, type(None))):
        raise InputError('must be a string or null', source=target,
                         key='boot_id', fix=_FIX)
    if not isinstance(data.get('reasons'), dict):
        raise InputError('must be an object', source=target, key='reasons',
                         fix=_FIX)
    return Record(schema=SCHEMA, profile=data['profile'],
                  boot_id=data['boot_id'],
                  reasons=_reasons(data['reasons'], target))


def pending(root: str = '/') -> dict[str, list[str]]:
    """The reasons ``root`` still waits for a reboot for: {reason: [what
    is not booted]} with only the reasons that have something (REASONS
    order); {} when there is no record, or the host booted since it was
    written (its boot_id is not the current one)."""
    record = read(root)
    if record is None or record['boot_id'] != boot_id(root):
        return {}
    return {reason: items for reason, items in record['reasons'].items()
            if items}
