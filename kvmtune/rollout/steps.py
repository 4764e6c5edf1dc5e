"""One step of a rollout, as ``kvmtune rollout-step`` makes it: the one
library call behind the command (kvmtune.cmd.rollout_step).

``make(step, cloud, hosts, run_id, ...)`` runs preflight, disable, drain,
gate or enable (kvmtune.rollout.preflight, .nova, .drain, .gate), or
records the plan the apply step applied on the host (record-plan: in the state
file, kvmtune.rollout.state.State.record_plan, no cloud), and
returns a ``Result``: rows to print, one line saying what happened, the
exit status, and the error to raise once the rows are printed (a refused
preflight prints where every guest would have gone, then refuses).

With a state file (kvmtune.rollout.state) a step the host has done in
that run is not made again ("done in run RUN"), and a step made is
recorded; a run id other than the file's is refused.
"""

from collections.abc import Sequence
import dataclasses
import socket
from typing import Any

from kvmtune.errors import EXIT_DIFFERS
from kvmtune.errors import EXIT_OK
from kvmtune.errors import InputError
from kvmtune.errors import KvmtuneError


@dataclasses.dataclass
class Result:
    step: str
    hosts: list[str]
    run_id: str
    line: str
    columns: list[str] = dataclasses.field(default_factory=list)
    rows: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    document: dict[str, Any] = dataclasses.field(default_factory=dict)
    changed: bool = False
    skipped: bool = False
    exit_code: int = EXIT_OK
    error: KvmtuneError | None = None

    def to_dict(self) -> dict[str, Any]:
        return {'step': self.step, 'hosts': self.hosts,
                'run_id': self.run_id, 'line': self.line,
                'changed': self.changed, 'skipped': self.skipped,
                'ok': self.exit_code == EXIT_OK and self.error is None,
                **self.document}


def make(step: str, cloud: Any, hosts: Sequence[str], run_id: str, *,
         profiles: Sequence[str] = (), state_file: str | None = None,
         mode: str = 'drain', facts_dir: str | None = None,
         timeout: float | None = None, root: str | None = None,
         facts_file: str | None = None, plan_file: str | None = None,
         nova_config_files: Sequence[str] | None = None,
         layers: Sequence[str] | None = None,
         config_files: Sequence[str] = ()) -> Result:
    """Make ``step`` for ``hosts`` (one host, except preflight)."""
    from kvmtune.rollout import state as states

    hosts = list(hosts)
    if step == 'record-plan':
        return _record_plan(hosts, run_id, state_file, plan_file, profiles)
    state = None
    if state_file is not None:
        state, _ = states.open_run(state_file, run_id=run_id,
                                   profile=profiles[0] if profiles else None)
        if all(state.done(h, step) or state.finished(h) for h in hosts):
            return Result(step, hosts, run_id, skipped=True,
                          line=f'done already in run {run_id} (state file '
                               f'{state_file}); nothing made')
    result = _STEPS[step](cloud, hosts, run_id, profiles=profiles,
                          mode=mode, facts_dir=facts_dir, timeout=timeout,
                          root=root, facts_file=facts_file,
                          plan_file=plan_file,
                          nova_config_files=nova_config_files,
                          layers=layers, config_files=config_files)
    if state is not None and result.exit_code == EXIT_OK and \
            result.error is None:
        for host in hosts:
            state.mark(host, step)
    return result


def _record_plan(hosts: list[str], run_id: str, state_file: str | None,
                 plan_file: str | None, profiles: Sequence[str]) -> Result:
    """Record, once, the plan the apply step applied on the host (``boot
    apply -f json``'s plan, from ``plan_file``) with its apply step: a
    run again applies and gates that plan until the host is enabled."""
    from kvmtune.rollout import state as states
    from kvmtune.tuning import plan

    if state_file is None:
        raise InputError('record-plan records the plan applied in the '
                         'rollout\'s '
                         'state file', key='--state',
                         fix='give --state FILE')
    if plan_file is None:
        raise InputError('record-plan records the plan the apply step '
                         'applied',
                         key='--plan', fix='give --plan FILE ("boot apply '
                         '-f json"\'s plan; -: standard input)')
    applied = plan.load(plan_file)
    state, _ = states.open_run(state_file, run_id=run_id,
                               profile=profiles[0] if profiles else None)
    recorded, now = state.record_plan(hosts[0], applied.to_dict())
    line = (f'the plan of {applied.profile} applied, recorded in run '
            f'{run_id}' if now else
            f'the plan applied in run {run_id} kept (recorded before)')
    return Result('record-plan', hosts, run_id, line,
                  document={'plan': recorded}, skipped=not now)


def _profile(profiles: Sequence[str], step: str) -> str:
    if not profiles:
        raise InputError(f'{step} needs the profile rolled out',
                         key='--profile', fix='give --profile NAME')
    return profiles[0]


def _preflight(cloud: Any, hosts: list[str], run_id: str,
               **kw: Any) -> Result:
    from kvmtune.rollout import preflight

    report = preflight.run(cloud, hosts, mode=kw['mode'],
                           profiles=kw['profiles'],
                           facts_dir=kw['facts_dir'],
                           config_files=kw['config_files'])
    rows = [{'host': p.host, 'server': p.server, 'flavor': p.flavor,
             'status': p.status, 'to': p.target or f'? {p.why}'}
            for p in report.placed]
    rows += [{'host': d['host'], 'server': '(density)',
              'flavor': d['flavor'], 'status': '',
              'to': f'{_count(d["before"])} -> {_count(d["after"])}'}
             for d in report.density]
    error = None
    if report.refusals:
        first = report.refusals[0]
        more = len(report.refusals) - 1
        if more:
            first.problem += f' (and {more} more refusal(s))'
        error = first
    line = (f'refused: {len(report.refusals)} refusal(s); nothing touched'
            if error else f'{len(report.placed)} guest(s) have room '
                          f'elsewhere ({report.mode}); nothing touched')
    return Result('preflight', hosts, run_id, line,
                  ['host', 'server', 'flavor', 'status', 'to'], rows,
                  report.to_dict(), error=error)


def _count(value: int | None) -> str:
    return '?' if value is None else str(value)


def _disable(cloud: Any, hosts: list[str], run_id: str,
             **kw: Any) -> Result:
    from kvmtune.rollout import nova

    why = nova.reason(run_id, _profile(kw['profiles'], 'disable'))
    service, changed = nova.disable(cloud, hosts[0], why)
    line = (f'disabled ({why!r})' if changed
            else f'already disabled by this run ({why!r})')
    return Result('disable', hosts, run_id, line,
                  document={'service': dataclasses.asdict(service)},
                  changed=changed)


def _enable(cloud: Any, hosts: list[str], run_id: str,
            **kw: Any) -> Result:
    from kvmtune.rollout import nova

    service, changed = nova.enable(cloud, hosts[0], run_id)
    return Result('enable', hosts, run_id,
                  'enabled' if changed else 'already enabled',
                  document={'service': dataclasses.asdict(service)},
                  changed=changed)


def _drain(cloud: Any, hosts: list[str], run_id: str, **kw: Any) -> Result:
    from kvmtune.rollout import drain

    options = {} if kw['timeout'] is None else {'timeout': kw['timeout']}
    moves = drain.drain(cloud, hosts[0], **options)
    rows = [m.to_dict() for m in moves]
    return Result('drain', hosts, run_id,
                  f'empty; {len(moves)} server(s) moved',
                  ['id', 'name', 'flavor', 'status_before', 'action',
                   'status_after', 'host_after'], rows,
                  {'moves': rows}, changed=bool(moves))


def _gate(cloud: Any, hosts: list[str], run_id: str, **kw: Any) -> Result:
    from kvmtune import facts as host_facts
    from kvmtune.rollout import gate
    from kvmtune.tuning import plan
    from kvmtune import verify

    profiles = [_profile(kw['profiles'], 'gate')] + list(kw['profiles'][1:])
    if kw['root'] is None and kw['facts_file'] is None and \
            hosts[0] != socket.gethostname():
        # the plan is the host's: this machine's facts would plan another
        raise InputError(f'the gate plans host {hosts[0]} from its facts, '
                         f'and this machine is {socket.gethostname()}',
                         key='--facts', fix=f'give --facts with '
                         f'{hosts[0]}\'s facts ("kvmtune host inspect -f '
                         'json" there), or run the gate on that host')
    facts = host_facts.resolve(root=kw['root'], facts_file=kw['facts_file'])
    # the plan the apply step applied: a plan made again from the facts
    # after the reboot would take a pool that came up short as planned
    plans = ([plan.load(kw['plan_file'])] if kw['plan_file'] is not None
             else plan.for_host(profiles, facts=facts,
                                config_files=kw['config_files']))
    # --facts or --root: a verdict from that host alone (no layer reads
    # this machine's processes, files or libvirt)
    ctx = verify.Context(root=kw['root'] or '/',
                         config_files=kw['nova_config_files'],
                         cloud=cloud, host=hosts[0], facts=facts,
                         origin=verify.origin_of(kw['root'],
                                                 kw['facts_file']))
    verdict = gate.gate(plans, ctx, kw['layers'] or gate.LAYERS)
    rows = [{'layer': c.layer, 'check': c.name, 'expected': c.expected,
             'live': c.live if c.live is not None else f'? {c.reason}',
             'status': c.status} for c in verdict.checks]
    return Result('gate', hosts, run_id, verdict.line(),
                  ['layer', 'check', 'expected', 'live', 'status'], rows,
                  verdict.to_dict(),
                  exit_code=EXIT_OK if verdict.passed else EXIT_DIFFERS)


_STEPS = {'preflight': _preflight, 'disable': _disable, 'drain': _drain,
          'enable': _enable, 'gate': _gate}
