"""The nova-compute layer: the options the running service really reads.

Finds the running nova-compute (``ctx.service`` 'scheduler': the
nova-scheduler) under ``ctx.root``/proc (kvmtune.tuning.novaconf.services),
reads its command line (and environment, for OS_<GROUP>__<OPTION> overrides and
the HOME oslo.config searches), and computes the files it reads, in
oslo.config's order, with kvmtune.tuning.novaconf.effective. Each planned
option that service reads (kvmtune.tuning.novaconf.services, from Nova's
source) is then compared with the value that wins:

- ``option [section] name``: PASS when equal (CPU sets as sets, comma
  lists as sets, a multi-valued option's planned entries among the live
  ones), else DRIFT naming the file whose value wins;
- ``restart``: DRIFT when the process started before the last change to
  any file it reads ("nova.conf edited without a restart").

``ctx.config_files``/``ctx.config_dirs`` replace the discovery (containers:
kolla's files live under /etc/kolla/nova-compute on the host). No process
and no files given, or /proc/<pid> unreadable: UNKNOWN with the reason.
Another host's tree (``--root``) is searched under its own proc/ only; a
facts file (``--facts``) has no processes: without the files given, the
layer is UNKNOWN naming the flags that give them. This machine's
processes are never read for another host.
"""

from collections.abc import Sequence
import os
from typing import Any
from typing import cast
from typing import TYPE_CHECKING

from kvmtune.facts.cpulist import parse_cpulist
from kvmtune.tuning.novaconf import effective
from kvmtune.tuning.novaconf import services
from kvmtune import verify

if TYPE_CHECKING:
    from kvmtune.tuning.plan import Plan

LAYER = 'novacompute'


def _read(path: str, limit: int = 1 << 20) -> bytes | None:
    from kvmtune.errors import InputError
    from kvmtune import inputs
    try:
        return inputs.read_bytes(path, max_bytes=limit)
    except InputError:
        return None


def environ_of(proc: str, pid: int) -> dict[str, str]:
    """The process's environment ({} when unreadable: not root)."""
    data = _read(os.path.join(proc, str(pid), 'environ'))
    env: dict[str, str] = {}
    for item in (data or b'').split(b'\0'):
        key, sep, value = item.decode('utf-8', 'replace').partition('=')
        if sep:
            env[key] = value
    return env


def started_at(proc: str, pid: int) -> float | None:
    """The process's start as Unix time, or None: /proc/<pid>/stat field
    22 (clock ticks after boot) plus /proc/stat's btime (proc(5))."""
    stat = _read(os.path.join(proc, str(pid), 'stat'))
    boot = _read(os.path.join(proc, 'stat'))
    if stat is None or boot is None:
        return None
    try:
        # comm (field 2) may hold spaces and parentheses: split after it
        fields = stat.decode().rpartition(')')[2].split()
        ticks = int(fields[19])
        btime = next(int(line.split()[1]) for line in
                     boot.decode().splitlines() if line.startswith('btime '))
    except (ValueError, IndexError, StopIteration):
        return None
    return btime + ticks / os.sysconf('SC_CLK_TCK')


class GivenOnly(effective.Reader):
    """The files given and nothing else (``--facts``: no tree): the
    default search directories oslo.config would add (/etc/nova/nova.conf.d
    ...) would be this machine's, not the host's."""

    def search_dirs(self) -> list[str]:
        return []


def _same(option: str, planned: Any, live: Any) -> bool:
    if isinstance(planned, list):
        return live is not None and all(item in live for item in planned)
    if live is None:
        return False
    if option.endswith('_set'):
        try:
            return set(parse_cpulist(planned)) == set(parse_cpulist(live))
        except ValueError:
            return False
    if ',' in planned or ',' in live:
        return ({item.strip() for item in planned.split(',')} ==
                {item.strip() for item in live.split(',')})
    same: bool = planned == live
    return same


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return '; '.join(value)
    return 'unset' if value is None else value


def _reads(service: str, section: str, option: str) -> bool:
    try:
        readers = services.readers(section, option)
    except services.UnknownOption:
        return service == services.COMPUTE
    if service == services.SCHEDULER:
        return services.SCHEDULER in readers
    return service in readers


def _target(ctx: verify.Context) -> tuple[
        list[str] | None, int | None, dict[str, str], str | None]:
    """(argv, pid or None, environ, why-not) of the service to check."""
    name = f'nova-{ctx.service}'
    if ctx.config_files or ctx.config_dirs:
        argv = [name]
        for path in ctx.config_files or []:
            argv += ['--config-file', path]
        for path in ctx.config_dirs or []:
            argv += ['--config-dir', path]
        return argv, None, {}, None
    if not ctx.has_tree:
        # a facts file records no processes; this machine's are another
        # host's
        return None, None, {}, (f'a facts file has no {name} process: '
                                'give --nova-config-file/--nova-config-dir '
                                '(that host\'s files), or --root')
    proc = os.path.join(ctx.root, 'proc')
    found = [(pid, argv) for pid, service, argv
             in services.processes(proc) if service == ctx.service]
    if not found:
        where = (f'in {proc}' if ctx.elsewhere else 'on this host')
        return None, None, {}, (f'no {name} process {where} (give its '
                                'files with --nova-config-file/'
                                '--nova-config-dir)')
    pid, argv = found[0]        # the master: the lowest pid
    return argv, pid, environ_of(proc, pid), None


def checks(plans: Sequence['Plan'],
           ctx: verify.Context) -> list[verify.Check]:
    """The nova-compute layer's checks for ``plans``."""
    name = f'nova-{ctx.service}'
    argv, pid, env, why = _target(ctx)
    planned: list[tuple[str, str, str, Any]] = []
    for plan in plans:
        for section, options in plan.nova_conf.items():
            for option, value in options.items():
                if _reads(ctx.service, section, option):
                    planned.append((plan.profile, section, option, value))
    if why:
        return [verify.unknown(LAYER, f'{name} options', 'running', why,
                               host=ctx.host)]
    reader = (effective.Reader(ctx.root, home=env.get('HOME'))
              if ctx.has_tree else GivenOnly())
    # argv is None only with a why, returned above
    eff = effective.effective(cast(list[str], argv), reader, environ=env)
    found = []
    seen: set[tuple[str, str, str]] = set()
    for profile, section, option, value in planned:
        key = (section, option, str(value))
        if key in seen:
            continue
        seen.add(key)
        live, where = eff.get(section, option, multi=isinstance(value, list))
        check = f'option [{section}] {option}'
        if _same(option, value, live):
            found.append(verify.Check(
                layer=LAYER, name=check, expected=_shown(value),
                live=_shown(live), status=verify.PASS, host=ctx.host,
                profile=profile))
            continue
        source = ', '.join(where) if isinstance(where, list) else where
        fix = (f'kvmtune nova-conf apply --profile {profile} '
               + (f'--config {source} ' if source and source != 'environment'
                  else '') + f'(then restart {name})')
        if source == 'environment':
            fix = (f'unset OS_{section.upper()}__{option.upper()} in '
                   f'{name}\'s environment (it beats every file)')
        elif source and source not in (s.path for s in eff.sources[:1]):
            fix += f'; {source} is read last and wins: change it there'
        found.append(verify.Check(
            layer=LAYER, name=check, expected=_shown(value),
            live=_shown(live) + (f' (from {source})' if source else ''),
            status=verify.DRIFT, fix=fix, host=ctx.host, profile=profile))
    for path, problem in sorted(eff.unreadable.items()):
        found.append(verify.unknown(LAYER, f'file {path}', 'readable',
                                    problem, host=ctx.host))
    if pid is not None:
        found.append(_restart(ctx, pid, eff, name))
    return found


# /proc/stat's btime is whole seconds (proc(5)), so started_at() may read up
# to a second early: a file written within that second of a restart (the
# apply-then-restart of every deployment tool) is not evidence of a missed
# restart. A file changed later than that is.
START_RESOLUTION = 1.0


def _restart(ctx: verify.Context, pid: int, eff: effective.Effective,
             name: str) -> verify.Check:
    proc = os.path.join(ctx.root, 'proc')
    started = started_at(proc, pid)
    expected = 'started after its files last changed'
    if started is None:
        return verify.unknown(LAYER, f'{name} restart', expected,
                              f'/proc/{pid}/stat could not be read',
                              host=ctx.host)
    changed = []
    for source in eff.sources:
        try:
            changed.append((os.stat(effective.Reader(ctx.root).at(
                source.path)).st_mtime, source.path))
        except OSError:
            continue
    newest = max(changed, default=None)
    if newest is None or newest[0] <= started + START_RESOLUTION:
        return verify.Check(layer=LAYER, name=f'{name} restart',
                            expected=expected, live=f'pid {pid} started '
                            'after them', status=verify.PASS, host=ctx.host)
    return verify.Check(
        layer=LAYER, name=f'{name} restart', expected=expected,
        live=f'pid {pid} started {newest[0] - started:.0f} s before '
             f'{newest[1]} changed',
        status=verify.DRIFT, host=ctx.host,
        fix=f'restart {name} (systemctl restart {name}, or the deployment '
            'tool\'s restart) so it reads its files again')
