"""verify's checks as a node_exporter textfile (kvmtune.textfile writes it).

Every series has ``hostname``: the Nova service host (``--host``, else the
host name of the root verify looked at), as openstack-exporter's
``openstack_nova_agent_state{hostname}``. Metrics:

``kvmtune_verify_check_status{hostname,layer,check,profile,status} 1``
    one sample per check, its status a label (PASS, DRIFT, UNKNOWN), as
    kube-state-metrics gives a pod's phase.
``kvmtune_verify_checks_by_status{hostname,status}``
    how many checks have each status (alert on ``{status="DRIFT"} > 0``;
    UNKNOWN is not a pass either).
``kvmtune_reboot_required{hostname,reason}`` 0 or 1
    a boot-time change was written but not booted yet, by reason
    (``cmdline``, ``hugepages``, ``module``), from the host's reboot
    record (kvmtune.boot.record.pending), as
    node-exporter-textfile-collector-scripts' ``node_reboot_required``.
``kvmtune_restart_required{hostname,service}`` 0 or 1
    the service started before its configuration files last changed
    (the novacompute layer's restart check; absent when it is UNKNOWN).
``kvmtune_last_run_timestamp_seconds`` and
``kvmtune_last_success_timestamp_seconds`` ``{command="verify",hostname}``
    when verify last ran, and last found the host in sync: nothing
    drifted and something checked (a PASS; a run whose checks of a host
    are all UNKNOWN, or none, keeps the previous value, so
    KvmtuneVerifyNotSucceeded fires on a host nothing can be checked on).

Kept for one release (releasenotes), with their ``host`` label:
``kvmtune_verify_check``, ``kvmtune_verify_checks`` and
``kvmtune_verify_last_run_timestamp_seconds``.
"""

from collections.abc import Mapping
from collections.abc import Sequence
import time

from kvmtune.boot import record
from kvmtune.errors import EXIT_OK
from kvmtune import textfile
from kvmtune import verify

COMMAND = 'verify'
STATUS = 'kvmtune_verify_check_status'
BY_STATUS = 'kvmtune_verify_checks_by_status'
REBOOT = 'kvmtune_reboot_required'
RESTART = 'kvmtune_restart_required'
REASONS = record.REASONS
# the old names, written for one release more (release note
# prometheus-names-hostname-7c2e9a41d0b35f86.yaml)
OLD_CHECK = 'kvmtune_verify_check'
OLD_CHECKS = 'kvmtune_verify_checks'
OLD_LAST_RUN = 'kvmtune_verify_last_run_timestamp_seconds'

labels = textfile.labels


def _hostname(check: verify.Check, host: str | None) -> str:
    return check.host or host or ''


def families(checks: Sequence[verify.Check], host: str | None = None,
             reboot: Mapping[str, Sequence[str]] | None = None,
             now: float | None = None) -> list[textfile.Family]:
    """The families for ``checks``: new names, then the old ones.
    ``reboot``: kvmtune.boot.record.pending() of this host (None: not
    known, no kvmtune_reboot_required series)."""
    now = time.time() if now is None else now
    hosts = sorted({_hostname(check, host) for check in checks} or
                   {host or ''})
    status = textfile.Family(STATUS, 'One kvmtune verify check: 1 with its '
                             'status as a label (PASS, DRIFT, UNKNOWN).')
    old = textfile.Family(OLD_CHECK, 'Deprecated: use '
                          f'{STATUS}{{hostname}} (removed in the next '
                          'release).')
    for check in checks:
        where = dict(layer=check.layer, check=check.name,
                     profile=check.profile or '', status=check.status)
        status.add(1, hostname=_hostname(check, host), **where)
        old.add(1, host=_hostname(check, host), **where)
    counts = textfile.Family(BY_STATUS, 'kvmtune verify checks by status.')
    old_counts = textfile.Family(OLD_CHECKS, 'Deprecated: use '
                                 f'{BY_STATUS} (removed in the next '
                                 'release).')
    for name in hosts:
        for value in verify.STATUSES:
            count = sum(1 for check in checks
                        if _hostname(check, host) == name
                        and check.status == value)
            counts.add(count, hostname=name, status=value)
            old_counts.add(count, host=name, status=value)
    found = [status, counts]
    if reboot is not None:
        pending = textfile.Family(REBOOT, '1 when a boot-time change kvmtune '
                                  'wrote is not booted yet, by reason.')
        for reason in REASONS:
            pending.add(1 if reboot.get(reason) else 0,
                        hostname=host or hosts[0], reason=reason)
        found.append(pending)
    restart = textfile.Family(RESTART, '1 when the service started before '
                              'its configuration files last changed.')
    for check in checks:
        if (check.layer == 'novacompute' and check.name.endswith(' restart')
                and check.status != verify.UNKNOWN):
            restart.add(1 if check.status == verify.DRIFT else 0,
                        hostname=_hostname(check, host),
                        service=check.name[:-len(' restart')])
    found.append(restart)
    last = textfile.Family(OLD_LAST_RUN, 'Deprecated: use '
                           f'{textfile.LAST_RUN}{{command="verify"}} '
                           '(removed in the next release).')
    for name in hosts:
        last.add(now, host=name)
    return found + [old, old_counts, last]


def success(checks: Sequence[verify.Check],
            host: str | None = None) -> dict[str, bool]:
    """{hostname: in sync} (verify's exit status 0 per host: nothing
    drifted and something was checked, verify.exit_code)."""
    hosts = {_hostname(check, host) for check in checks} or {host or ''}
    return {name: verify.exit_code(check for check in checks
                                   if _hostname(check, host) == name)
            == EXIT_OK for name in hosts}


def render(checks: Sequence[verify.Check], host: str | None = None,
           now: float | None = None,
           reboot: Mapping[str, Sequence[str]] | None = None) -> str:
    """The textfile for ``checks`` (kvmtune.verify.Check list), as a first
    run writes it."""
    now = time.time() if now is None else now
    return textfile.render(
        families(checks, host, reboot, now) +
        textfile.timestamps(COMMAND, success(checks, host), now, {}))


def write(path: str, checks: Sequence[verify.Check], host: str | None = None,
          now: float | None = None, root: str | None = None) -> None:
    """Write the textfile atomically, as its one writer
    (kvmtune.textfile.write). ``root``: the host tree verify looked at,
    whose pending reboot it reports (None: the fleet view, no such
    series)."""
    now = time.time() if now is None else now
    reboot = None if root is None else record.pending(root)
    textfile.write(path, COMMAND, families(checks, host, reboot, now),
                   success(checks, host), now=now)
