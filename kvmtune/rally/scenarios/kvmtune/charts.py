"""Rally's output of a scaling step (the charts on Rally's page and the
per-VM table the SLA and ``kvmtune report`` read): a mixin of
KvmTuneScenario (utils.py), which sets ``_chart_metrics`` per scenario."""

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any
from typing import ClassVar
from typing import Protocol

from kvmtune.results import analysis
from kvmtune.results import rally as results_rally
from kvmtune.results.row import Row
from kvmtune.results import units

BUDGET_TITLE = "kvmtune step time budget"


class _AddOutput(Protocol):
    """Rally's Scenario.add_output: one chart or table (its plugin's
    dict) added to the iteration's output."""

    def __call__(self, additive: dict[str, Any] | None = None,
                 complete: dict[str, Any] | None = None) -> None: ...


class ScenarioCharts:
    """Charts and tables of one iteration (Rally's add_output)."""

    # Given by the scenario class this is mixed into (KvmTuneScenario:
    # Rally's Scenario; the scenarios set the metrics); declared only, so
    # the class attributes stay theirs. A metric: (Row column, unit
    # printed, scale to it).
    add_output: _AddOutput
    _chart_metrics: ClassVar[tuple[tuple[str, str, float], ...]]
    _charted: bool

    def _add_budget(self, vms: int, created_at: float, active_at: float,
                    ready_at: Mapping[str, float], sent: Mapping[str, float],
                    rows: Sequence[Row]) -> None:
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

    def _add_charts(self, rows: Sequence[Row]) -> None:
        """Rally output of one iteration: trends across the sweep's steps
        (additive, one point per iteration) and this step's guests.

        Throughput: the per-VM mean and the aggregate (sum), as the report
        computes them (kvmtune.results.analysis.point). Latency is never
        summed (a sum of different guests' latencies means nothing): the
        mean of the guests' means and the worst guest's p99, or its max
        where the tool gives no p99 (sysbench). Rally's charts print MiB/s
        and microseconds; the per-VM table keeps the Rows' own units.
        """
        self._charted = True
        cl = results_rally.measuring(rows)
        ok = [r for r in cl if r.ok]
        emulated = any(r.emulated for r in ok)
        tag = f" ({units.EMULATED})" if emulated else ""
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

    def _add_latency_charts(self, cl: Sequence[Row], ok: Sequence[Row],
                            tag: str, axis: str) -> None:
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
