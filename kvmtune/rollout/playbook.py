"""Run the kvmtune.fleet collection's rollout playbook, and show progress.

``run(...)`` starts ``ansible-playbook`` on the collection's
playbooks/rollout.yml (kvmtune.PLAYBOOK; the collection found
through ANSIBLE_COLLECTIONS_PATH, kvmtune.rollout.COLLECTIONS_PATH) with
the rollout's settings as extra variables (``extra_vars``), and prints
one line per host and step as Ansible reports them (``progress``): the
roles name each step's tasks ``step <name>: ...``
(kvmtune/data/ansible_collections/kvmtune/fleet/README.md).

Ansible's own output goes to a log file beside nothing else: the path is
printed first, and a failure's line names it.
"""

from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Sequence
import json
import os
import re
import subprocess
import sys
import tempfile
from typing import Any
from typing import TextIO

from kvmtune.errors import KvmtuneError
from kvmtune.rollout import inventory
from kvmtune.rollout import resume

# Where the collection is, in the checkout and in the installed package
# (package data): ANSIBLE_COLLECTIONS_PATH takes the directory above
# ansible_collections/.
COLLECTIONS_PATH = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), 'data')
COLLECTION = os.path.join(COLLECTIONS_PATH, 'ansible_collections', 'kvmtune',
                          'fleet')
PLAYBOOK = os.path.join(COLLECTION, 'playbooks', 'rollout.yml')
# The rollout's modes: migrate the guests away first; reboot with the
# guests on the host (Nova restarts them); write and stop before the reboot.
MODES = ('drain', 'in-place', 'stage')

_TASK = re.compile(r'^TASK \[(?:[\w.]+ : )?step (?P<step>[\w-]+):')
_RESULT = re.compile(
    r'^(?P<status>ok|changed|skipping|fatal|failed)'
    r': \[(?P<host>[^\]\s]+)(?: -> [^\]]+)?\]'
    r'(?P<unreachable>: UNREACHABLE!)?')


def extra_vars(*, profile: str, batch: int, mode: str, cloud: str | None,
               run_id: str, config_files: Sequence[str] = (),
               facts_dir: str = '', state_file: str | None = None
               ) -> dict[str, Any]:
    """The playbook's variables (the roles' meta/argument_specs.yml)."""
    return {'kvmtune_profile': profile, 'kvmtune_batch': batch,
            'kvmtune_mode': mode, 'kvmtune_os_cloud': cloud or '',
            'kvmtune_run_id': run_id,
            'kvmtune_config_files': list(config_files),
            'kvmtune_facts_dir': facts_dir,
            'kvmtune_state_file': state_file or '',
            # the controller's kvmtune, for the cloud steps (delegated to
            # localhost): this one
            'kvmtune_controller_command': [sys.executable, '-m',
                                           'kvmtune.cli']}


def progress(lines: Iterable[str]) -> Iterator[tuple[str, str, str]]:
    """(host, step, status) of each result line of Ansible's default
    output under a ``step <name>:`` task, and ('', '', 'play') where a
    play (a batch) or the recap starts."""
    step = None
    for line in lines:
        if line.startswith('PLAY '):
            # a batch (or the run) ends: steps() shows what is pending
            yield '', '', 'play'
            step = None
            continue
        task = _TASK.match(line)
        if task:
            step = task.group('step')
            continue
        if line.startswith('TASK ['):
            step = None
            continue
        found = _RESULT.match(line)
        if found and step is not None:
            status = ('unreachable' if found.group('unreachable')
                      else 'failed' if found.group('status') == 'fatal'
                      else found.group('status'))
            yield found.group('host'), step, status


# A step's status from its tasks' results: the strongest one.
_RANK = ('skipping', 'ok', 'changed', 'failed', 'unreachable')


def steps(results: Iterable[tuple[str, str, str]]
          ) -> Iterator[tuple[str, str, str]]:
    """One (host, step, status) per host and step from ``progress``'s
    task results: a step's line comes when the host's next step starts,
    or a host failed, or the run ended; its status is the strongest of
    its tasks' (``changed`` when any task changed, ``skipping`` when all
    skipped)."""
    current: dict[str, tuple[str, str]] = {}
    for host, step, status in results:
        if status == 'play':
            yield from ((h, s, st) for h, (s, st) in current.items())
            current.clear()
            continue
        before = current.get(host)
        if before is not None and before[0] != step:
            yield host, before[0], before[1]
            before = None
        if before is None or _RANK.index(status) > _RANK.index(before[1]):
            before = (step, status)
        current[host] = before
        if _RANK.index(status) >= _RANK.index('failed'):
            yield host, step, status
            del current[host]
    for host, (step, status) in current.items():
        yield host, step, status


def command(path: str, limit: str, variables: dict[str, Any],
            var_files: Sequence[str] = ()) -> list[str]:
    """ansible-playbook: ``variables`` and the JSON files ``var_files``
    as extra variables."""
    return [inventory.ansible_tool('ansible-playbook'), '-i', path,
            '--limit', limit, '-e', json.dumps(variables),
            *[word for name in var_files for word in ('-e', f'@{name}')],
            PLAYBOOK]


def environment() -> dict[str, str]:
    paths = [COLLECTIONS_PATH] + [
        p for p in os.environ.get('ANSIBLE_COLLECTIONS_PATH', '').split(':')
        if p]
    return {**os.environ, 'ANSIBLE_COLLECTIONS_PATH': ':'.join(paths),
            'ANSIBLE_STDOUT_CALLBACK': 'ansible.builtin.default',
            'ANSIBLE_NOCOLOR': '1', 'ANSIBLE_FORCE_COLOR': '0',
            'ANSIBLE_RETRY_FILES_ENABLED': '0'}


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
    import shutil

    from kvmtune import fileio
    from kvmtune import jsonout
    from kvmtune.rollout import check
    from kvmtune.rollout import state as states

    stream = stream or sys.stdout
    if replan and state_file is None:
        resume.replan(None, replan, {})     # refused: no state file
    # Every host first, as --check does: a host that does not plan, that
    # cannot be reached or that Nova does not know, no credentials, or a
    # batch the preflight refuses stops the rollout here, before any
    # host of any batch is disabled or changed.
    found = check.plan(hosts, profile, path=path, batch=batch, mode=mode,
                       cloud=cloud, config_files=config_files)
    if found.refused:
        raise _refused(path, found.refused)
    counts = found.to_dict()['summary']
    stream.write(f"checked {counts['hosts']} hosts: {counts['reboot']} "
                 f"reboot, {counts['restart']} restart, {counts['none']} "
                 'unchanged\n')
    # the run's state, read once here: the state file's run when it holds
    # one (a rollout run again goes on), else a new one
    run = None if state_file is None else states.open_run(
        state_file, profile=profile, run_id=run_id)[0]
    run_id = run.run_id if run else (run_id or states.new_run_id())
    nova = {h.name: h.nova_host for h in hosts}
    for name in resume.replan(run, replan, nova):
        stream.write(f'{name} planned again: the plan run {run_id} '
                     'applied to it is forgotten\n')
    # the run starts: a host done with it and changed since starts over
    for name in resume.start_over(run, found.hosts, nova):
        stream.write(f'{name} starts over: done with run {run_id} and '
                     'changed since\n')
    names = resume.to_roll({h.host: h.action for h in found.hosts},
                           resume.started(run, found.hosts, nova))
    for host in found.hosts:
        if host.host not in names:
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
                     extra_vars(
                profile=profile, batch=batch, mode=mode, cloud=cloud,
                run_id=run_id, config_files=config_files,
                facts_dir=facts_dir,
                state_file=state_file and os.path.abspath(state_file)),
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


def failure(result: dict[str, Any]) -> tuple[str, str | None]:
    """(what went wrong, its fix) of a failed task's result as Ansible
    reports it: the first check that did not pass of ``kvmtune verify -f
    json``, else the last line kvmtune printed (its one line, with its
    fix), else Ansible's message."""
    try:
        doc = json.loads(result.get('stdout') or '')
    except ValueError:
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get('checks'), list):
        bad = [c for c in doc['checks'] if isinstance(c, dict)
               and c.get('status') != 'PASS']
        if bad:
            first = bad[0]
            if first.get('status') == 'DRIFT':
                what = (f"{first.get('layer')} {first.get('name')}: "
                        f"expected {first.get('expected')}, live "
                        f"{first.get('live')}")
                fix = first.get('fix') or 'apply the plan again'
            else:
                what = (f"{first.get('layer')} {first.get('name')}: "
                        f"unknown ({first.get('reason')})")
                fix = 'make the check possible (see the reason)'
            more = f' (and {len(bad) - 1} more)' if len(bad) > 1 else ''
            return what + more, fix
    for key in ('stderr', 'stdout'):
        lines = [line.strip() for line in
                 str(result.get(key) or '').splitlines() if line.strip()]
        if lines:
            last = lines[-1]
            text, _, fix = last.partition(' (fix: ')
            return (text, fix[:-1]) if fix.endswith(')') else (last, None)
    return str(result.get('msg') or 'failed'), None


def fatal(lines: Iterable[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(host, result) of each ``fatal: [HOST]: FAILED! => {...}`` in
    Ansible's output, the result on that line or indented over the lines
    after it (result {} when it does not parse)."""
    host = None
    text: list[str] = []
    for line in lines:
        if host is not None:
            text.append(line)
            try:
                result = json.loads(''.join(text))
            except ValueError:
                if len(text) < 5000 and line[:1] in (' ', '\t', '}'):
                    continue
                result = {}
            yield host, result if isinstance(result, dict) else {}
            host, text = None, []
            continue
        found = _RESULT.match(line)
        if found and found.group('status') in ('fatal', 'failed'):
            _, arrow, rest = line.partition(' => ')
            if arrow:
                host, text = found.group('host'), [rest]
                try:
                    result = json.loads(rest)
                except ValueError:
                    continue
                yield host, result if isinstance(result, dict) else {}
                host, text = None, []
    if host is not None:
        yield host, {}


def _play(path: str, batches: Sequence[Sequence[str]], stream: TextIO,
          run_id: str, variables: dict[str, Any],
          var_files: Sequence[str] = ()) -> int:
    """ansible-playbook over the hosts of ``batches`` (Ansible's serial
    batches are these: the hosts in order, ``kvmtune_batch`` at a time),
    one line per host and step."""
    names = [name for members in batches for name in members]
    profile = variables['kvmtune_profile']
    batch = variables['kvmtune_batch']
    mode = variables['kvmtune_mode']
    log = tempfile.NamedTemporaryFile(
        'w', prefix=f'kvmtune-rollout-{run_id}-', suffix='.log',
        delete=False)
    stream.write(f'rollout {run_id}: {profile} on {len(names)} hosts, '
                 f'batches of {batch}, mode {mode}; Ansible\'s log: '
                 f'{log.name}\n')
    for n, members in enumerate(batches, 1):
        stream.write(f"batch {n}: {' '.join(members)}\n")
    failed: list[tuple[str, str, str]] = []
    enabled: set[str] = set()
    with log, subprocess.Popen(command(path, ','.join(names), variables,
                                       var_files),
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True,
                               env=environment()) as proc:
        assert proc.stdout is not None

        def lines() -> Iterator[str]:
            for line in proc.stdout:  # type: ignore[union-attr]
                log.write(line)
                yield line

        for host, step, status in steps(progress(lines())):
            shown = 'skipped' if status == 'skipping' else status
            stream.write(f'{host} {step} {shown}\n')
            stream.flush()
            if status in ('failed', 'unreachable') and \
                    all(host != h for h, _, _ in failed):
                failed.append((host, step, status))
            if step == 'enable' and status in ('ok', 'changed'):
                enabled.add(host)
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


def _stopped(log: str, failed: Sequence[tuple[str, str, str]],
             enabled: set[str], batches: Sequence[Sequence[str]],
             variables: dict[str, Any]) -> KvmtuneError:
    """The one line of a rollout that stopped: the first host that failed
    (``failed``: (host, step, status), first per host, in order), its
    step and what went wrong, with its fix; the others of its batch that
    failed too, and those that passed and were enabled again."""
    host, step, status = failed[0]
    # the failed task's result, from Ansible's output in its log
    with open(log, encoding='utf-8', errors='replace') as out:
        result = next((r for h, r in fatal(out) if h == host), {})
    what, fix = failure(result)
    mates = next((b for b in batches if host in b), [])
    also = [h for h, _, _ in failed[1:] if h in mates]
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
