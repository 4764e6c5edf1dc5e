"""Rally for the main job: an existing@openstack environment made from the
cloud's credentials (never printed), the disk scaling task's arguments,
and the sweep with its JSON and HTML reports and SLA check. Rally's
database and "current" env stay in the job's state directory."""
from collections.abc import Iterable
from collections.abc import Mapping
import importlib.resources
import json
import os
import re
import subprocess
import sys
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
from kvmtune.mainjob import rallyprogress
from kvmtune.mainjob import rallyreports
from kvmtune.mainjob import steps

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
        # where the job follows the sweep through Rally's API
        # (rallyprogress)
        fileio.write_atomic(self.conf, '[DEFAULT]\nraw_result_chunk_size = 1'
                            '\n[database]\nconnection = sqlite:///'
                            + os.path.join(self.dir, 'rally.sqlite') + '\n')
        # Rally keeps the "current" env and task under ~/.rally (HOME);
        # every rally program and Rally's API process run with the
        # command's environment (kvmtune.venvs.program_env)
        self.command = rallyenv.RallyCommand(
            config_file=self.conf, home=self.dir,
            rally=steps.bin_path('rally'), log=steps.detail)
        self.env = self.command.env

    def use_cloud(self, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        """Its database and the environment ``name`` for ``spec``, the
        current one, checked (what `kvmtune rally env` does for plain
        rally: kvmtune.mainjob.rallyenv); that module's result."""
        done = rallyenv.use(self.command, name, spec)
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
        def timed() -> dict[str, Any]:
            started = time.monotonic()
            done = self.use_cloud(name, spec)
            return dict(done, seconds=time.monotonic() - started)

        return steps.beside('rally-env', timed)

    def start_task(self, task: str, args: Mapping[str, Any],
                   progress: 'rallyprogress.Progress | None' = None,
                   args_file: str | None = None) -> str:
        """Run the task, its output to the job's log; its UUID.
        args_file: a --task-args-file (rally_scenarios/args/*.yaml) under
        ``args``, which Rally merges over it. Rally
        exits non-zero when an iteration failed: the report still
        follows. progress (a rallyprogress.Progress) follows the task in
        Rally's database through its Python API (``rallyprogress.follow``)
        while it runs."""
        argv = [steps.bin_path('rally'), '--config-file', self.conf, 'task',
                'start', task, '--task-args', json.dumps(args)]
        if args_file:
            argv += ['--task-args-file', args_file]
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
                                target=rallyprogress.follow, daemon=True,
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
              out_html: str, progress: 'rallyprogress.Progress | None' = None,
              args_file: str | None = None) -> tuple[str, bool]:
        """(uuid, SLA met); the failed SLA lines are in sla_failures."""
        uuid = self.start_task(task, args, progress, args_file)
        return uuid, self.reports(uuid, task, out_json, out_html)

    def reports(self, uuid: str, task: str, out_json: str, out_html: str
                ) -> bool:
        """Task ``uuid``'s JSON and static HTML reports, by one process
        (kvmtune.mainjob.rallyreports); whether its SLA was met."""
        argv = [sys.executable, '-m', 'kvmtune.mainjob.rallyreports',
                self.conf, uuid, out_json, out_html]
        steps.detail('$ ' + ' '.join(argv))
        done = subprocess.run(argv, env=self.env, text=True,
                              capture_output=True, cwd=self.dir)
        steps.OUT.detail(done.stderr)
        lines = done.stdout.split()
        if done.returncode or not lines:
            why = (done.stderr.strip().splitlines() or ['?'])[-1]
            raise CloudError(f'rally task {uuid}: no reports ({why})',
                             source=task, fix=f'see {steps.OUT.log_path}')
        state = lines[-1]
        steps.detail(f'rally task {uuid} {state}: reports {out_json}, '
                     f'{out_html}')
        if state not in rallyreports.ENDED:
            raise CloudError(f'rally task {uuid} ended {state}: no sweep '
                             'ran', source=task,
                             fix=f'rally task detailed {uuid} shows why')
        # the SLA's verdict is its failed criteria: none, met (what
        # `rally task sla-check` says by its exit status)
        self.sla_failures = sla_failures(out_json)
        return not self.sla_failures


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


def vm_counts(max_vms: int, flavors: Iterable[str],
              flavor_max_vms: Mapping[str, int] | None = None
              ) -> dict[str, list[int]]:
    """{flavor: the VM counts its sweep runs}, as the task file makes
    them (step 1)."""
    limits = flavor_max_vms or {}
    return {f: list(range(1, min(max_vms, limits.get(f, max_vms)) + 1))
            for f in flavors}
