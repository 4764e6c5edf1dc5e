"""Shared steps of the kvmtune scaling scenarios.

One iteration boots a batch of benchmark guests on one host, each with
its job on the config drive, waits for every guest to print its verdict on
the serial console, and turns the verdicts into Rows (kvmtune.results),
output charts and the per-VM table the SLA and ``kvmtune report`` read
(kvmtune.results.rally.table_output). Nothing is reached
inside the guests: no SSH, floating IP or agent.

KvmTuneScenario boots, runs and deletes a step's guests; reading their
consoles is consoles.GuestConsoles, Rally's output charts.ScenarioCharts.
"""

from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence
import contextlib
import dataclasses
import time
from typing import Any
from typing import TypeAlias

from rally.common import cfg
from rally.common import logging
from rally import exceptions
from rally.task import atomic
from rally.task import utils

from rally_openstack.task.scenarios.nova import utils as nova_utils

from kvmtune.errors import KvmtuneError
from kvmtune.rally.scenarios.kvmtune import charts
from kvmtune.rally.scenarios.kvmtune import consoles
from kvmtune.rally.scenarios.kvmtune import guests
from kvmtune.results import rally as results_rally
from kvmtune.results import row as result_rows
from kvmtune.results.row import Row

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

NEW_SERVER_404_RETRIES = 3
# How the clients of a step start (design.md 6): "signal", each says ready
# on its console and all get an NMI (Nova's trigger_crash_dump) once every
# one is ready; "at", the old common start_at guessed from start_margin.
START_MODES = ("signal", "at")
# While servers are being deleted, the delete is sent again this often: a
# nova-compute that died keeps a server in task_state deleting (Nova then
# ignores a second delete) until the service is seen down
# ([DEFAULT] service_down_time, 60 s by default); from then on Nova's API
# deletes it locally (nova/compute/api.py _delete: is_local_delete).
DELETE_RESEND_INTERVAL = 15
_GONE = object()

Server: TypeAlias = consoles.Server
# A novaclient ServerGroup (untyped, as Server).
ServerGroup: TypeAlias = Any
# NICs for novaclient: [{"net-id": ...}, ...], or "none" / "auto".
Nics: TypeAlias = list[dict[str, str]] | str
# Where a batch goes: availability_zone or scheduler_hints (_placement).
Placement: TypeAlias = dict[str, str | dict[str, str]]


class GuestResultsMissing(exceptions.RallyException):
    error_code = 720
    msg_fmt = "%(count)s of %(total)s guests gave no valid result: %(which)s"


class KvmTuneScenario(consoles.GuestConsoles, charts.ScenarioCharts,
                      nova_utils.NovaScenario):
    """Boot benchmark guests together and read their results."""

    def _vm_count(self, vm_counts: Sequence[int]) -> int:
        """The sweep step of this iteration: iteration i runs vm_counts[i]."""
        step: int = (self.context["iteration"] - 1) % len(vm_counts)
        return vm_counts[step]

    def _job(self, workload: str, start_at: float | None, runtime: int,
             **kwargs: Any) -> str:
        """A guest's user_data; a bad workload or params stop the
        iteration before anything boots."""
        try:
            return guests.job(workload, start_at, runtime, **kwargs)
        except KvmtuneError as exc:
            raise exceptions.InvalidArgumentsException(exc.line()) from None

    @staticmethod
    def _needs_disk(workload: str) -> bool:
        """Whether the workload benchmarks a data disk (fio), not only
        the guest's CPUs and memory (sysbench); unknown: the job says."""
        from kvmtune import workloads

        try:
            return workloads.get(workload).target == "disk"
        except KvmtuneError as exc:
            raise exceptions.InvalidArgumentsException(exc.line()) from None

    def _require_data_disk(self, flavor_id: str,
                           target: str | None) -> None:
        """Refuse a flavor without ephemeral disk: the boot disk is never
        benchmarked (writes would destroy it, reads can skip real I/O)."""
        flavor = self.clients("nova").flavors.get(flavor_id)
        if not getattr(flavor, "OS-FLV-EXT-DATA:ephemeral", 0):
            raise exceptions.InvalidArgumentsException(
                f"flavor {flavor.name} has no ephemeral disk for {target}: "
                "give the benchmark flavor one (openstack flavor create "
                "--ephemeral 1 ...), the boot disk is never benchmarked")

    def _nics(self, nics: Nics | None) -> Nics | None:
        """NICs as asked, else the context's networks, else none at all."""
        if nics:
            return nics
        networks = self.context.get("tenant", {}).get("networks")
        if networks:
            return [{"net-id": networks[0]["id"]}]
        version = self.clients("nova").api_version
        return "none" if version.ver_minor >= 37 else None

    def _affinity_group(self) -> ServerGroup:
        """A server group keeping the batch on one host (as a user)."""
        if self.clients("nova").api_version.ver_minor >= 64:
            return self._create_server_group(policy="affinity")
        return self._create_server_group(policies=["affinity"])

    def _placement(self, host: str | None, group: ServerGroup) -> Placement:
        """Where the batch goes: an admin's "nova:HOST" or the group (None
        when there is a host)."""
        if host:
            return {"availability_zone": f"nova:{host}"}
        return {"scheduler_hints": {"group": group.id}}

    def _create_guests(self, image: str, flavor: str, jobs: Sequence[str],
                       placement: Placement, nics: Nics | None,
                       created: list[Server], role: str = "client") -> None:
        """Create one server per job without waiting, so they boot together.

        ``created`` receives each server as soon as Nova returns it, so the
        caller can delete them even if a later create fails (and count
        them as lost guests when the step fails before their verdicts).
        """
        prefix = self.generate_random_name()
        with atomic.ActionTimer(self, "kvmtune.create_servers"):
            for i, user_data in enumerate(jobs):
                kwargs: dict[str, object] = dict(
                    placement, userdata=user_data, config_drive=True)
                if nics is not None:
                    kwargs["nics"] = nics
                server = self.clients("nova").servers.create(
                    f"{prefix}_{i}", image, flavor, **kwargs)
                # The create answer has no name; without one novaclient
                # re-reads the server to print it, which fails while Nova
                # still moves a new server between cells.
                server.name = f"{prefix}_{i}"
                server.kvmtune_role = role
                created.append(server)

    @consoles.action_timer("kvmtune.wait_active")
    def _wait_active(self, servers: Sequence[Server]) -> list[Server]:
        self.sleep_between(CONF.openstack.nova_server_boot_prepoll_delay)
        return [self._active(server) for server in servers]

    def _active(self, server: Server) -> Server:
        # A server Nova has just accepted can answer 404 for a moment
        # (build request handed to a cell), and a busy API can drop a
        # connection (GetResourceFailure): look again before giving up.
        for attempt in range(NEW_SERVER_404_RETRIES):
            try:
                return utils.wait_for_status(
                    server, ready_statuses=["ACTIVE"],
                    update_resource=utils.get_from_manager(),
                    timeout=CONF.openstack.nova_server_boot_timeout,
                    check_interval=(
                        CONF.openstack.nova_server_boot_poll_interval))
            except exceptions.GetResourceErrorStatus:
                raise       # ERROR (e.g. no valid host) is an answer
            except exceptions.GetResourceFailure:   # 404 or no connection
                if attempt == NEW_SERVER_404_RETRIES - 1:
                    raise
                self.sleep_between(2)

    def _run_step(self, vms: int, watched: Sequence[Server],
                  clients: Sequence[Server], start: int | None,
                  runtime: int, workload: str, emulated: bool,
                  created_at: float, active_at: float, ready_timeout: float,
                  result_timeout: float) -> list[Row]:
        """One step's guests from ACTIVE to their rows: signal mode
        (``start`` is None: wait for every ``watched`` guest to be ready,
        start the ``clients`` together) or start-at mode (wait for the
        verdicts after ``start``); the clients' rows, charted with the
        step's time budget."""
        if start is None:
            logs, ready_at, sent = self._run_signalled(
                watched, clients, runtime,
                ready_timeout - (active_at - created_at), result_timeout)
        else:
            logs = self._wait_results(clients,
                                      start + runtime + result_timeout)
            ready_at, sent = {}, {}
        ids = {s.id for s in clients}
        ready_at = {i: t for i, t in ready_at.items() if i in ids}
        with atomic.ActionTimer(self, "kvmtune.collect"):
            seen = {i: t - created_at for i, t in ready_at.items()}
            rows = [self._lost_read(guests.row(
                logs.get(s.id), s.id, "client", workload, emulated,
                seen.get(s.id))) for s in clients]
            self._add_charts(rows)
            self._add_budget(vms, created_at, active_at, ready_at, sent,
                             rows)
        return rows

    @consoles.action_timer("kvmtune.delete_servers")
    def _delete_guests(self, servers: Sequence[Server],
                       group: ServerGroup | None) -> None:
        """Delete ``servers`` and wait until Nova has none of them, within
        Rally's nova_server_delete_timeout. The delete is sent again every
        DELETE_RESEND_INTERVAL s while one is left, and a call that fails
        (the API down for a while) is tried again at the next round: a
        server whose nova-compute died is deleted once Nova sees that
        service down. Then the affinity group."""
        nova = self.clients("nova")
        timeout = CONF.openstack.nova_server_delete_timeout
        deadline = time.time() + timeout
        left = {server.id: server for server in servers}
        errors: dict[str, str] = {}
        sent: float | None = None
        while left:
            if sent is None or time.time() - sent >= DELETE_RESEND_INTERVAL:
                sent = time.time()
                for server_id in list(left):
                    if self._try(errors, server_id, nova.servers.delete,
                                 server_id) is _GONE:
                        del left[server_id]
            for server_id in list(left):
                # by id: a lazy server object would re-read itself and fail
                if self._try(errors, server_id, nova.servers.get,
                             server_id) in (None, _GONE):
                    del left[server_id]
            if not left:
                break
            if time.time() > deadline:
                server = next(iter(left.values()))
                raise exceptions.TimeoutException(
                    desired_status="deleted", resource_name=server.name,
                    resource_type="server", resource_id=server.id,
                    resource_status="not deleted ("
                    + "; ".join(f"{i}: {errors.get(i, 'still there')}"
                                for i in left) + ")",
                    timeout=timeout)
            self.sleep_between(
                CONF.openstack.nova_server_delete_poll_interval)
        if group is not None:
            self._ignore_404(nova.server_groups.delete, group.id)

    @staticmethod
    def _try(errors: dict[str, str], server_id: str,
             call: Callable[..., object], *args: Any) -> object:
        """call(*args); _GONE on a 404; the error kept in ``errors`` and
        False when the call failed otherwise (tried again later)."""
        try:
            result = call(*args)
        except Exception as exc:
            if getattr(exc, "code", None) == 404:
                return _GONE
            errors[server_id] = f"{type(exc).__name__}: {exc}"[:200]
            LOG.warning(f"kvmtune: deleting {server_id}: {errors[server_id]}")
            return False
        errors.pop(server_id, None)
        return result if result is not None else True

    @contextlib.contextmanager
    def _guest_batch(
            self, host: str | None, workload: str | None = None
    ) -> Iterator[tuple[list[Server], Placement]]:
        """Yield (created servers list, placement kwargs); on the way out
        delete every server put in the list and the affinity group, also
        when a boot or a wait failed half way. A step that fails after it
        created guests and before their rows (a boot that never ended, the
        API or nova-compute gone) still leaves a row for each created
        client: lost, with the error, counted invalid by the SLA and
        `kvmtune report` (never averaged)."""
        created: list[Server] = []
        group: ServerGroup | None = None
        self._lost_reads, self._charted = {}, False
        try:
            if not host:
                group = self._affinity_group()
            yield created, self._placement(host, group)
        except Exception as exc:
            if created and not self._charted:
                self._chart_lost(created, exc, workload)
            raise
        finally:
            self._delete_guests(created, group)

    def _chart_lost(self, created: Sequence[Server], exc: Exception,
                    workload: str | None) -> None:
        reason = (f"lost: the step failed before its verdict "
                  f"({type(exc).__name__}: {exc})").splitlines()[0][:300]
        rows = [self._lost_read(result_rows.failed(
            s.id, getattr(s, "kvmtune_role", "client"),
            result_rows.NO_RESULT, reason, workload)) for s in created]
        try:
            self._add_charts(rows)
        except Exception:       # the error being raised says more
            LOG.exception("kvmtune: could not chart the lost guests")

    def _lost_read(self, row: Row) -> Row:
        """``row``, its reason saying so when the guest's console could
        not be read at the last attempt."""
        reason = (self._lost_reads.get(row.instance)
                  if row.instance is not None else None)
        if reason and not row.ok:
            row = dataclasses.replace(
                row, reason=f"{row.reason}; its console could not be "
                            f"read: {reason}")
        return row

    def _fail_on_bad_guests(self, rows: Sequence[Row]) -> None:
        cl = results_rally.measuring(rows)
        bad = [r for r in cl if not r.ok]
        if bad:
            raise GuestResultsMissing(
                count=len(bad), total=len(cl),
                which="; ".join(f"{r.instance}: {r.status}: {r.reason}"
                                for r in bad))
