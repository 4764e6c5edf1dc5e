"""SLA of a scaling sweep: per-VM throughput may shrink only so far."""

from typing import Any

from rally import consts
from rally.task import sla

from kvmtune.errors import KvmtuneError
from kvmtune.results import analysis
from kvmtune.results import kinds
from kvmtune.results import rally as rally_results
from kvmtune.results.row import Row
from kvmtune.results import run as runs


@sla.configure(name="kvmtune_scaling")
class KvmtuneScaling(sla.SLA):
    """Per-VM throughput at N VMs >= min_share of the 1-VM figure.

    With ``baseline`` (a file written by ``kvmtune baseline``) the
    reference is the bare-metal figure instead of one VM's. Any guest that
    returned no valid result (late, error, nothing on its console, a frame
    that fails verification) fails the SLA, naming the instance and why.
    The figures are the report's (kvmtune.results.analysis.analyse).
    """

    CONFIG_SCHEMA = {
        "type": "object",
        "$schema": consts.JSON_SCHEMA7,
        "properties": {
            "min_share": {"type": "number", "exclusiveMinimum": 0.0,
                          "maximum": 1.0},
            "baseline": {"type": ["string", "null"]},
        },
        "required": ["min_share"],
        "additionalProperties": False,
    }

    def __init__(self, criterion_value: dict[str, Any]) -> None:
        super().__init__(criterion_value)
        self.min_share: float = criterion_value["min_share"]
        self.baseline_path: str | None = criterion_value.get("baseline")
        # VM count -> [[Row] of an iteration]
        self.iterations: dict[int, list[list[Row]]] = {}
        self.bad_guests: list[str] = []  # "instance (N VMs): status: reason"
        self.problems: list[str] = []  # why no reference or rows were had
        self.judged = 0         # iterations that left guest results

    def add_iteration(self, iteration: dict[str, Any]) -> bool:
        try:
            rows = rally_results.rows_of(iteration.get("output"))
        except KvmtuneError as exc:
            self.problems.append(f"unreadable per-VM table: {exc.line()}")
            rows = None
        if rows is not None:
            self.judged += 1
            rows = rally_results.measuring(rows)
            self.iterations.setdefault(len(rows), []).append(rows)
            self.bad_guests.extend(
                f"{r.instance} ({len(rows)} VMs): {r.status}: {r.reason}"
                for r in rows if not r.ok)
        return self._check()

    def _analysis(
            self) -> tuple[analysis.Analysis | None, str, str | None]:
        """(Analysis or None, what the shares are of, problem or None)."""
        run = runs.Run("sweep", "(this sweep)", kinds.RALLY, None,
                       self.iterations)
        found = [run]
        against = "1 VM"
        try:
            if self.baseline_path:
                from kvmtune.results import baseline

                found.append(baseline.load(self.baseline_path))
                against = "bare metal"
            return analysis.analyse(found), against, None
        except KvmtuneError as exc:
            return None, against, exc.line()

    def _shortfalls(self) -> tuple[list[str], str, str | None]:
        """(shortfall lines, reference, problem)."""
        an, against, problem = self._analysis()
        if an is None or an.metric is None:
            return [], against, problem
        out = []
        for p in an.points["sweep"]:
            share = p.share if self.baseline_path else p.vs_one
            if share is not None and share < self.min_share:
                out.append(f"per-VM {an.unit} at {p.vms} VMs is "
                           f"{share:.0%} of {against} "
                           f"(< {self.min_share:.0%})")
        return out, against, problem

    def _check(self) -> bool:
        short, _, problem = self._shortfalls()
        self.success = bool(self.judged) and not (
            short or self.bad_guests or problem or self.problems)
        return self.success

    def merge(self, other: "KvmtuneScaling") -> bool:
        for vms, its in other.iterations.items():
            self.iterations.setdefault(vms, []).extend(its)
        self.bad_guests.extend(other.bad_guests)
        self.problems.extend(other.problems)
        self.judged += other.judged
        return self._check()

    def details(self) -> str:
        reasons, against, problem = self._shortfalls()
        if problem:
            reasons.append(f"no bare-metal reference: {problem}"
                           if self.baseline_path else problem)
        reasons.extend(self.problems)
        if self.bad_guests:
            reasons.append("no valid result from "
                           + "; ".join(self.bad_guests))
        if not self.judged:
            reasons.append("no iteration left guest results to judge (its "
                           "errors say why)")
        if not reasons:
            return (f"per-VM throughput >= {self.min_share:.0%} of "
                    f"{against} at every VM count - {self.status()}")
        return " | ".join(reasons) + f" - {self.status()}"
