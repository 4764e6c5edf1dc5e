"""The sweep's progress from Rally's own record of the task, read
through Rally's Python API while the task runs (follow): a line per
ended step (flavor, VM count, guests with a valid result, per-VM figure,
as the report reads them), the running step's line rewritten in place on
a terminal (Progress)."""
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
import threading
from typing import Any
from typing import cast

from kvmtune.mainjob import rallyenv
from kvmtune.mainjob import steps

FOLLOW_POLL = 2.0


def follow(conf: str, uuid: str, progress: 'Progress',
           stop: threading.Event, poll: float = FOLLOW_POLL) -> None:
    """Hand ``progress`` Rally's record of task ``uuid`` (its Python API,
    ``rally.api.API(...).task.get(uuid, detailed=True)``) every ``poll``
    seconds until ``stop`` is set, and once more then. A read that fails
    (the database busy while Rally writes) is tried again next time."""
    try:
        api = rallyenv.rally_api(conf)
    except Exception as exc:    # no progress is no reason to stop the job
        steps.detail(f'rally API: no progress line ({exc})')
        return
    while True:
        last = stop.is_set()
        try:
            progress.update(api.task.get(uuid, detailed=True))
        except Exception as exc:
            steps.detail(f'rally API: task {uuid} not read ({exc})')
        if last:
            return
        stop.wait(poll)


class Progress:
    """The sweep's progress from Rally's own record of the task (the
    dict of ``rally.api.API().task.get(uuid, detailed=True)``, see
    ``follow``): which flavor's workload runs (its ``args``) and at how
    many VMs (the next of its VM counts, one iteration each), and for
    every iteration that ended (its ``data``, written when it ends: the
    job's rally.conf sets raw_result_chunk_size 1) the guests with a
    valid result and the per-VM figure, read as the report reads them
    (kvmtune.results.rally, kvmtune.results.analysis). On a terminal the
    running step's line is rewritten in place; every ended step prints
    one line.
    """

    def __init__(self, flavors: Iterable[str],
                 counts: Mapping[str, list[int]],
                 show: Callable[[str], None] | None = None,
                 tty: bool | None = None) -> None:
        self.flavors = list(flavors)
        self.counts = counts        # {flavor: [VM counts]}
        self.show = show or steps.say
        self.tty = steps.OUT.isatty() if tty is None else tty
        self.flavor: str | None = None
        self.vms: int | None = None
        self.started: float | None = None
        self.shown = False
        # workload uuid -> iterations seen
        self.ended: dict[str, int] = {}

    def text(self) -> str:
        import time

        took = steps.elapsed_label(time.monotonic()
                                   - cast(float, self.started))
        return f'sweep: {self.flavor}, {self.vms} VM(s) ({took})'

    def update(self, task: Mapping[str, Any]) -> None:
        """Take Rally's record of the task (detailed, with each
        workload's ``data``)."""
        import time

        from kvmtune.results import rally as rally_results

        running = None
        for subtask in task.get('subtasks') or []:
            for workload in subtask.get('workloads') or []:
                args = workload.get('args') or {}
                flavor = rally_results.name_of(args.get('flavor'))
                if flavor not in self.flavors:
                    continue
                counts = self.counts.get(flavor) or args.get('vm_counts') \
                    or []
                data = workload.get('data') or []
                seen = self.ended.get(workload['uuid'], 0)
                for i, iteration in enumerate(data[seen:], seen):
                    self._ended(flavor, counts[i] if i < len(counts)
                                else '?', iteration)
                self.ended[workload['uuid']] = len(data)
                if subtask.get('status') == 'running' and \
                        len(data) < len(counts):
                    running = (flavor, counts[len(data)])
        if running and running != (self.flavor, self.vms):
            (self.flavor, self.vms), self.started = running, \
                time.monotonic()
        if not running:
            self.flavor = self.vms = None
        if self.tty and self.flavor:
            steps.OUT.show('\r\033[K' + steps.PREFIX + self.text())
            self.shown = True

    def _ended(self, flavor: str, vms: int | str,
               iteration: Mapping[str, Any]) -> None:
        took = (iteration.get('duration') or 0.0) + (
            iteration.get('idle_duration') or 0.0)
        if self.shown:
            steps.OUT.show('\r\033[K')
            self.shown = False
        self.show(f'sweep: {flavor}, {vms} VM(s): {step_result(iteration)} '
                  f'({steps.elapsed_label(took)})')

    def finish(self) -> None:
        if self.shown:
            steps.OUT.show('\n')
            self.shown = False


def step_result(iteration: Mapping[str, Any]) -> str:
    """One sweep step in words, from Rally's record of its iteration: the
    guests with a valid result and their per-VM figure, as the report
    computes it, or why the iteration left no per-VM table."""
    from kvmtune.errors import KvmtuneError
    from kvmtune.report import render
    from kvmtune.results import analysis
    from kvmtune.results import kinds
    from kvmtune.results import rally as rally_results
    from kvmtune.results import run

    try:
        rows = rally_results.rows_of(iteration.get('output'))
    except KvmtuneError as exc:
        return exc.line()
    if rows is None:
        error = ' '.join(': '.join(
            str(e) for e in (iteration.get('error') or [])[:2]).split())
        return f'iteration failed: {error or "no per-VM table"}'
    guests = rally_results.measuring(rows)
    metric, unit, scale = analysis.metric_of(
        [run.Run('step', 'rally', kinds.RALLY, None, {len(guests): [guests]})])
    step = analysis.point(len(guests), [guests], metric)
    figure = (f', per-VM {render.number(step.per_vm, scale)} {unit}'
              if step.per_vm is not None else '')
    return f'guests valid {step.valid}/{step.total}{figure}' if metric \
        else f'guests valid 0/{len(guests)}'
