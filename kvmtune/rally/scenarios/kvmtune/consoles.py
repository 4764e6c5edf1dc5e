"""Reading the guests of a scaling step through Nova's console API: every
guest's ready line, the start signal (Nova's crash dump trigger), the
verdicts; a console the API cannot read is tried again until the step's
own deadline. A mixin of KvmTuneScenario (utils.py)."""

from collections.abc import Callable
from collections.abc import Sequence
import concurrent.futures as futures
import time
from typing import Any
from typing import TypeAlias
from typing import TypeVar

from rally.common import logging
from rally.task import atomic

from kvmtune.rally.scenarios.kvmtune import guests

LOG = logging.getLogger(__name__)

CONSOLE_POLL_INTERVAL = 5
# While guests boot and once their run is due: a step ends within this of
# its last verdict (the console API is cheap next to a TCG boot).
SIGNAL_POLL_INTERVAL = 2
# Threads reading consoles in one polling round.
CONSOLE_READERS = 5

# A novaclient Server (id, name, status, addresses): novaclient, like
# Rally, has no type information, so its objects are Any to mypy.
Server: TypeAlias = Any
# {server id: its last console log, None when Nova gave none}
Logs: TypeAlias = dict[str, str | None]
_T = TypeVar("_T")
_F = TypeVar("_F", bound=Callable[..., Any])


def action_timer(name: str) -> Callable[[_F], _F]:
    """Rally's atomic.action_timer (untyped to mypy), which keeps the
    signature of the method it times."""
    timer: Callable[[_F], _F] = atomic.action_timer(name)
    return timer


class _Unreadable:
    """A console that could not be read this round (the API or the
    guest's nova-compute did not answer); the step goes on until its own
    deadline, and a guest never read again is counted invalid."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


class GuestConsoles:
    """The console reads of a step; ``_lost_reads`` ({server id: why its
    console could not be read}) is the scenario's (utils._guest_batch)."""

    # Given by the scenario class this is mixed into (KvmTuneScenario:
    # Rally's Scenario and NovaScenario, utils._guest_batch); declared
    # only, so the class attributes stay the scenario's.
    _lost_reads: dict[str, str]
    clients: Callable[[str], Any]
    sleep_between: Callable[[float], None]
    _show_server: Callable[[Server], Server]

    def _console(self, server: Server) -> str | _Unreadable | None:
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

    def _unreadable(self, server: Server, exc: Exception) -> _Unreadable:
        code = getattr(exc, "code", None)
        if isinstance(code, int) and code < 500:
            raise exc          # a refusal (403, 409): an answer, not a fault
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
        LOG.warning(f"kvmtune: console of {server.id} unreadable: {reason}")
        return _Unreadable(reason)

    def _stopped(self, server: Server) -> bool | None:
        """Whether Nova says the guest is SHUTOFF; None when it cannot
        say (the API does not answer)."""
        try:
            status: str = self._show_server(server).status
            return status == "SHUTOFF"
        except Exception as exc:
            self._unreadable(server, exc)
            return None

    def _consoles(
            self, servers: Sequence[Server]
    ) -> dict[str, str | _Unreadable | None]:
        """{server id: console log or None} of ``servers``, read at once
        by a few threads: one round costs about one call, not N (a
        10-guest step reads 10 logs per round)."""
        if len(servers) <= 1:
            return {s.id: self._console(s) for s in servers}
        with futures.ThreadPoolExecutor(
                max_workers=min(len(servers), CONSOLE_READERS)) as pool:
            return dict(zip([s.id for s in servers],
                            pool.map(self._console, servers)))

    @action_timer("kvmtune.wait_ready")
    def _wait_ready(self, servers: Sequence[Server],
                    deadline: float) -> tuple[dict[str, float], Logs]:
        """({server id: host time its ready line was first seen}, {server
        id: last console log}) once every guest said ready (a server:
        serving) or gave a verdict, or when the deadline passes."""
        seen: dict[str, float] = {}
        logs: Logs = {}
        pending = list(servers)
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

    @action_timer("kvmtune.start")
    def _start_guests(self, servers: Sequence[Server]) -> dict[str, float]:
        """The start signal: an NMI into each guest (Nova's crash dump
        trigger, API 2.17, a project member's right): {id: host time}."""
        nova = self.clients("nova")

        def signal(server: Server) -> float | None:
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

    def _run_signalled(
            self, active: Sequence[Server], clients: Sequence[Server],
            runtime: float, ready_timeout: float, result_timeout: float
    ) -> tuple[Logs, dict[str, float], dict[str, float]]:
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

    @action_timer("kvmtune.wait_results")
    def _wait_results(self, servers: Sequence[Server], deadline: float,
                      poll: float = CONSOLE_POLL_INTERVAL,
                      first_wait: float = 0) -> Logs:
        """Console log of each server once it printed its verdict, the
        last log seen when the deadline passes, None when it was lost.
        Nothing is read for ``first_wait`` s (the run cannot be over)."""
        if first_wait:
            self.sleep_between(first_wait)
        logs: Logs = {}
        pending = list(servers)
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

    @staticmethod
    def _ignore_404(call: Callable[..., _T], *args: Any) -> _T | None:
        """call(*args), or None when Nova says the thing is gone."""
        try:
            return call(*args)
        except Exception as exc:
            if getattr(exc, "code", None) == 404:
                return None
            raise
