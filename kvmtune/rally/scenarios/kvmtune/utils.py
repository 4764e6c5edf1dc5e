"""Shared steps of the kvmtune scaling scenarios.

One iteration boots a batch of benchmark guests on one host, each with
its job on the config drive, waits for every guest to print its verdict on
the serial console, and turns the verdicts into Rows (kvmtune.results),
output charts and the per-VM table the SLA and ``kvmtune report`` read
(kvmtune.results.rally.table_output). Nothing is reached
inside the guests: no SSH, floating IP or agent.
"""

import concurrent.futures as futures
import contextlib
import dataclasses
import time

from rally.common import cfg
from rally.common import logging
from rally import exceptions
from rally.task import atomic
from rally.task import utils

from rally_openstack.task.scenarios.nova import utils as nova_utils

from kvmtune.errors import KvmtuneError
from kvmtune.report import analysis
from kvmtune.report import guests
from kvmtune.results import rally as results_rally
from kvmtune.results import row as result_rows

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

CONSOLE_POLL_INTERVAL = 5
# While guests boot and once their run is due: a step ends within this of
# its last verdict (the console API is cheap next to a TCG boot).
SIGNAL_POLL_INTERVAL = 2
NEW_SERVER_404_RETRIES = 3
# Threads reading consoles in one polling round.
CONSOLE_READERS = 5
# How the clients of a step start (design.md 6): "signal", each says ready
# on its console and all get an NMI (Nova's trigger_crash_dump) once every
# one is ready; "at", the old common start_at guessed from start_margin.
START_MODES = ("signal", "at")
BUDGET_TITLE = "kvmtune step time budget"
# While servers are being deleted, the delete is sent again this often: a
# nova-compute that died keeps a server in task_state deleting (Nova then
# ignores a second delete) until the service is seen down
# ([DEFAULT] service_down_time, 60 s by default); from then on Nova's API
# deletes it locally (nova/compute/api.py _delete: is_local_delete).
DELETE_RESEND_INTERVAL = 15


class _Unreadable:
    """A console that could not be read this round (the API or the
    guest's nova-compute did not answer); the step goes on until its own
    deadline, and a guest never read again is counted invalid."""

    def __init__(self, reason):
        self.reason = reason


_GONE = object()


class GuestResultsMissing(exceptions.RallyException):
    error_code = 720
    msg_fmt = "%(count)s of %(total)s guests gave no valid result: %(which)s"


class KvmTuneScenario(nova_utils.NovaScenario):
    """Boot benchmark guests together and read their results."""

    def _vm_count(self, vm_counts):
        """The sweep step of this iteration: iteration i runs vm_counts[i]."""
        return vm_counts[(self.context["iteration"] - 1) % len(vm_counts)]

    def _job(self, workload, start_at, runtime, **kwargs):
        """A guest's user_data; a bad workload or params stop the
        iteration before anything boots."""
        try:
            return guests.job(workload, start_at, runtime, **kwargs)
        except KvmtuneError as exc:
            raise exceptions.InvalidArgumentsException(exc.line()) from None

    @staticmethod
    def _needs_disk(workload):
        """Whether the workload benchmarks a data disk (fio), not only
        the guest's CPUs and memory (sysbench); unknown: the job says."""
        from kvmtune import workloads

        try:
            return workloads.get(workload).target == "disk"
        except KvmtuneError as exc:
            raise exceptions.InvalidArgumentsException(exc.line()) from None

    def _require_data_disk(self, flavor_id, target):
        """Refuse a flavor without ephemeral disk: the boot disk is never
        benchmarked (writes would destroy it, reads can skip real I/O)."""
        flavor = self.clients("nova").flavors.get(flavor_id)
        if not getattr(flavor, "OS-FLV-EXT-DATA:ephemeral", 0):
            raise exceptions.InvalidArgumentsException(
                f"flavor {flavor.name} has no ephemeral disk for {target}: "
                "give the benchmark flavor one (openstack flavor create "
                "--ephemeral 1 ...), the boot disk is never benchmarked")

    def _nics(self, nics):
        """NICs as asked, else the context's networks, else none at all."""
        if nics:
            return nics
        networks = self.context.get("tenant", {}).get("networks")
        if networks:
            return [{"net-id": networks[0]["id"]}]
        version = self.clients("nova").api_version
        return "none" if version.ver_minor >= 37 else None

    def _affinity_group(self):
        """A server group keeping the batch on one host (as a user)."""
        if self.clients("nova").api_version.ver_minor >= 64:
            return self._create_server_group(policy="affinity")
        return self._create_server_group(policies=["affinity"])

    def _placement(self, host, group):
        """Where the batch goes: an admin's "nova:HOST" or the group."""
        if host:
            return {"availability_zone": f"nova:{host}"}
        return {"scheduler_hints": {"group": group.id}}

    def _create_guests(self, image, flavor, jobs, placement, nics, created,
                       role="client"):
        """Create one server per job without waiting, so they boot together.

        ``created`` receives each server as soon as Nova returns it, so the
        caller can delete them even if a later create fails (and count
        them as lost guests when the step fails before their verdicts).
        """
        prefix = self.generate_random_name()
        with atomic.ActionTimer(self, "kvmtune.create_servers"):
            for i, user_data in enumerate(jobs):
                kwargs = dict(placement, userdata=user_data,
                              config_drive=True)
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

    @atomic.action_timer("kvmtune.wait_active")
    def _wait_active(self, servers):
        self.sleep_between(CONF.openstack.nova_server_boot_prepoll_delay)
        return [self._active(server) for server in servers]

    def _active(self, server):
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

    def _console(self, server):
        """The console log, or None when Nova has none to give: libvirt
        serves no log of a stopped guest, so a guest that powered off
        before its verdict was read is lost (jobs hold guests for this).
        An _Unreadable when the API or the guest's nova-compute did not
        answer (5xx, no connection, a timeout): the caller looks again
        until its own deadline instead of failing the step."""
        try:
            return self._ignore_404(
                self.clients("nova").servers.get_console_output, server)
        except Exception as exc:
            return self._unreadable(server, exc)

    def _unreadable(self, server, exc):
        code = getattr(exc, "code", None)
        if isinstance(code, int) and code < 500:
            raise exc          # a refusal (403, 409): an answer, not a fault
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
        LOG.warning(f"kvmtune: console of {server.id} unreadable: {reason}")
        return _Unreadable(reason)

    def _stopped(self, server):
        """Whether Nova says the guest is SHUTOFF; None when it cannot
        say (the API does not answer)."""
        try:
            return self._show_server(server).status == "SHUTOFF"
        except Exception as exc:
            self._unreadable(server, exc)
            return None

    def _consoles(self, servers):
        """{server id: console log or None} of ``servers``, read at once
        by a few threads: one round costs about one call, not N (a
        10-guest step reads 10 logs per round)."""
        if len(servers) <= 1:
            return {s.id: self._console(s) for s in servers}
        with futures.ThreadPoolExecutor(
                max_workers=min(len(servers), CONSOLE_READERS)) as pool:
            return dict(zip([s.id for s in servers],
                            pool.map(self._console, servers)))

    @atomic.action_timer("kvmtune.wait_ready")
    def _wait_ready(self, servers, deadline):
        """({server id: host time its ready line was first seen}, {server
        id: last console log}) once every guest said ready (a server:
        serving) or gave a verdict, or when the deadline passes."""
        seen, logs, pending = {}, {}, list(servers)
        while pending:
            texts = self._consoles(pending)
            for server in list(pending):
                text = texts[server.id]
                if isinstance(text, _Unreadable):
                    self._lost_reads[server.id] = text.reason
                    continue
                self._lost_reads.pop(server.id, None)
                if text is None:
                    if self._stopped(server):
                        pending.remove(server)
                    continue
                logs[server.id] = text
                if guests.ready(text, server.id):
                    seen[server.id] = time.time()
                    pending.remove(server)
            LOG.info(f"kvmtune: guests ready "
                     f"{len(servers) - len(pending)}/{len(servers)}")
            if not pending or time.time() >= deadline:
                break
            self.sleep_between(SIGNAL_POLL_INTERVAL)
        return seen, logs

    @atomic.action_timer("kvmtune.start")
    def _start_guests(self, servers):
        """The start signal: an NMI into each guest (Nova's crash dump
        trigger, API 2.17, a project member's right): {id: host time}."""
        nova = self.clients("nova")

        def signal(server):
            try:
                nova.servers.trigger_crash_dump(server)
            except Exception as exc:    # it never joins: its row says so
                LOG.warning(f"kvmtune: no start signal to {server.id}: "
                            f"{exc}")
                return None
            return time.time()

        if not servers:
            return {}
        # all calls at once: one after another, 10 guests would start
        # seconds apart
        with futures.ThreadPoolExecutor(max_workers=len(servers)) as pool:
            sent = dict(zip([s.id for s in servers],
                            pool.map(signal, servers)))
        return {i: t for i, t in sent.items() if t is not None}

    def _run_signalled(self, active, clients, runtime, ready_timeout,
                       result_timeout):
        """The signal mode's wait: all ``active`` ready (or the timeout),
        then the ready ``clients`` started together and their verdicts.
        Returns (logs, {id: host time first seen ready}, {id: sent})."""
        ready_at, logs = self._wait_ready(active,
                                          time.time() + ready_timeout)
        go = [s for s in clients if s.id in ready_at and
              not guests.status(logs.get(s.id), s.id)]
        sent = self._start_guests(go)
        if go:
            logs.update(self._wait_results(
                go, max(sent.values()) + runtime + result_timeout,
                poll=SIGNAL_POLL_INTERVAL, first_wait=runtime))
        return logs, ready_at, sent

    def _run_step(self, vms, watched, clients, start, runtime, workload,
                  emulated, created_at, active_at, ready_timeout,
                  result_timeout):
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

    def _add_budget(self, vms, created_at, active_at, ready_at, sent, rows):
        """This step's readiness in Rally's output: guest and host views
        of boot-to-ready, the start spread (the atomic actions hold the
        phases' durations)."""
        said = [r.ready_s for r in rows if r.ready_s is not None]
        seen = [t - created_at for t in ready_at.values()]
        data = [["guests", vms], ["guests ready", len(ready_at)],
                ["guests started", len(sent)],
                ["API to ACTIVE, s", round(active_at - created_at, 2)],
                ["API to last ready seen, s",
                 round(max(seen), 2) if seen else None],
                ["guest uptime at ready, min s",
                 round(min(said), 2) if said else None],
                ["guest uptime at ready, max s",
                 round(max(said), 2) if said else None],
                ["start signal spread, s",
                 round(max(sent.values()) - min(sent.values()), 2)
                 if sent else None]]
        self.add_output(complete={
            "title": BUDGET_TITLE, "chart_plugin": "Table",
            "description": "Host clock unless it says guest uptime; the "
                           "atomic actions give boot, ready, workload, "
                           "collect and delete",
            "data": {"cols": ["figure", "value"], "rows": data}})

    @atomic.action_timer("kvmtune.wait_results")
    def _wait_results(self, servers, deadline, poll=CONSOLE_POLL_INTERVAL,
                      first_wait=0):
        """Console log of each server once it printed its verdict, the
        last log seen when the deadline passes, None when it was lost.
        Nothing is read for ``first_wait`` s (the run cannot be over)."""
        if first_wait:
            self.sleep_between(first_wait)
        logs, pending = {}, list(servers)
        while pending:
            texts = self._consoles(pending)
            for server in list(pending):
                text = texts[server.id]
                if isinstance(text, _Unreadable):
                    self._lost_reads[server.id] = text.reason
                    logs.setdefault(server.id, None)
                    continue
                self._lost_reads.pop(server.id, None)
                if text is None:
                    logs.setdefault(server.id, None)
                    if self._stopped(server):
                        pending.remove(server)
                    continue
                logs[server.id] = text
                if guests.status(text, server.id):
                    pending.remove(server)
            # a person following Rally's log reads this (the main job
            # follows the task in Rally's database: mainjob.rally.follow)
            LOG.info(f"kvmtune: guests reported "
                     f"{len(servers) - len(pending)}/{len(servers)}")
            if not pending or time.time() >= deadline:
                break
            self.sleep_between(poll)
        return logs

    @atomic.action_timer("kvmtune.delete_servers")
    def _delete_guests(self, servers, group):
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
        errors = {}
        sent = None
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
    def _try(errors, server_id, call, *args):
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

    @staticmethod
    def _ignore_404(call, *args):
        """call(*args), or None when Nova says the thing is gone."""
        try:
            return call(*args)
        except Exception as exc:
            if getattr(exc, "code", None) == 404:
                return None
            raise

    @contextlib.contextmanager
    def _guest_batch(self, host, workload=None):
        """Yield (created servers list, placement kwargs); on the way out
        delete every server put in the list and the affinity group, also
        when a boot or a wait failed half way. A step that fails after it
        created guests and before their rows (a boot that never ended, the
        API or nova-compute gone) still leaves a row for each created
        client: lost, with the error, counted invalid by the SLA and
        `kvmtune report` (never averaged)."""
        created, group = [], None
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

    def _chart_lost(self, created, exc, workload):
        reason = (f"lost: the step failed before its verdict "
                  f"({type(exc).__name__}: {exc})").splitlines()[0][:300]
        rows = [self._lost_read(result_rows.failed(
            s.id, getattr(s, "kvmtune_role", "client"),
            result_rows.NO_RESULT, reason, workload)) for s in created]
        try:
            self._add_charts(rows)
        except Exception:       # the error being raised says more
            LOG.exception("kvmtune: could not chart the lost guests")

    def _lost_read(self, row):
        """``row``, its reason saying so when the guest's console could
        not be read at the last attempt."""
        reason = self._lost_reads.get(row.instance)
        if reason and not row.ok:
            row = dataclasses.replace(
                row, reason=f"{row.reason}; its console could not be "
                            f"read: {reason}")
        return row

    def _add_charts(self, rows):
        """Rally output of one iteration: trends across the sweep's steps
        (additive, one point per iteration) and this step's guests.

        Throughput: the per-VM mean and the aggregate (sum), as the report
        computes them (kvmtune.report.analysis.point). Latency is never
        summed (a sum of different guests' latencies means nothing): the
        mean of the guests' means and the worst guest's p99, or its max
        where the tool gives no p99 (sysbench). Rally's charts print MiB/s
        and microseconds; the per-VM table keeps the Rows' own units.
        """
        self._charted = True
        cl = results_rally.measuring(rows)
        ok = [r for r in cl if r.ok]
        emulated = any(r.emulated for r in ok)
        tag = " (emulated: QEMU TCG)" if emulated else ""
        axis = "Sweep step (iteration)"
        metrics = [m for m in self._chart_metrics
                   if any(r.figure(m[0]) is not None for r in ok)]
        for key, unit, scale in metrics or self._chart_metrics[:1]:
            step = analysis.point(len(cl), [cl], key)
            self.add_output(additive={
                "title": f"{unit} by VM count{tag}",
                "description": f"Per-VM mean and aggregate {unit} at "
                               f"{len(cl)} VMs; 0 means no valid guest",
                "chart_plugin": "Lines", "axis_label": axis, "label": unit,
                "data": [[f"per-VM {unit}", (step.per_vm or 0.0) * scale],
                         [f"aggregate {unit}",
                          (step.aggregate or 0.0) * scale]]})
            self.add_output(complete={
                "title": f"{unit} per VM at {len(cl)} VMs{tag}",
                "chart_plugin": "StackedArea", "axis_label": "VM",
                "label": unit,
                "data": [[f"{unit}",
                          [[i, (r.figure(key) or 0.0) * scale if r.ok
                            else 0.0]
                           for i, r in enumerate(cl, 1)]]]})
        self._add_latency_charts(cl, ok, tag, axis)
        self.add_output(additive={
            "title": "Guests with a valid result",
            "chart_plugin": "StackedArea", "axis_label": axis,
            "label": "guests",
            "data": [["valid", len(ok)], ["no valid result",
                                          len(cl) - len(ok)]]})
        self.add_output(complete=results_rally.table_output(rows, emulated))

    def _add_latency_charts(self, cl, ok, tag, axis):
        """Latency across guests (us): mean of means, worst guest's tail."""
        tail, name = next(
            ((k, n) for k, n in analysis.TAILS
             if any(r.figure(k) is not None for r in ok)), (None, None))
        step = analysis.point(len(cl), [cl], None, tail)
        if step.lat_mean_ns is None:
            return
        data = [["mean of the guests' mean latency",
                 step.lat_mean_ns / 1000.0]]
        if step.lat_tail_ns is not None:
            data.append([f"worst guest's {name} latency",
                         step.lat_tail_ns / 1000.0])
        self.add_output(additive={
            "title": f"latency across guests (us) by VM count{tag}",
            "description": "Mean of the guests' mean latencies and the "
                           f"highest guest {name or 'tail'}; never summed",
            "chart_plugin": "Lines", "axis_label": axis, "label": "us",
            "data": data})
        per_vm = [["mean latency (us)",
                   [[i, (r.lat_ns.mean or 0.0) / 1000.0 if r.ok else 0.0]
                    for i, r in enumerate(cl, 1)]]]
        if tail:
            per_vm.append([f"{name} latency (us)",
                           [[i, (r.figure(tail) or 0.0) / 1000.0
                             if r.ok else 0.0]
                            for i, r in enumerate(cl, 1)]])
        self.add_output(complete={
            "title": f"latency per VM at {len(cl)} VMs{tag}",
            "chart_plugin": "Lines", "axis_label": "VM", "label": "us",
            "data": per_vm})

    def _fail_on_bad_guests(self, rows):
        cl = results_rally.measuring(rows)
        bad = [r for r in cl if not r.ok]
        if bad:
            raise GuestResultsMissing(
                count=len(bad), total=len(cl),
                which="; ".join(f"{r.instance}: {r.status}: {r.reason}"
                                for r in bad))
