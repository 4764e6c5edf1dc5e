"""verify's checks as a node_exporter textfile (Prometheus text format).

node_exporter's textfile collector reads ``*.prom`` files from
``--collector.textfile.directory`` (node_exporter README, "Textfile
Collector"). It skips a whole file whose samples carry timestamps, so the
time of the run is a gauge of its own, and a file must appear whole: it is
written to a temporary file in the same directory and renamed (kvmtune's
one writer, kvmtune.fileio). Metrics:

``kvmtune_verify_check{host,layer,check,profile,status} 1``
    one sample per check, its status a label (PASS, DRIFT, UNKNOWN), as
    kube-state-metrics gives a pod's phase: ``kvmtune_verify_check{status=
    "DRIFT"} == 1`` lists what drifted.
``kvmtune_verify_checks{host,status}``
    how many checks have each status (alert on ``{status="DRIFT"} > 0``;
    UNKNOWN is not a pass either).
``kvmtune_verify_last_run_timestamp_seconds{host}``
    when verify ran (alert when it stops: the file would go stale).
"""

import time
from collections.abc import Sequence

from kvmtune import fileio
from kvmtune import verify

CHECK = 'kvmtune_verify_check'
CHECKS = 'kvmtune_verify_checks'
LAST_RUN = 'kvmtune_verify_last_run_timestamp_seconds'


def _label(value: object) -> str:
    """A label value escaped as the text format wants: backslash, double
    quote and line feed."""
    return (str('' if value is None else value).replace('\\', '\\\\')
            .replace('"', '\\"').replace('\n', '\\n'))


def labels(**labels: object) -> str:
    """``{name="value",...}`` in the text format, values escaped (the
    one label writer of kvmtune's textfiles, capacity's too)."""
    return '{' + ','.join(f'{name}="{_label(value)}"'
                          for name, value in labels.items()) + '}'


def render(checks: Sequence[verify.Check], host: str | None = None,
           now: float | None = None) -> str:
    """The textfile for ``checks`` (kvmtune.verify.Check list)."""
    now = time.time() if now is None else now
    hosts = sorted({check.host or host or '' for check in checks} or
                   {host or ''})
    lines = [f'# HELP {CHECK} One kvmtune verify check: 1 with its status '
             'as a label (PASS, DRIFT, UNKNOWN).',
             f'# TYPE {CHECK} gauge']
    for check in checks:
        lines.append(CHECK + labels(
            host=check.host or host or '', layer=check.layer,
            check=check.name, profile=check.profile or '',
            status=check.status) + ' 1')
    lines += [f'# HELP {CHECKS} kvmtune verify checks by status.',
              f'# TYPE {CHECKS} gauge']
    for name in hosts:
        for status in verify.STATUSES:
            count = sum(1 for check in checks
                        if (check.host or host or '') == name
                        and check.status == status)
            lines.append(CHECKS + labels(host=name, status=status) +
                         f' {count}')
    lines += [f'# HELP {LAST_RUN} When kvmtune verify last ran (Unix time).',
              f'# TYPE {LAST_RUN} gauge']
    for name in hosts:
        lines.append(LAST_RUN + labels(host=name) + f' {now:.3f}')
    return '\n'.join(lines) + '\n'


def write(path: str, checks: Sequence[verify.Check], host: str | None = None,
          now: float | None = None) -> None:
    """Write the textfile atomically (same directory, then rename)."""
    fileio.write_atomic(path, render(checks, host=host, now=now),
                        mode=0o644, source=path,
                        fix='give --prometheus a file in a directory you '
                            'can write (the textfile collector\'s)')
