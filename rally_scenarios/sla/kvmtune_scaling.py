"""SLA of a scaling sweep: per-VM throughput may shrink only so far."""

from rally import consts
from rally.task import sla

from kvmtune.errors import KvmtuneError
from kvmtune import report
from kvmtune.report import vmtable


@sla.configure(name="kvmtune_scaling")
class KvmtuneScaling(sla.SLA):
    """Per-VM throughput at N VMs >= min_share of the 1-VM figure.

    With ``baseline`` (a file written by ``kvmtune baseline``) the
    reference is the bare-metal figure instead of one VM's. Any guest that
    returned no valid result (late, error, nothing on its console, a frame
    that fails verification) fails the SLA, naming the instance and why.
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

    def __init__(self, criterion_value):
        super().__init__(criterion_value)
        self.min_share = criterion_value["min_share"]
        self.baseline_path = criterion_value.get("baseline")
        self.per_vm = {}        # VM count -> [per-VM mean of an iteration]
        self.bad_guests = []    # "instance (N VMs): status: reason"
        self.metric = None
        self.workload = None
        self.reference = None
        self.problem = None     # why no reference could be had
        self.judged = 0         # iterations that left guest results

    def add_iteration(self, iteration):
        rows = vmtable.rows_as_dicts(iteration.get("output"))
        if rows is not None:
            self.judged += 1
            rows = vmtable.clients(rows)
            self._add_rows(len(rows), rows)
        return self._check()

    def _add_rows(self, vms, rows):
        for r in rows:
            if r["status"] != vmtable.OK:
                self.bad_guests.append(
                    f"{r['instance']} ({vms} VMs): {r['status']}: "
                    f"{r['reason']}")
        found = vmtable.throughput_key(rows)
        if found:
            self.metric = self.metric or found
            self.workload = self.workload or next(
                r["workload"] for r in rows if r["status"] == vmtable.OK)
            key = self.metric[0]
            good = [r[key] for r in rows
                    if r["status"] == vmtable.OK and r.get(key) is not None]
            if good:
                self.per_vm.setdefault(vms, []).append(sum(good) / len(good))

    def _reference(self):
        if self.baseline_path:
            if self.reference is None and self.problem is None \
                    and self.metric:
                try:
                    self.reference = report.bare_metal_figure(
                        report.load_baseline(self.baseline_path),
                        self.workload, self.metric[0], self.baseline_path)
                except KvmtuneError as exc:
                    self.problem = exc.line()
            return self.reference, "bare metal"
        one = self.per_vm.get(1)
        return (sum(one) / len(one) if one else None), "1 VM"

    def _shortfalls(self):
        reference, against = self._reference()
        if not reference:
            return []
        out = []
        for vms in sorted(self.per_vm):
            share = (sum(self.per_vm[vms]) / len(self.per_vm[vms])
                     / reference)
            if share < self.min_share:
                out.append(f"per-VM {self.metric[1]} at {vms} VMs is "
                           f"{share:.0%} of {against} "
                           f"(< {self.min_share:.0%})")
        return out

    def _check(self):
        short = self._shortfalls()   # also finds the reference's problem
        self.success = bool(self.judged) and not (
            short or self.bad_guests or self.problem)
        return self.success

    def merge(self, other):
        for vms, values in other.per_vm.items():
            self.per_vm.setdefault(vms, []).extend(values)
        self.bad_guests.extend(other.bad_guests)
        self.judged += other.judged
        self.metric = self.metric or other.metric
        self.workload = self.workload or other.workload
        return self._check()

    def details(self):
        reasons = self._shortfalls()
        if self.problem:
            reasons.append(f"no bare-metal reference: {self.problem}")
        if self.bad_guests:
            reasons.append("no valid result from "
                           + "; ".join(self.bad_guests))
        if not self.judged:
            reasons.append("no iteration left guest results to judge (its "
                           "errors say why)")
        if not reasons:
            _, against = self._reference()
            return (f"per-VM throughput >= {self.min_share:.0%} of "
                    f"{against} at every VM count - {self.status()}")
        return " | ".join(reasons) + f" - {self.status()}"
