"""Rally for the main job: an existing@openstack environment made from the
cloud's credentials (never printed), the disk scaling task's arguments,
and the sweep with its JSON and HTML reports and SLA check. Rally's
database and "current" env stay in the job's state directory."""
import importlib.resources
import json
import os
import re
import subprocess

from kvmtune import fileio
from kvmtune.errors import CloudError
from kvmtune.errors import InputError
from kvmtune.mainjob import rallyenv
from kvmtune.mainjob import steps

# the environment spec from a cloud: rallyenv has it (`kvmtune rally env`)
rally_spec = rallyenv.rally_spec

# The task files are package data of the Rally plugins' package, installed
# beside them (pbr puts every git-tracked file in the wheel).
TASKS_PACKAGE = 'rally_scenarios'
TASKS_DIR = 'tasks'
TASK_SUFFIX = '.yaml'

_UUID = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                   r'[0-9a-f]{12}')


def _tasks_dir():
    return importlib.resources.files(TASKS_PACKAGE).joinpath(TASKS_DIR)


def task_names():
    """Names of the installed task files (disk-scaling, ...)."""
    return sorted(entry.name[:-len(TASK_SUFFIX)]
                  for entry in _tasks_dir().iterdir()
                  if entry.name.endswith(TASK_SUFFIX))


def task_path(name):
    """The installed task file's path, from its name (or file name)."""
    if name.endswith(TASK_SUFFIX):
        name = name[:-len(TASK_SUFFIX)]
    names = task_names()
    if name not in names:
        raise InputError(f'no Rally task named {name!r}', key='TASK',
                         source=str(_tasks_dir()),
                         fix=f'one of: {", ".join(names)}')
    return os.fspath(_tasks_dir().joinpath(name + TASK_SUFFIX))


def task_args(max_vms, workload, flavors, image, baseline=None,
              emulated=False, runtime=None, flavor_max_vms=None,
              records=None):
    """The disk scaling task's arguments; flavor_max_vms: {flavor: its
    largest VM count} for flavors of which fewer than max_vms fit;
    records: {flavor: its result record} (kvmtune.results.records)."""
    args = {'max_vms': max_vms, 'workload': workload, 'flavors': flavors,
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

    def __init__(self, state_dir):
        self.dir = os.path.join(state_dir, 'rally')
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        self.conf = os.path.join(self.dir, 'rally.conf')
        fileio.write_atomic(self.conf, '[database]\nconnection = sqlite:///'
                            + os.path.join(self.dir, 'rally.sqlite') + '\n')
        # Rally keeps the "current" env and task under ~/.rally
        self.env = dict(os.environ, HOME=self.dir)

    def __call__(self, *args, capture=False):
        return steps.run([steps.bin_path('rally'), '--config-file',
                          self.conf, *args], env=self.env, capture=capture)

    def use_cloud(self, name, spec):
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

    def start_task(self, task, args, progress=None):
        """Run the task, its output to the job's log; its UUID. Rally
        exits non-zero when an iteration failed: the report still
        follows. progress (a Progress) hears of each line."""
        argv = [steps.bin_path('rally'), '--config-file', self.conf, 'task',
                'start', task, '--task-args', json.dumps(args)]
        steps.detail('$ ' + ' '.join(argv))
        uuid = None
        with subprocess.Popen(argv, env=self.env, text=True,
                              stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT) as proc:
            for line in proc.stdout:
                steps.OUT.detail(line)
                found = _UUID.search(line) if uuid is None else None
                if found and 'Task' in line:
                    uuid = found.group(0)
                if progress:
                    progress.line(line)
        if progress:
            progress.finish()
        if uuid is None:
            raise CloudError(f'rally exited {proc.returncode} before it '
                             'started a task', source=task,
                             fix=f'see {steps.OUT.log_path}')
        return uuid

    def sweep(self, task, args, out_json, out_html, progress=None):
        """(uuid, SLA met); the failed SLA lines are in sla_failures."""
        uuid = self.start_task(task, args, progress)
        state = self('task', 'status', uuid, capture=True).split()[-1]
        if state not in ('finished', 'aborted'):
            raise CloudError(f'rally task {uuid} ended {state}: no sweep '
                             'ran', source=task,
                             fix=f'rally task detailed {uuid} shows why')
        self('task', 'report', uuid, '--json', '--out', out_json)
        self('task', 'report', uuid, '--html-static', '--out', out_html)
        proc = subprocess.run([steps.bin_path('rally'), '--config-file',
                               self.conf, 'task', 'sla-check', uuid,
                               '--json'], env=self.env, text=True,
                              stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
        steps.OUT.detail(proc.stdout)
        self.sla_failures = sla_failures(out_json)
        return uuid, proc.returncode == 0


DETAIL_WIDTH = 150


def sla_failures(report_json):
    """The failed SLA criteria in a task's `rally task report --json`
    file, one short line each: "<subtask title>: <criterion>: <detail>"
    (the disk task's titles name the flavor)."""
    from kvmtune import inputs

    failed = []
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


class Progress:
    """The sweep's progress line from Rally's log lines: which flavor and
    VM count run, and how many guests reported of how many expected.

    Rally's engine logs "Running workload:" and the workload's config as
    JSON (rally/task/engine.py ``_run_workload``) when a subtask starts;
    the flavor is the first ``"name"`` in it that is one of the sweep's
    flavors (its "position" is the workload's place in its subtask, 0 for
    every subtask of these tasks). Rally's runner logs "ITER: i START" for
    iteration i (the i-th VM count), and the scenarios log "kvmtune: guests
    ready|reported k/n". On a terminal the line is rewritten in place;
    otherwise one line per finished iteration goes out.
    """

    _WORKLOAD = re.compile(r'Running workload:')
    _NAME = re.compile(r'^\s*"name": "([^"]*)"')
    _ITER = re.compile(r'ITER: (\d+) (START|END)')
    _GUESTS = re.compile(r'kvmtune: guests (ready|reported) (\d+)/(\d+)')

    def __init__(self, flavors, counts, show=None, tty=None):
        self.flavors = list(flavors)
        self.counts = counts        # {flavor: [VM counts]}
        self.show = show or steps.say
        self.tty = steps.OUT.isatty() if tty is None else tty
        self.flavor = None
        self.vms = None
        self.guests = None
        self.started = None
        self.shown = False
        self.naming = False     # in a workload's config, before its flavor

    def text(self):
        import time

        guests = (f', guests {self.guests[0]} {self.guests[1]}/'
                  f'{self.guests[2]}' if self.guests else '')
        took = steps.elapsed_label(time.monotonic() - self.started)
        return (f'sweep: {self.flavor}, {self.vms} VM(s){guests} '
                f'({took})')

    def line(self, line):
        import time

        if self._WORKLOAD.search(line):
            self.flavor, self.naming = None, True
            return
        if self.naming:
            m = self._NAME.search(line)
            if m and m.group(1) in self.flavors:
                self.flavor, self.naming = m.group(1), False
            elif line.startswith('}'):      # the config's end: no flavor
                self.naming = False
            return
        if (m := self._ITER.search(line)) and self.flavor:
            i = int(m.group(1))
            counts = self.counts.get(self.flavor) or []
            if m.group(2) == 'START':
                self.vms = counts[i - 1] if i <= len(counts) else '?'
                self.guests, self.started = None, time.monotonic()
            elif self.started is not None:
                self._update(final=True)
                return
        elif (m := self._GUESTS.search(line)) and self.started:
            self.guests = (m.group(1), int(m.group(2)), int(m.group(3)))
        else:
            return
        if self.tty and self.started is not None:
            self._update()

    def _update(self, final=False):
        if self.tty:
            steps.OUT.show('\r\033[K' + steps.PREFIX + self.text()
                           + ('\n' if final else ''))
            self.shown = not final
            if final:
                steps.OUT.to_log(steps.PREFIX + self.text() + '\n')
        elif final:
            self.show(self.text())

    def finish(self):
        if self.shown:
            steps.OUT.show('\n')
            self.shown = False


def vm_counts(max_vms, flavors, flavor_max_vms=None):
    """{flavor: the VM counts its sweep runs}, as the task file makes
    them (step 1)."""
    limits = flavor_max_vms or {}
    return {f: list(range(1, min(max_vms, limits.get(f, max_vms)) + 1))
            for f in flavors}
