"""Results framed on a guest's serial console (doc/design.md section 6)::

    KVMTUNE-RESULT-BEGIN <instance> <workload> <tool> <bytes> <sha256>
    <raw tool output>
    KVMTUNE-RESULT-END <instance>
    KVMTUNE-STATUS <instance> ok | late <why> | error <why> | serving

A payload is returned only when its byte count and sha256 match; anything
else raises KvmtuneError naming what is wrong, never a half-read number.
"""

import hashlib
import re

from kvmtune.errors import KvmtuneError

BEGIN = 'KVMTUNE-RESULT-BEGIN'
END = 'KVMTUNE-RESULT-END'
STATUS = 'KVMTUNE-STATUS'


# printk lines ("[   12.345678] ...") that may cut into a payload.
_KERNEL_LINE = re.compile(r'\[\s*\d+\.\d+\] [^\n]*\n')


def _begin_re(instance_id):
    return re.compile(
        re.escape(BEGIN) + r' ' + re.escape(instance_id) +
        r' (\S+) (\S+) (\d+) ([0-9a-f]{64})[ \t]*\n')


def _verified(payload, size, digest):
    data = payload.encode('utf-8', 'surrogateescape')
    return len(data) == size and hashlib.sha256(data).hexdigest() == digest


def _normalise(text):
    if isinstance(text, bytes):
        text = text.decode('utf-8', 'surrogateescape')
    # The guest tty turns \n into \r\n.
    return text.replace('\r\n', '\n')


def status(text, instance_id):
    """(state, reason) of the guest's last status line, or None."""
    found = None
    pattern = re.compile(re.escape(STATUS) + ' ' + re.escape(instance_id) +
                         r' (ok|late|error|serving)\b[ \t]*([^\n]*)')
    for match in pattern.finditer(_normalise(text)):
        found = (match.group(1), match.group(2).strip())
    return found


def extract(text, instance_id):
    """The verified payloads of ``instance_id`` in console order: dicts
    with instance_id, workload, tool, raw (the tool's output), bytes, sha256.

    :raises KvmtuneError: no result (with the guest's own status when it
        reported late or error), a missing end marker, or a byte count or
        checksum that does not match.
    """
    text = _normalise(text)
    where = f'console of {instance_id}'
    payloads = []
    for match in _begin_re(instance_id).finditer(text):
        workload, tool, size, digest = match.groups()
        end = text.find(f'{END} {instance_id}', match.end())
        if end < 0:
            raise KvmtuneError(f'{END} missing after the {workload} result',
                               source=where, fix='the console log is '
                               'truncated or the guest died mid-output')
        raw = text[match.end():end]
        raw = raw[:-1] if raw.endswith('\n') else raw
        if not _verified(raw, int(size), digest):
            cleaned = _KERNEL_LINE.sub('', raw)
            if not _verified(cleaned, int(size), digest):
                got = len(raw.encode('utf-8', 'surrogateescape'))
                problem = ('sha256 does not match' if got == int(size) else
                           f'{got} bytes where the guest sent {size}')
                raise KvmtuneError(f'{workload} result: {problem}',
                                   source=where, fix='the output was '
                                   'garbled on the way; rerun the guest')
            raw = cleaned
        payloads.append({'instance_id': instance_id, 'workload': workload,
                         'tool': tool, 'raw': raw, 'bytes': int(size),
                         'sha256': digest})
    if payloads:
        return payloads
    reported = status(text, instance_id)
    if reported and reported[0] in ('late', 'error'):
        raise KvmtuneError(f'guest reported {reported[0]}: {reported[1]}',
                           source=where)
    raise KvmtuneError(f'no {BEGIN} line', source=where,
                       fix='the guest did not finish; check its console')
