"""Rally for the main job: an existing@openstack environment made from the
cloud's credentials (never printed), the disk scaling task's arguments,
and the sweep with its JSON and HTML reports and SLA check. Rally's
database and "current" env stay in the job's state directory."""
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
import importlib.resources
import json
import logging
import os
import re
import subprocess
import threading
import time
from typing import Any
from typing import cast
from typing import IO
from typing import TYPE_CHECKING

from kvmtune.errors import CloudError
from kvmtune.errors import InputError
from kvmtune import fileio
from kvmtune.mainjob import rallyenv
from kvmtune.mainjob import steps
from kvmtune import venvs

if TYPE_CHECKING:
    from concurrent.futures import Future
    from importlib.abc import Traversable

    from kvmtune.results.records import Record

# The task files are package data of the Rally plugins' package, installed
# beside them (pbr puts every git-tracked file in the wheel).
TASKS_PACKAGE = 'kvmtune.rally'
TASKS_DIR = 'tasks'
TASK_SUFFIX = '.yaml'

_UUID = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                   r'[0-9a-f]{12}')


def _tasks_dir() -> 'Traversable':
    return importlib.resources.files(TASKS_PACKAGE).joinpath(TASKS_DIR)


def task_names() -> list[str]:
    """Names of the installed task files (disk-scaling, ...)."""
    return sorted(entry.name[:-len(TASK_SUFFIX)]
                  for entry in _tasks_dir().iterdir()
                  if entry.name.endswith(TASK_SUFFIX))


def task_path(name: str) -> str:
    """The installed task file's path, from its name (or file name)."""
    if name.endswith(TASK_SUFFIX):
        name = name[:-len(TASK_SUFFIX)]
    names = task_names()
    if name not in names:
        raise InputError(f'no Rally task named {name!r}', key='TASK',
                         source=str(_tasks_dir()),
                         fix=f'one of: {", ".join(names)}')
    # an installed package's file: a path on disk
    return os.fspath(cast('os.PathLike[str]',
                          _tasks_dir().joinpath(name + TASK_SUFFIX)))


def task_args(max_vms: int, workload: str, flavors: list[str], image: str,
              baseline: str | None = None, emulated: bool = False,
              runtime: int | None = None,
              flavor_max_vms: Mapping[str, int] | None = None,
              records: 'Mapping[str, Record] | None' = None
              ) -> dict[str, Any]:
    """The disk scaling task's arguments; flavor_max_vms: {flavor: its
    largest VM count} for flavors of which fewer than max_vms fit;
    records: {flavor: its result record} (kvmtune.results.records)."""
    args: dict[str, Any] = {
        'max_vms': max_vms, 'workload': workload, 'flavors': flavors,
        'image_name': image, 'emulated': emulated}
    if runtime:
        args['runtime'] = runtime
    if flavor_max_vms:
        args['flavor_max_vms'] = dict(flavor_max_vms)
    if baseline:
        args['baseline'] = os.path.abspath(baseline)
    if records:
        args['records'] = dict(records)
    return args


class Rally:
    """Rally with its database and globals kept in one directory."""

    def __init__(self, state_dir: str) -> None:
        self.dir = os.path.join(state_dir, 'rally')
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        self.conf = os.path.join(self.dir, 'rally.conf')
        # raw_result_chunk_size 1: Rally writes each iteration to its
        # database when it ends (1000 by default: at the workload's end),
        # where the job follows the sweep through Rally's API (Progress)
        fileio.write_atomic(self.conf, '[DEFAULT]\nraw_result_chunk_size = 1'
                            '\n[database]\nconnection = sqlite:///'
                            + os.path.join(self.dir, 'rally.sqlite') + '\n')
        # Rally keeps the "current" env and task under ~/.rally; its
        # bytecode is written as it imports (kvmtune.venvs.program_env)
        self.env = venvs.program_env()
        self.env['HOME'] = self.dir

    def __call__(self, *args: str, capture: bool = False) -> str | None:
        return steps.run([steps.bin_path('rally'), '--config-file',
                          self.conf, *args], env=self.env, capture=capture)

    def use_cloud(self, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        """Its database and the environment ``name`` for ``spec``, the
        current one, checked (what `kvmtune rally env` does for plain
        rally: kvmtune.mainjob.rallyenv); that module's result."""
        command = rallyenv.RallyCommand(
            config_file=self.conf, home=self.dir,
            rally=steps.bin_path('rally'), log=steps.detail)
        done = rallyenv.use(command, name, spec)
        steps.detail(f'rally env {name}: {done["environment"]} from cloud '
                     'credentials (not shown)')
        return done

    def use_cloud_beside(self, name: str, spec: dict[str, Any]
                         ) -> 'Future[dict[str, Any]]':
        """use_cloud() in a thread of its own (five rally programs, about
        20 s, mostly starting Python), so that the job's next steps (the
        image upload, flavors, compute tuning) run meanwhile; the
        future's result is use_cloud()'s, with the seconds it took under
        'seconds'; result() re-raises what it raised."""
        from concurrent.futures import ThreadPoolExecutor

        def timed() -> dict[str, Any]:
            started = time.monotonic()
            done = self.use_cloud(name, spec)
            return dict(done, seconds=time.monotonic() - started)

        pool = ThreadPoolExecutor(max_workers=1,
                                  thread_name_prefix='rally-env')
        future = pool.submit(timed)
        pool.shutdown(wait=False)
        return future

    def start_task(self, task: str, args: Mapping[str, Any],
                   progress: 'Progress | None' = None) -> str:
        """Run the task, its output to the job's log; its UUID. Rally
        exits non-zero when an iteration failed: the report still
        follows. progress (a Progress) follows the task in Rally's
        database through its Python API (``follow``) while it runs."""
        argv = [steps.bin_path('rally'), '--config-file', self.conf, 'task',
                'start', task, '--task-args', json.dumps(args)]
        steps.detail('$ ' + ' '.join(argv))
        uuid: str | None = None
        stop = threading.Event()
        follower: threading.Thread | None = None
        try:
            with subprocess.Popen(argv, env=self.env, text=True,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT) as proc:
                for line in cast(IO[str], proc.stdout):
                    steps.OUT.detail(line)
                    # the CLI's answer names the task it started
                    found = _UUID.search(line) if uuid is None else None
                    if found and 'Task' in line:
                        uuid = found.group(0)
                        if progress:
                            follower = threading.Thread(
                                target=follow, daemon=True,
                                args=(self.conf, uuid, progress, stop))
                            follower.start()
        finally:
            stop.set()
            if follower:
                follower.join()
        if progress:
            progress.finish()
        if uuid is None:
            raise CloudError(f'rally exited {proc.returncode} before it '
                             'started a task', source=task,
                             fix=f'see {steps.OUT.log_path}')
        return uuid

    def sweep(self, task: str, args: Mapping[str, Any], out_json: str,
              out_html: str, progress: 'Progress | None' = None
              ) -> tuple[str, bool]:
        """(uuid, SLA met); the failed SLA lines are in sla_failures.
        After the task, Rally's Python API in this process (as ``follow``)
        reads it once and writes both reports with its own exporters
        (what `rally task report --json` and `--html-static` run): three
        more rally programs cost 1.7-4 s each to start (the main job's
        log, 2026-11-28)."""
        uuid = self.start_task(task, args, progress)
        return uuid, self.reports(uuid, task, out_json, out_html)

    def reports(self, uuid: str, task: str, out_json: str, out_html: str
                ) -> bool:
        """Task ``uuid``'s JSON and static HTML reports; whether its SLA
        was met (sweep())."""
        api = rally_api(self.conf)
        done = api.task.get(task_id=uuid, detailed=True)
        state = done.get('status')
        steps.detail(f'rally API: task {uuid} {state}')
        if state not in ('finished', 'aborted'):
            raise CloudError(f'rally task {uuid} ended {state}: no sweep '
                             'ran', source=task,
                             fix=f'rally task detailed {uuid} shows why')
        for output_type, path in (('json', out_json),
                                  ('html-static', out_html)):
            report = api.task.export(tasks=[done], output_type=output_type,
                                     output_dest=path)
            for dest, text in report.get('files', {}).items():
                fileio.write_atomic(os.path.expanduser(dest),
                                    text.encode('utf-8'))
            steps.detail(f'rally API: {output_type} report {path}')
        # the SLA's verdict is its failed criteria: none, met (what
        # `rally task sla-check` says by its exit status)
        self.sla_failures = sla_failures(out_json)
        return not self.sla_failures


# Rally's own exporter plugins of the two reports, imported alone (its CLI
# loads every plugin of every package first: rally.plugins.load)
EXPORTERS = ('rally.plugins.task.exporters.json_exporter',
             'rally.plugins.task.exporters.html')


def rally_api(conf: str) -> Any:
    """Rally's Python API (kvmtune[bench]'s Rally) on the job's
    database, with its JSON and HTML exporters; imported by name: mypy
    runs without the extras."""
    for name in EXPORTERS:
        importlib.import_module(name)
    api = importlib.import_module('rally.api').API(config_file=conf)
    # the API logs through the stderr handler it sets up (oslo.log,
    # use_stderr): its INFO lines ("Building 'json' report ...") would
    # reach the job's screen; the job logs its own line for each report
    logging.getLogger('rally.api').setLevel(logging.WARNING)
    return api


DETAIL_WIDTH = 150


def sla_failures(report_json: str) -> list[str]:
    """The failed SLA criteria in a task's `rally task report --json`
    file, one short line each: "<subtask title>: <criterion>: <detail>"
    (the disk task's titles name the flavor)."""
    from kvmtune import inputs

    failed: list[str] = []
    for task in inputs.load_json(report_json).get('tasks', []):
        for subtask in task.get('subtasks', []):
            for workload in subtask.get('workloads', []):
                for sla in workload.get('sla_results', {}).get('sla', []):
                    if sla.get('success'):
                        continue
                    detail = str(sla.get('detail', ''))
                    detail = detail.removesuffix(' - Failed')
                    if len(detail) > DETAIL_WIDTH:
                        detail = detail[:DETAIL_WIDTH - 3] + '...'
                    failed.append(f'{subtask.get("title")}: '
                                  f'{sla.get("criterion")}: {detail}')
    return failed


FOLLOW_POLL = 2.0


def follow(conf: str, uuid: str, progress: 'Progress',
           stop: threading.Event, poll: float = FOLLOW_POLL) -> None:
    """Hand ``progress`` Rally's record of task ``uuid`` (its Python API,
    ``rally.api.API(...).task.get(uuid, detailed=True)``) every ``poll``
    seconds until ``stop`` is set, and once more then. A read that fails
    (the database busy while Rally writes) is tried again next time."""
    try:
        api = rally_api(conf)
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


def vm_counts(max_vms: int, flavors: Iterable[str],
              flavor_max_vms: Mapping[str, int] | None = None
              ) -> dict[str, list[int]]:
    """{flavor: the VM counts its sweep runs}, as the task file makes
    them (step 1)."""
    limits = flavor_max_vms or {}
    return {f: list(range(1, min(max_vms, limits.get(f, max_vms)) + 1))
            for f in flavors}
