"""Results framed on a guest's serial console (doc/design.md section 6)::

    KVMTUNE-RESULT-BEGIN <instance> <workload> <tool> <bytes> <sha256>
    <raw tool output>
    KVMTUNE-RESULT-END <instance>
    KVMTUNE-STATUS <instance> ok | late <why> | error <why> | serving
                              | ready  (ok, ready, serving: key=value times)

and, before them, what the guest says of itself::

    KVMTUNE-GUEST <instance> accel=kvm|tcg|unknown clocksource=<name> \
        hypervisor=<CPUID signature>|none
    KVMTUNE-NET <instance> eth0 <ip/prefix> from=job|network_data|dhcp \
        mtu=<n>

A payload is returned only when its byte count and sha256 match; anything
else raises KvmtuneError naming what is wrong, never a half-read number.
"""

import hashlib
import re
from typing import Any
from typing import TypeVar

from kvmtune.errors import KvmtuneError

BEGIN = 'KVMTUNE-RESULT-BEGIN'
END = 'KVMTUNE-RESULT-END'
STATUS = 'KVMTUNE-STATUS'
GUEST = 'KVMTUNE-GUEST'
NET = 'KVMTUNE-NET'
ACCELS = ('kvm', 'tcg', 'unknown')
_T = TypeVar('_T')


# printk lines ("[   12.345678] ...") that may cut into a payload.
_KERNEL_LINE = re.compile(r'\[\s*\d+\.\d+\] [^\n]*\n')


def _begin_re(instance_id: str) -> re.Pattern[str]:
    return re.compile(
        re.escape(BEGIN) + r' ' + re.escape(instance_id) +
        # At most 12 digits of byte count: a longer one (a garbled or
        # hostile line) is no frame, never a ValueError from int().
        r' (\S+) (\S+) (\d{1,12}) ([0-9a-f]{64})[ \t]*\n')


def _verified(payload: str, size: int, digest: str) -> bool:
    data = payload.encode('utf-8', 'surrogateescape')
    return len(data) == size and hashlib.sha256(data).hexdigest() == digest


def _normalise(text: str | bytes) -> str:
    if isinstance(text, bytes):
        text = text.decode('utf-8', 'surrogateescape')
    # The guest tty turns \n into \r\n.
    return text.replace('\r\n', '\n')


# (state, reason) or None; Any until the Rally scenarios' guests.ready
# (kvmtune.rally.scenarios.kvmtune.guests) narrows it (it tests
# bool(seen) before seen[0], which mypy does not follow).
StatusLine = Any


def status(text: str | bytes, instance_id: str) -> StatusLine:
    """(state, reason) of the guest's last status line, or None."""
    found = None
    pattern = re.compile(re.escape(STATUS) + ' ' + re.escape(instance_id) +
                         r' (ok|late|error|serving|ready)\b[ \t]*'
                         r'([^\n]*)')
    for match in pattern.finditer(_normalise(text)):
        found = (match.group(1), match.group(2).strip())
    return found


# Seconds the guest states on its ready / ok lines (design.md 6): its
# uptime when ready and when the tool started, its wall clock at the start.
_TIMING = {'ready': ('uptime', 'time'),
           'serving': ('uptime', 'time'),
           'ok': ('ready', 'start', 'start_time', 'end')}
_SECONDS = re.compile(r'^\d{1,10}(\.\d{1,9})?\Z')


def timing(text: str | bytes | None, instance_id: str) -> dict[str, float]:
    """When the guest was ready and started, in its own words: ``{"ready":
    uptime s, "start": uptime s, "start_time": epoch s (guest clock),
    "end": uptime s}`` from its ``ok`` line, else ``{"ready", "time"}``
    from its ``ready`` (or a server's ``serving``) line; keys it did not
    say (images from before these fields) are absent. A value that is not
    a plain number is dropped, never guessed."""
    text = _normalise(text or '')
    found: dict[str, float] = {}
    pattern = re.compile(re.escape(STATUS) + ' ' + re.escape(instance_id) +
                         r' (ok|ready|serving)\b[ \t]*([^\n]*)')
    for match in pattern.finditer(text):
        state, words = match.group(1), _keyed(match.group(2).split())
        said = {k: float(v) for k, v in words.items()
                if k in _TIMING[state] and _SECONDS.match(v)}
        if state != 'ok':
            said = {{'uptime': 'ready'}.get(k, k): v
                    for k, v in said.items()}
        found.update(said)
    return found


def _last_line(text: str | bytes | None, marker: str,
               instance_id: str) -> list[str] | None:
    """Words after ``<marker> <instance>`` on its last line, or None."""
    found = None
    pattern = re.compile(re.escape(marker) + ' ' + re.escape(instance_id) +
                         r'[ \t]+([^\n]*)')
    for match in pattern.finditer(_normalise(text or '')):
        found = match.group(1).split()
    return found


def _keyed(words: list[str]) -> dict[str, str]:
    return dict(w.split('=', 1) for w in words if '=' in w)


def guest(text: str | bytes | None,
          instance_id: str) -> dict[str, str] | None:
    """What the guest said of its virtualization, or None (images built
    before the guest said it): ``{"accel": "kvm" | "tcg" | "unknown",
    "clocksource": ..., "hypervisor": ...}``."""
    words = _last_line(text, GUEST, instance_id)
    if words is None:
        return None
    said = _keyed(words)
    if said.get('accel') not in ACCELS:
        said['accel'] = 'unknown'
    return said


def emulated(text: str | bytes | None, instance_id: str,
             default: _T) -> bool | _T:
    """True when the guest said it runs under TCG, else ``default`` (the
    caller's knowledge): a guest that says kvm or nothing never clears a
    label the caller set."""
    said = guest(text, instance_id)
    return True if said and said['accel'] == 'tcg' else default


def net(text: str | bytes | None,
        instance_id: str) -> dict[str, str] | None:
    """How the guest configured its NIC, or None: ``{"device": "eth0",
    "address": "10.0.0.5/24", "from": "job" | "network_data" | "dhcp",
    "mtu": "1500"}``."""
    words = _last_line(text, NET, instance_id)
    if not words or len(words) < 2:
        return None
    return dict(_keyed(words[2:]), device=words[0], address=words[1])


def extract(text: str | bytes, instance_id: str) -> list[dict[str, Any]]:
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
