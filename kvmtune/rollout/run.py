"""A rollout run: plan every host, then the kvmtune.fleet collection's
playbook over those with something to do, one line per host and step.

``run(...)`` plans every host first (kvmtune.rollout.check; a host that
does not plan, or a batch the preflight refuses, stops it before any
host is disabled), reads the state file (kvmtune.rollout.state,
kvmtune.rollout.resume), then starts ``ansible-playbook``
(kvmtune.rollout.playbook) and prints one line per host and step from
the events its callback plugin writes (kvmtune.rollout.events), never
from Ansible's screen output: that goes to a log file, whose path is
printed first and which a failure's line names.
"""

from collections.abc import Sequence
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any
from typing import TextIO

from kvmtune.errors import KvmtuneError
from kvmtune import fileio
from kvmtune import jsonout
from kvmtune.rollout import check
from kvmtune.rollout import events
from kvmtune.rollout import inventory
from kvmtune.rollout import playbook
from kvmtune.rollout import resume
from kvmtune.rollout import runlock
from kvmtune.rollout import state as states


def run(path: str, hosts: Sequence[inventory.Host], *, profile: str,
        limit: str, batch: int, mode: str, cloud: str | None,
        run_id: str | None, config_files: Sequence[str] = (),
        state_file: str | None = None, replan: Sequence[str] = (),
        stream: TextIO | None = None) -> int:
    """Run the rollout over ``hosts`` (already read from the inventory
    ``path`` with ``limit``), after planning every one of them
    (kvmtune.rollout.check); 0 when every batch went through, else
    KvmtuneError naming the first host and step that failed.

    With ``state_file`` a host the run has applied a plan to and not
    enabled again gets that plan again (kvmtune.rollout.resume.applied),
    unless ``replan`` names it (kvmtune.rollout.resume.replan)."""
    with contextlib.ExitStack() as held:
        if state_file is not None:
            # one rollout at a time on a state file: a second one is
            # refused here, naming the holder, before anything is read
            held.enter_context(runlock.hold(state_file, run_id))
        return _run(path, hosts, profile=profile, limit=limit, batch=batch,
                    mode=mode, cloud=cloud, run_id=run_id,
                    config_files=config_files, state_file=state_file,
                    replan=replan, stream=stream)


def _run(path: str, hosts: Sequence[inventory.Host], *, profile: str,
         limit: str, batch: int, mode: str, cloud: str | None,
         run_id: str | None, config_files: Sequence[str] = (),
         state_file: str | None = None, replan: Sequence[str] = (),
         stream: TextIO | None = None) -> int:
    """``run``, its state file's run lock held."""
    stream = stream or sys.stdout
    if replan and state_file is None:
        resume.replan(None, replan, {})     # refused: no state file
    # Every host first, as --check does: a host that does not plan, that
    # cannot be reached or that Nova does not know, no credentials, or a
    # batch the preflight refuses stops the rollout here, before any
    # host of any batch is disabled or changed.
    found = check.plan(hosts, profile, path=path, batch=batch, mode=mode,
                       cloud=cloud, config_files=config_files)
    unplanned = found.unplanned_error()
    if unplanned is not None:
        raise unplanned
    if found.refused:
        raise _refused(path, found.refused)
    counts = found.to_dict()['summary']
    unknown = (f", {counts['unknown']} unknown" if counts.get('unknown')
               else '')
    stream.write(f"checked {counts['hosts']} hosts: {counts['reboot']} "
                 f"reboot, {counts['restart']} restart, {counts['none']} "
                 f'unchanged{unknown}\n')
    # the run's state, read once here: the state file's run when it holds
    # one (a rollout run again goes on), else a new one
    run = None if state_file is None else states.open_run(
        state_file, profile=profile, run_id=run_id,
        inventory=os.path.abspath(path))[0]
    run_id = run.run_id if run else (run_id or states.new_run_id())
    nova = {h.name: h.nova_host for h in hosts}
    for name in resume.replan(run, replan, nova):
        stream.write(f'{name} planned again: the plan run {run_id} '
                     'applied to it is forgotten\n')
    # the run starts: a host done with it and changed since starts over
    for name in resume.start_over(run, found.hosts, nova):
        stream.write(f'{name} starts over: done with run {run_id} and '
                     'changed since\n')
    taken_out = resume.started(run, found.hosts, nova)
    names = resume.to_roll({h.host: h.action for h in found.hosts},
                           taken_out)
    for host in found.hosts:
        if host.host in names:
            continue
        if host.action == 'unknown':
            stream.write(f'{host.host} unknown: {host.notes[0]}; left '
                         'alone\n')
        else:
            stream.write(f'{host.host} unchanged: nothing to do, left '
                         'alone\n')
    if not names:
        stream.write(f'rollout {run_id}: nothing to do on any host\n')
        return 0
    plans = resume.applied(run, names, nova)
    for name in names:
        if nova.get(name, name) in plans:
            stream.write(f'{name} goes on with the plan run {run_id} '
                         f'applied to it (another: --replan {name})\n')
    facts_dir = tempfile.mkdtemp(prefix=f'kvmtune-rollout-{run_id}-facts-')
    # every host's facts and nova.conf as the check read them: a batch's
    # preflight fits its guests on the hosts of later batches too (the
    # roles write a batch's own again, before its change and after)
    check.write_facts(hosts, found.hosts, facts_dir)
    # a file (plans are kilobytes), not among the facts the preflight reads
    scratch = tempfile.mkdtemp(prefix=f'kvmtune-rollout-{run_id}-vars-')
    var_files = [os.path.join(scratch, 'applied-plans.json')] if plans else []
    for name in var_files:
        fileio.write_atomic(name, jsonout.dumps(
            {'kvmtune_applied_plans': plans}, source=state_file), mode=0o600)
    try:
        # the hosts by name: Ansible's serial batches are these, in order
        return _play(path, check.batches(names, batch), stream, run_id,
                     playbook.extra_vars(
                profile=profile, batch=batch, mode=mode, cloud=cloud,
                run_id=run_id, config_files=config_files,
                facts_dir=facts_dir,
                state_file=state_file and os.path.abspath(state_file),
                resume_hosts=[nova.get(name, name) for name, out
                              in taken_out.items() if out]),
                     var_files)
    finally:
        shutil.rmtree(facts_dir, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)


def _refused(path: str, refusals: Sequence[KvmtuneError]) -> KvmtuneError:
    """The one line of a rollout the preflight refuses (``refusals``: as
    the preflight raised them, each with its fix): the first refusal, its
    fix."""
    first = refusals[0]
    text = KvmtuneError(first.problem, source=first.source,
                        key=first.key).line()
    fix = first.fix or 'nothing was disabled or changed'
    more = (f' (and {len(refusals) - 1} more refusal(s))'
            if len(refusals) > 1 else '')
    return KvmtuneError(f'the preflight refuses it: {text}{more}',
                        source=path, fix=f'{fix}; kvmtune rollout --check '
                                         'shows every batch')


def _play(path: str, batches: Sequence[Sequence[str]], stream: TextIO,
          run_id: str, variables: dict[str, Any],
          var_files: Sequence[str] = ()) -> int:
    """ansible-playbook over the hosts of ``batches`` (Ansible's serial
    batches are these: the hosts in order, ``kvmtune_batch`` at a time),
    one line per host and step, from the run's events."""
    names = [name for members in batches for name in members]
    profile = variables['kvmtune_profile']
    batch = variables['kvmtune_batch']
    mode = variables['kvmtune_mode']
    log = tempfile.NamedTemporaryFile(
        'w', prefix=f'kvmtune-rollout-{run_id}-', suffix='.log',
        delete=False)
    # beside the log: the events of the collection's callback plugin
    events_file = log.name[:-len('.log')] + '.events.jsonl'
    fileio.write_atomic(events_file, '', mode=0o600)
    stream.write(f'rollout {run_id}: {profile} on {len(names)} hosts, '
                 f'batches of {batch}, mode {mode}; Ansible\'s log: '
                 f'{log.name}\n')
    for n, members in enumerate(batches, 1):
        stream.write(f"batch {n}: {' '.join(members)}\n")
    failed: list[events.Event] = []
    enabled: set[str] = set()
    with log, subprocess.Popen(
            playbook.command(path, ','.join(names), variables, var_files),
            stdout=log, stderr=subprocess.STDOUT, text=True,
            env=playbook.environment(events_file)) as proc:
        for event in events.follow(events_file,
                                   lambda: proc.poll() is None):
            if event.kind != 'step':
                continue
            stream.write(f'{event.host} {event.step} {event.status}\n')
            stream.flush()
            if event.failed and all(event.host != e.host for e in failed):
                failed.append(event)
            if event.step == 'enable' and event.status in ('ok',
                                                           'changed'):
                enabled.add(event.host)
        rc = proc.wait()
    if rc != 0:
        if not failed:
            raise KvmtuneError(f'the rollout stopped: ansible-playbook '
                               f'exited {rc}', source=log.name,
                               fix='see the log; kvmtune rollout --check '
                                   'shows the plan')
        raise _stopped(log.name, failed, enabled, batches, variables)
    stream.write(f'rollout {run_id}: done\n')
    return 0


def _stopped(log: str, failed: Sequence[events.Event],
             enabled: set[str], batches: Sequence[Sequence[str]],
             variables: dict[str, Any]) -> KvmtuneError:
    """The one line of a rollout that stopped: the first host that failed
    (``failed``: its failed step's event, first per host, in order), its
    step and what went wrong (the event's result: the failed command's
    own line and fix), the others of its batch that failed too, and those
    that passed and were enabled again."""
    first = failed[0]
    host, step, status = first.host, first.step, first.status
    what, fix = events.failure(first)
    mates = next((b for b in batches if host in b), [])
    also = [e.host for e in failed[1:] if e.host in mates]
    if also:
        what += f' ({", ".join(also)} of its batch failed too)'
    after = ''
    if variables['kvmtune_mode'] != 'stage':
        passed = [h for h in mates if h in enabled]
        after = '; it stays disabled, ' + (
            f'{", ".join(passed)} of its batch passed and '
            f'{"was" if len(passed) == 1 else "were"} enabled again, '
            if passed else '') + 'the hosts of later batches were not touched'
    again = ('run kvmtune rollout again with the same --state: it '
             'goes on from there' if variables['kvmtune_state_file']
             else 'run kvmtune rollout again')
    if variables['kvmtune_state_file'] and step in ('verify', 'gate'):
        # the plan its apply step applied, again (kvmtune.rollout.state)
        again += (' and judges the plan it applied again (plans the '
                  f'host again with --replan {host})')
    return KvmtuneError(f'the rollout stopped: {host} failed at step '
                        f'{step} ({status}): {what}{after}', source=log,
                        fix=f'{fix}, then {again}' if fix else
                        f'see the log, then {again}')
