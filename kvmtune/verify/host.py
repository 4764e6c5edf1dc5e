"""The host layer: what the booted kernel and the loaded modules give.

Compares the plans against the live host (``ctx.root``: / or a tree made
by ``kvmtune host capture``), read through kvmtune.facts (the one reader
of /proc and /sys):

- ``cmdline <arg>``: every planned kernel argument is what the booted
  kernel kept of /proc/cmdline, judged by kvmtune.facts.cmdline (the one
  judgement boot apply and the plan use too): CPU lists (isolcpus,
  nohz_full, rcu_nocbs) compare as sets per housekeeping type (the
  operator's extra isolcpus flags are theirs; a second isolcpus the kernel
  ignores does not count), ``hugepages=`` with the size the kernel gives it
  (and per node when planned so). The arguments in /etc/default/grub do
  not count until a reboot: that is the drift this finds; one that
  ``kvmtune boot apply`` staged shows as "staged, reboot pending" (its
  reboot record). Fixes say add or replace, as the booted line needs.
- ``pages node<N> <size>``: the huge page pool of each planned node and
  size has at least the planned pages (free and used shown); short of a
  pool the booted command line asks for, the kernel could not reserve it
  at boot, and the fix says so: free memory at boot, or plan the host
  again with a smaller pool.
- ``module <name> <param>``: the planned module options (the plan's
  modprobe lines) are what /sys/module/<name>/parameters says; ``Y``/``1``
  and ``N``/``0`` are equal.
- ``vhost_net``: /dev/vhost-net is there when a plan's vhost_net tuner
  wants it.
- ``tuned``: when /etc/tuned/cpu-partitioning-variables.conf exists (the
  ``tuned`` export target was used on this host), tuned's active profile
  is cpu-partitioning and its ``isolated_cores`` equal the plan's
  dedicated CPUs.

What cannot be read is UNKNOWN with the reason, never a pass. With
``--facts`` (no tree, ``ctx.has_tree`` False) every check reads the facts
file alone: module parameters from its ``virt.modules``, and tuned (whose
files a facts file does not carry) is UNKNOWN naming ``--root``; this
machine's /sys and /etc are never read for another host.
"""

from collections.abc import Sequence
import os
from typing import Any
from typing import cast
from typing import TYPE_CHECKING

from kvmtune.facts import cmdline
from kvmtune.facts.cpulist import format_cpulist
from kvmtune.facts.cpulist import parse_cpulist
from kvmtune.facts.hostfs import HostFiles
from kvmtune.facts import kernel as kernel_args
from kvmtune.facts.types import Facts
from kvmtune import pagesize
from kvmtune import verify

if TYPE_CHECKING:
    from kvmtune.tuning.plan import Plan

LAYER = 'host'
CPU_SET_ARGS = ('isolcpus', 'nohz_full', 'rcu_nocbs')
TRUE = ('Y', 'y', '1')
FALSE = ('N', 'n', '0')
TUNED_VARIABLES = 'etc/tuned/cpu-partitioning-variables.conf'
TUNED_ACTIVE = 'etc/tuned/active_profile'
REBOOT_FIX = ('{change} on the kernel command line (kvmtune boot apply '
              '--profile P stages it: one argument per key), then reboot')


def _facts(ctx: verify.Context) -> Facts:
    if ctx.facts is None:
        if not ctx.has_tree:
            raise ValueError('a Context from --facts carries its facts')
        from kvmtune import facts as host_facts
        ctx.facts = host_facts.gather(ctx.root, probe_kvm=False)
    return ctx.facts


class _Rows:
    """Checks in order, one per (name, expected); a row that several
    plans share names all their profiles."""

    def __init__(self, host: str | None) -> None:
        self.host = host
        self.rows: dict[tuple[str, str], verify.Check] = {}

    def add(self, check: verify.Check, profile: str) -> None:
        key = (check.name, check.expected)
        if key in self.rows:
            have = self.rows[key]
            known = cast(str, have.profile)     # set when it was added
            if profile not in known.split(','):
                have.profile = known + f',{profile}'
            return
        check.host, check.profile = self.host, profile
        self.rows[key] = check

    def list(self) -> list[verify.Check]:
        return list(self.rows.values())


# -- the kernel command line ------------------------------------------------

def cmdline_checks(plan: 'Plan', line: str | None,
                   pending: dict[str, list[str]] | None = None
                   ) -> list[verify.Check]:
    """[Check] of ``plan``'s kernel arguments against the booted ``line``
    (None: /proc/cmdline could not be read), judged by what the kernel
    keeps of it (kvmtune.facts.cmdline, the judgement boot apply makes
    too). ``pending``: the reboot record's reasons (kvmtune.boot.record):
    an argument boot apply staged shows as staged, reboot pending."""
    checks = []
    booted = None if line is None else cmdline.read(line)
    items = [] if booted is None else cmdline.judge(plan.kernel_args,
                                                    booted)
    staged = cmdline.staged_args(plan.kernel_args, booted) \
        if booted is not None else list(plan.kernel_args)
    waiting = {arg for items_ in (pending or {}).values()
               for arg in items_}
    for index, arg in enumerate(plan.kernel_args):
        if booted is None:
            key = cmdline.key_of(arg)
            checks.append(verify.unknown(
                LAYER, f'cmdline {key}', arg,
                '/proc/cmdline could not be read'))
            continue
        item = items[index]
        live = item.live
        if item.ok:
            fix = None
        elif arg in waiting:
            live += ' (staged, reboot pending)'
            fix = ('reboot: kvmtune boot apply staged '
                   f'{staged[index]}')
        else:
            fix = REBOOT_FIX.format(change=cmdline.fix(item, staged[index]))
        checks.append(verify.Check(
            layer=LAYER, name=f'cmdline {item.name}', expected=arg,
            live=live, status=verify.PASS if item.ok else verify.DRIFT,
            fix=fix))
    return checks


# -- huge page pools -------------------------------------------------------

def _asked_at_boot(cmdline: str | None, plan: 'Plan'
                   ) -> dict[tuple[int, int], str]:
    """{(node, size_kb): the booted command line's arguments} for each of
    ``plan``'s pools that the booted command line asks the kernel to
    reserve at boot, whole: its pages on that node (``hugepages=N:C``),
    or its pages of that size in all (spread over the nodes)."""
    if not cmdline:
        return {}
    wanted: dict[int, int] = {}
    for pool in plan.hugepages:
        wanted[pool['size_kb']] = wanted.get(pool['size_kb'], 0) + \
            pool['count']
    found = {}
    for entry in kernel_args.parse_args(cmdline)['hugepages']:
        size_kb = entry.get('size_kb')
        arg = (f'hugepagesz={entry["size"]} hugepages='
               + (','.join(f'{n}:{c}' for n, c in entry['per_node'].items())
                  if 'per_node' in entry else str(entry['count'])))
        for pool in plan.hugepages:
            if pool['size_kb'] != size_kb:
                continue
            per_node = entry.get('per_node')
            if (per_node.get(str(pool['node']), 0) >= pool['count']
                    if per_node is not None
                    else entry['count'] >= wanted[size_kb]):
                found[pool['node'], size_kb] = arg
    return found


def pool_checks(plan: 'Plan', facts: Facts) -> list[verify.Check]:
    """[Check] of ``plan``'s huge page pools against the live ones. A
    pool the booted command line asks for that is short was most likely
    not reserved by the kernel at boot (the rollout's gate checks right
    after the reboot): its fix says that first (``pages apply`` at run
    time would not make the next boot's pool whole), then the fix of a
    pool shrunk since."""
    nodes = {node['id']: node for node in
             (facts.get('numa') or {}).get('nodes') or []}
    at_boot = _asked_at_boot((facts.get('kernel') or {}).get('cmdline'),
                             plan)
    checks = []
    for pool in plan.hugepages:
        size = pagesize.text(pool['size_kb'], compact=True)
        name = f'pages node{pool["node"]} {size}'
        expected = f'>= {pool["count"]}'
        fix = (f'kvmtune pages apply {pool["node"]}:{size}:{pool["count"]}'
               + (' (1G pages usually need hugepagesz=1G hugepages=N on '
                  'the kernel command line and a reboot)'
                  if pool['size_kb'] >= 1024 * 1024 else ''))
        asked = at_boot.get((pool['node'], pool['size_kb']))
        if asked is not None:
            # the boot fixed, or another plan (a rollout: --replan HOST)
            fix = (f'the kernel could not reserve the pool at boot (the '
                   f'booted command line asks for {asked}): free the '
                   'memory it needs at boot (fewer boot-time reservations, '
                   'such as crashkernel=) and reboot, or plan the host '
                   'again with a smaller pool (a plan made now keeps the '
                   'pool the host has) and boot that (shrunk since the '
                   f'boot: kvmtune pages apply {pool["node"]}:{size}:'
                   f'{pool["count"]})')
        node: Any = nodes.get(pool['node']) or {}
        live = next((p for p in node.get('hugepages', [])
                     if p.get('size_kb') == pool['size_kb']), None)
        if pool['node'] not in nodes:
            checks.append(verify.unknown(
                LAYER, name, expected, f'no NUMA node {pool["node"]} here'))
        elif live is None or live.get('total') is None:
            checks.append(verify.unknown(
                LAYER, name, expected, f'the {size} pool of node '
                f'{pool["node"]} could not be read'))
        else:
            # total is known: checked above
            total, free = cast(int, live['total']), live.get('free')
            used = '' if free is None else \
                f' ({free} free, {total - free} in use)'
            ok = total >= pool['count']
            checks.append(verify.Check(
                layer=LAYER, name=name, expected=expected,
                live=f'{total}{used}',
                status=verify.PASS if ok else verify.DRIFT,
                fix=None if ok else fix))
    return checks


# -- kvm module parameters -------------------------------------------------

def planned_module_options(plan: 'Plan') -> dict[tuple[str, str], str]:
    """{(module, param): value} from the plan's modprobe lines."""
    found = {}
    for text in plan.modprobe.values():
        for line in text.splitlines():
            words = line.split()
            if len(words) < 3 or words[0] != 'options':
                continue
            for item in words[2:]:
                param, _, value = item.partition('=')
                found[(words[1], param)] = value
    return found


def _normal(value: str | None) -> str | None:
    if value in TRUE:
        return 'Y'
    if value in FALSE:
        return 'N'
    return value


def module_checks(plan: 'Plan', files: HostFiles | None,
                  facts: Facts | None = None) -> list[verify.Check]:
    """[Check] of the plan's module options against /sys/module under
    ``files``' root, or (``files`` None: a facts file, no tree) against
    the parameters ``facts`` recorded (``virt.modules``)."""
    from kvmtune.facts import virt

    virt_facts: Any = facts.get('virt') if facts else None
    recorded = (virt_facts or {}).get('modules') or {}
    checks = []
    for (module, param), value in planned_module_options(plan).items():
        name = f'module {module} {param}'
        expected = f'{param}={value}'
        fix = (f'echo "options {module} {param}={value}" >> '
               f'/etc/modprobe.d/kvm.conf, then reload {module} with no '
               f'guest running (modprobe -r {module} && modprobe {module})')
        if files is not None:
            params = virt.module_params(files, module)
        elif module in recorded:
            params = recorded[module]
        else:
            checks.append(verify.unknown(
                LAYER, name, expected, f'the facts file does not record '
                f'module {module}: give --root (a tree made by kvmtune '
                'host capture)'))
            continue
        if params is None:
            checks.append(verify.Check(
                layer=LAYER, name=name, expected=expected,
                live='module not loaded', status=verify.DRIFT,
                fix=f'modprobe {module} {param}={value}'))
            continue
        live = params.get(param)
        if live is None:
            checks.append(verify.unknown(
                LAYER, name, expected, f'/sys/module/{module}/parameters/'
                f'{param} could not be read'))
            continue
        same = _normal(live) == _normal(value)
        checks.append(verify.Check(
            layer=LAYER, name=name, expected=expected,
            live=f'{param}={live}',
            status=verify.PASS if same else verify.DRIFT,
            fix=None if same else fix))
    return checks


# -- vhost-net and tuned ---------------------------------------------------

def vhost_checks(plan: 'Plan', facts: Facts) -> list[verify.Check]:
    if not any(check.tuner == 'vhost_net' for check in plan.checks):
        return []
    vhost = facts.get('vhost_net') or {}
    ok = bool(vhost.get('device'))
    live = ('/dev/vhost-net present' if ok else
            f'/dev/vhost-net absent (module {vhost.get("module")})')
    return [verify.Check(layer=LAYER, name='vhost_net',
                         expected='/dev/vhost-net present', live=live,
                         status=verify.PASS if ok else verify.DRIFT,
                         fix=None if ok else 'modprobe vhost_net (and add '
                         'vhost_net to /etc/modules)')]


def _read_small(root: str, path: str) -> str | None:
    from kvmtune.errors import InputError
    from kvmtune import inputs
    try:
        return inputs.read_text(os.path.join(root, path),
                                max_bytes=1 << 16)
    except InputError:
        return None


def tuned_checks(plan: 'Plan', root: str) -> list[verify.Check]:
    # tuned's package ships this file (isolated_cores from a function):
    # only one written by "kvmtune export --target tuned" says the tuned
    # target was chosen for this host.
    text = _read_small(root, TUNED_VARIABLES)
    if text is None or 'Written by "kvmtune export"' not in text:
        return []
    # a single-valued option: a string
    dedicated = cast(str | None, (plan.nova_conf.get('compute') or {}).get(
        'cpu_dedicated_set'))
    checks = []
    active = _read_small(root, TUNED_ACTIVE)
    if active is None:
        checks.append(verify.unknown(LAYER, 'tuned profile',
                                     'cpu-partitioning',
                                     f'/{TUNED_ACTIVE} could not be read'))
    else:
        ok = 'cpu-partitioning' in active.split()
        checks.append(verify.Check(
            layer=LAYER, name='tuned profile', expected='cpu-partitioning',
            live=' '.join(active.split()) or '(none)',
            status=verify.PASS if ok else verify.DRIFT,
            fix=None if ok else 'tuned-adm profile cpu-partitioning, then '
                                'reboot'))
    if dedicated:
        cores = None
        for line in text.splitlines():
            key, _, value = line.partition('=')
            if key.strip() == 'isolated_cores':
                cores = value.strip()
        try:
            ok = cores is not None and set(parse_cpulist(cores)) == set(
                parse_cpulist(dedicated))
        except ValueError:
            ok = False
        checks.append(verify.Check(
            layer=LAYER, name='tuned isolated_cores',
            expected=format_cpulist(parse_cpulist(dedicated)),
            live=cores if cores is not None else 'absent',
            status=verify.PASS if ok else verify.DRIFT,
            fix=None if ok else f'set isolated_cores={dedicated} in '
            f'/{TUNED_VARIABLES} (kvmtune export --target tuned), then '
            'tuned-adm profile cpu-partitioning and reboot'))
    return checks


def tuned_unknown(plan: 'Plan') -> list[verify.Check]:
    """--facts: whether the tuned target was used is in /etc/tuned, which
    a facts file does not carry (only plans with dedicated CPUs would
    have it)."""
    if not (plan.nova_conf.get('compute') or {}).get('cpu_dedicated_set'):
        return []
    return [verify.unknown(LAYER, 'tuned profile', 'cpu-partitioning when '
                           'the tuned export target is used',
                           f'a facts file does not carry /{TUNED_VARIABLES}'
                           ': give --root (a tree made by kvmtune host '
                           'capture) to check it')]


def _pending(root: str) -> dict[str, list[str]]:
    """The reboot record's reasons on ``root`` ({} when none, or one that
    cannot be read: the checks say drift without it)."""
    from kvmtune.boot import record
    from kvmtune.errors import InputError

    try:
        return record.pending(root)
    except InputError:
        return {}


def checks(plans: Sequence['Plan'],
           ctx: verify.Context) -> list[verify.Check]:
    """The host layer's checks for ``plans`` on ``ctx.root`` (or on
    ``ctx.facts`` alone when there is no tree)."""
    from kvmtune.facts import hostfs

    facts = _facts(ctx)
    files = hostfs.HostFiles(ctx.root) if ctx.has_tree else None
    line = (facts.get('kernel') or {}).get('cmdline')
    # the reboot record is the host's own: none with --facts
    pending = _pending(ctx.root) if ctx.has_tree else {}
    rows = _Rows(ctx.host or facts.get('hostname'))
    for plan in plans:
        for check in (cmdline_checks(plan, line, pending) +
                      pool_checks(plan, facts) +
                      module_checks(plan, files, facts) +
                      vhost_checks(plan, facts) +
                      (tuned_checks(plan, ctx.root) if ctx.has_tree
                       else tuned_unknown(plan))):
            rows.add(check, plan.profile)
    return rows.list()
