"""The main job's steps in order (run) on its target (Target: the test
cloud or an operator's cloud), the image, the default and the tuned flavor, the
compute, the Rally sweep, the report and the summary.

`kvmtune main-job` (kvmtune/cmd/main_job.py) parses the options and calls
run() with plain arguments; so do tools/main-job and `python -m
kvmtune.mainjob`, through the same command.
"""
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import dataclasses
import json
import os
from typing import Any
from typing import cast
from typing import Protocol
from typing import TYPE_CHECKING

from kvmtune import errors
from kvmtune.errors import KvmtuneError
from kvmtune import fileio
from kvmtune import image
from kvmtune import mainjob
from kvmtune.mainjob import cloud
from kvmtune.mainjob import rallycloud
from kvmtune.mainjob import rallyprogress
from kvmtune.mainjob import steps
from kvmtune.mainjob import sweep
from kvmtune.mainjob import testcloud
from kvmtune.results import units

if TYPE_CHECKING:
    from concurrent.futures import Future

    from kvmtune.facts.types import Facts
    from kvmtune.openstack.connection import Cloud
    from kvmtune.results.records import Record

LOG_NAME = 'main-job.log'


class Target(Protocol):
    """The cloud the job sweeps on, one of two kinds: the test cloud on
    this host (kvmtune.mainjob.testcloud.TestCloud) or an operator's cloud
    of clouds.yaml (kvmtune.mainjob.cloud.OperatorCloud). Made right after
    the host's facts; its steps in the job's order."""

    name: str           # the cloud of clouds.yaml (the test cloud's: once up)
    profile: str        # the tuned profile (an operator's: once up)
    emulated: bool      # its guests run under QEMU TCG
    measures_baseline: bool     # the guests run on this host
    record_facts: 'Facts | None'    # the compute's facts, for the records

    def start(self) -> None:
        """What runs beside the image build."""

    def up(self) -> 'Cloud':
        """The cloud up and connected, after the image build."""

    def compute_step(self, api: 'Cloud', flavors: list[str]
                     ) -> dict[str, int]:
        """The compute made ready for the flavors; {flavor: largest VM
        count} where fewer guests fit than the sweep asks."""

    @staticmethod
    def stop_hint() -> str | None:
        """How to stop what the job leaves running, or None."""


def _facts_step() -> 'Facts':
    from kvmtune import facts

    with steps.step('host facts') as s:
        found = facts.gather()
        virt = found['virt']
        s.done(f'{found.get("hostname")}: '
               f'{len(found["cpu"].get("online", []) or [])} CPUs, '
               f'{len(found["numa"]["nodes"])} NUMA node(s), KVM '
               f'{"usable" if virt.get("kvm_usable") else "not usable"}, '
               f'EPT/NPT {"on" if virt.get("ept") else "off"}')
    return found


def _image_step() -> None:
    from kvmtune.image import build

    with steps.step('benchmark image') as s:
        manifest = build.build(mainjob.IMAGE_DIR, static_fio=True)
        size = manifest['sizes'].get(image.QCOW2) or 0
        s.done(f'{"built" if manifest.get("changed") else "unchanged"}, '
               f'qcow2 {size / 1e6:.1f} MB in {mainjob.IMAGE_DIR}')


def _baseline_step(workload: str, runtime: int | None, state_dir: str
                   ) -> str:
    """The bare host measured with the sweep's workload (`kvmtune baseline`,
    tests/unit/mainjob/test_job.py), before the cloud starts so its services do
    not share the CPUs: the report's "share of bare metal" is then filled."""
    from kvmtune.bench import baseline as bare
    from kvmtune.report import render
    from kvmtune import workloads

    path = os.path.join(state_dir, f'baseline-{workload}.json')
    with steps.step('bare-host baseline') as s:
        doc = bare.run(workloads.get(workload), runtime=runtime)
        bare.save(doc, path)
        r = doc['result']
        key = next((k for k in ('iops', 'events_s', 'tps') if r.get(k)),
                   'bw_bytes_s')
        figure = f'{render.figure(key, r.get(key) or 0)} {units.UNITS[key][0]}'
        s.done(f'{workload} on this host: {figure}; {path}')
    return path


def _sweep_records(profiles_by_flavor: Mapping[str, str],
                   facts: 'Facts | None', emulated: bool, workload: str,
                   runtime: int | None, config_files: Sequence[str]
                   ) -> 'dict[str, Record] | None':
    """{flavor: result record} for the Rally task (test_job.py): the
    profile, its nova.conf options and extra specs on the compute's facts,
    which `kvmtune report` reads back; a record never stops the job."""
    from kvmtune.results import records
    from kvmtune.tuning import profiles

    try:
        dirs = profiles.configured_dirs(cast(list[str], config_files))
        return {flavor: records.for_sweep(
                    profile, facts, 'tcg' if emulated else 'kvm', workload,
                    runtime, dirs=dirs)
                for flavor, profile in profiles_by_flavor.items()}
    except KvmtuneError as exc:
        steps.detail(f'no result records: {exc.line()}')
        return None


def _flavors_step(cloud_name: str, profiles: Iterable[str],
                  facts_file: str | None, config_files: Iterable[str]
                  ) -> list[str]:
    from kvmtune.openstack import flavors as tuned

    base = mainjob.BASE_FLAVOR['name']
    names: list[str] = []
    with steps.step('flavors') as s:
        for profile in profiles:
            names.append(tuned.apply_profile(
                cloud_name, profile, base=base, facts_file=facts_file,
                config_files=config_files))
        s.done(', '.join(names))
    return names


def _report_step(out_json: str, baseline: str | None, state_dir: str
                 ) -> tuple[str, dict[str, str]]:
    from kvmtune import fileio
    from kvmtune import report
    from kvmtune.results import analysis

    paths = {kind: os.path.join(state_dir, name) for kind, name in (
        ('png', 'disk-scaling.png'), ('html', 'disk-scaling-report.html'))}
    with steps.step('report') as s:
        analysed = analysis.load([out_json] + ([baseline] if baseline
                                               else []))
        table = report.render.text(analysed)
        png = report.plot.png_bytes(analysed)
        fileio.write_atomic(paths['png'], png)
        fileio.write_atomic(paths['html'], report.page.html_page(
            analysed, png).encode('utf-8'))
        s.done(f'{len(analysed.guests)} sweep(s) analysed')
    return table, paths


@dataclasses.dataclass(frozen=True)
class Settings:
    """What one run of the main job is asked (``kvmtune main-job``'s
    options; defaults as there). ``setup_only``: everything up to the
    sweep (image, cloud, flavors, compute, the task arguments), for
    `rally task start` by hand (rerun_line)."""
    os_cloud: str | None = None
    compute_facts: str | None = None
    max_vms: int = mainjob.MAX_VMS
    workload: str = mainjob.WORKLOAD
    runtime: int | None = None
    baseline: str | None = None
    emulated: bool = False
    tuned_profile: str | None = None
    state_dir: str = mainjob.STATE_DIR
    strict: bool = False
    verbose: bool = False
    config_files: Sequence[str] = ()
    setup_only: bool = False


def rerun_line(settings: Settings, args_file: str | None = None) -> str:
    """The shell line that runs the sweep again by hand, whatever became
    of the cloud since (a `kvmtune cloud down` and `up`, a reboot: a
    fresh test cloud has none of the job's image, flavors or compute
    tuning): the job's setup again (--setup-only: no baseline with
    --baseline, no sweep), Rally's environment for plain rally
    (`kvmtune rally env`, its credentials refreshed), then Rally with
    the job's task arguments."""
    import shlex

    os_cloud, workload = settings.os_cloud, settings.workload
    state_dir, config_files = settings.state_dir, settings.config_files
    q = shlex.quote
    job = ['kvmtune'] + [f'--config-file {q(f)}' for f in config_files]
    job.append('main-job')
    for flag, value in (('--os-cloud', os_cloud),
                        ('--compute-facts', settings.compute_facts),
                        ('--max-vms', settings.max_vms),
                        ('--workload', None if workload == 'fio-randread-4k'
                         else workload),
                        ('--runtime', settings.runtime),
                        ('--baseline', settings.baseline),
                        ('--tuned-profile', settings.tuned_profile),
                        ('--state-dir', None if state_dir ==
                         mainjob.STATE_DIR else state_dir)):
        if value is not None:
            job.append(f'{flag} {q(str(value))}')
    if settings.emulated:
        job.append('--emulated')
    job.append('--setup-only')
    env = ['kvmtune'] + [f'--config-file {q(f)}' for f in config_files]
    env += ['rally', 'env'] + ([f'--os-cloud {q(os_cloud)}'] if os_cloud
                               else [])
    task = ('rally task start "$(kvmtune rally task-path disk-scaling)" '
            f'--task-args-file {q(cast(str, args_file))}')
    return f'{" ".join(job)} && {" ".join(env)} && {task}'


def run(settings: Settings) -> int:
    """The whole job; its exit status (0 ran, 1 SLA failed with strict,
    2 a step could not run)."""
    state_dir = settings.state_dir
    try:
        os.makedirs(state_dir, exist_ok=True)
        log = os.path.join(state_dir, LOG_NAME)
        if os.path.exists(log):
            os.replace(log, log + '.1')     # the previous run's
        steps.configure(log, settings.verbose)
    except OSError as exc:
        print(f'main-job: error: {state_dir}: {exc.strerror} (fix: give '
              '--state-dir a directory you can write)')
        return errors.EXIT_ERROR
    steps.say(f'log: {log} (commands, apt, pip, Rally; --verbose shows '
              'them here)')
    try:
        return _run(settings)
    except KvmtuneError as exc:
        steps.say(f'error: {exc.line()}')
    except Exception as exc:  # openstacksdk's own errors: one line too
        msg = ' '.join(f'{type(exc).__name__}: {exc}'.split())
        steps.say(f'error: {msg}')
    finally:
        steps.OUT.close()
    print(f'main-job: stopped; the log has the details: {log}')
    # the test cloud keeps running after a failed step as after a run
    hint = None if settings.os_cloud else testcloud.stop_hint()
    if hint:
        print(f'main-job: {hint}')
    return errors.EXIT_ERROR


def _target(settings: Settings, this_facts: 'Facts') -> Target:
    """The job's target: an operator's cloud (--os-cloud), else the test
    cloud on this host (its tuned profile decided here, before anything
    installs)."""
    if settings.os_cloud:
        return cloud.OperatorCloud(
            settings.os_cloud, this_facts, max_vms=settings.max_vms,
            compute_facts=settings.compute_facts,
            tuned_profile=settings.tuned_profile,
            emulated=settings.emulated)
    return testcloud.TestCloud(
        this_facts, max_vms=settings.max_vms,
        tuned_profile=settings.tuned_profile,
        config_files=settings.config_files, emulated=settings.emulated)


def _run(settings: Settings) -> int:
    max_vms, workload = settings.max_vms, settings.workload
    runtime, baseline = settings.runtime, settings.baseline
    state_dir, strict = settings.state_dir, settings.strict
    config_files = settings.config_files

    this_facts = _facts_step()
    target = _target(settings, this_facts)
    if baseline is None and target.measures_baseline:
        # the guests run here: this host bare, before the cloud starts
        baseline = _baseline_step(workload, runtime, state_dir)
    elif baseline is None:
        steps.say('bare-host baseline: not measured (the guests run on '
                  'the cloud\'s computes): give --baseline FILE, written '
                  'by `kvmtune baseline` on one of them')
    # the test cloud installs and comes up while the image builds (CPU)
    target.start()
    _image_step()
    api = target.up()
    cloud_name = target.name
    # openstacksdk's calls as kvmtune's own (kvmtune.openstack.connection):
    # reads retried with a line each, writes once, a failure one line
    # naming the request, its id and the endpoint
    conn = api.conn
    # Rally's database and environment need only the cloud's
    # credentials: made beside the steps up to the sweep
    runner = None if settings.setup_only else sweep.Rally(state_dir)
    rally_env = None if runner is None else runner.use_cloud_beside(
        cloud_name, rallycloud.rally_spec(conn.config))
    with steps.step('image and base flavor') as s, api.named():
        s.done(f'{cloud.upload_image(conn)}; {cloud.base_flavor(conn)}')
    flavors = _flavors_step(cloud_name,
                            (mainjob.BASE_PROFILE, target.profile),
                            settings.compute_facts, config_files)
    counts = target.compute_step(api, flavors)
    emulated = target.emulated

    records = _sweep_records(
        dict(zip(flavors, (mainjob.BASE_PROFILE, target.profile))),
        target.record_facts, emulated, workload, runtime, config_files)
    args = sweep.task_args(max_vms, workload, flavors, image.GLANCE_NAME,
                           baseline, emulated, runtime, counts, records)
    args_file = os.path.join(state_dir, 'disk-scaling-args.json')
    fileio.write_atomic(args_file, json.dumps(args, indent=2) + '\n')
    # the baseline as a file of its own path: the re-run measures none
    rerun = rerun_line(dataclasses.replace(
        settings, baseline=os.path.abspath(baseline) if baseline else None),
        args_file=args_file)
    if settings.setup_only:
        steps.say(f'set up for the sweep (--setup-only: no sweep); Rally\'s '
                  f'task arguments: {args_file}')
        steps.say(f're-run the sweep by hand: {rerun}')
        hint = target.stop_hint()
        if hint:
            steps.say(hint)
        return errors.EXIT_OK

    runner, rally_env = cast(sweep.Rally, runner), cast(
        'Future[dict[str, Any]]', rally_env)     # made above: a sweep runs
    with steps.step('rally environment') as s:
        done = rally_env.result()
        s.done(f'{cloud_name}, {done["environment"]} from the cloud\'s '
               f'credentials (not shown), {done["seconds"]:.0f} s beside '
               'the steps before')
    out_json = os.path.join(state_dir, 'disk-scaling.json')
    out_html = os.path.join(state_dir, 'disk-scaling.html')
    counts_by_flavor = sweep.vm_counts(max_vms, flavors, counts)
    progress = rallyprogress.Progress(flavors, counts_by_flavor)
    with steps.step('rally sweep') as s:
        uuid, sla_ok = runner.sweep(sweep.task_path('disk-scaling'), args,
                                    out_json, out_html, progress)
        s.done(f'task {uuid}, ' + '; '.join(
            f'{f} {c[0]}..{c[-1]} VMs' for f, c in counts_by_flavor.items()))
    table, paths = _report_step(out_json, baseline, state_dir)

    # The summary
    label = f' ({units.EMULATED})' if emulated else ''
    steps.say(f'results{label}:')
    for line in table.rstrip('\n').splitlines():
        steps.say('  ' + line)
    steps.say(f'report: {paths["html"]} (plot {paths["png"]}); Rally: '
              f'{out_json}, {out_html}')
    # the job's own Rally stays in its state directory; by hand, plain rally
    # gets an environment from `kvmtune rally env` (test_rally_env.py)
    steps.say(f're-run the sweep by hand: {rerun}')
    if sla_ok:
        steps.say('SLA: met')
    else:
        steps.say('SLA: FAILED (the experiment ran: exit '
                  f'{1 if strict else "0; --strict makes it 1"})')
        for line in runner.sla_failures:
            steps.say('  ' + line)
    hint = target.stop_hint()
    if hint:
        steps.say(hint)
    return errors.EXIT_DIFFERS if strict and not sla_ok else errors.EXIT_OK
