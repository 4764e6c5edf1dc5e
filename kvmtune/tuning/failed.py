"""A plan's FAIL checks at apply time: which block, which the plan clears.

A tuner's host check (kvmtune.tuning.tuners.base.TunerCheck) that FAILs
says guests of the profile will not run as planned on this host. The
commands that apply a plan (``nova-conf apply``, ``boot apply``, ``pages
apply --profile``, ``flavor apply``) call ``refuse``: a FAIL that none of
the plan's own changes clears (no VT-x, no /dev/vhost-net) stops them,
each such check named with its fix in one line (kvmtune.errors), unless
the operator gives ``--accept-failed-checks``. A FAIL the plan's boot-time
changes clear (``staged``: a huge page pool its kernel arguments reserve,
a module option its modprobe.d file sets) is what ``boot apply`` and
``pages apply`` are for, and only a warning for the others.
"""

from collections.abc import Callable
from typing import TYPE_CHECKING

from kvmtune.errors import InputError
from kvmtune.tuning.tuners import base

if TYPE_CHECKING:
    from kvmtune.tuning.plan import Plan
    from kvmtune.tuning.tuners.base import TunerCheck


def staged(plan: 'Plan', check: 'TunerCheck') -> bool:
    """Whether the plan's own boot-time changes are the fix of ``check``:
    the kernel arguments its fix stages (``boot_args``) are the plan's (a
    huge page pool
    reserved at boot), or a module option the plan's modprobe.d file sets
    (kvm_intel ept=1). ``kvmtune boot apply`` and a reboot (for a pool,
    also ``kvmtune pages apply``) clear such a failure; any other failure
    nothing kvmtune writes can clear."""
    if not check.fix:
        return False
    if check.boot_args:
        return all(arg in plan.kernel_args for arg in check.boot_args)
    for content in plan.modprobe.values():
        for line in content.splitlines():
            words = line.split()
            if len(words) > 2 and words[0] == 'options' and any(
                    check.fix == base.module_reload_fix(words[1], option)
                    for option in words[2:]):
                return True
    return False


def failed_checks(
        plan: 'Plan') -> tuple[list['TunerCheck'], list['TunerCheck']]:
    """(blocking, staged): the plan's FAIL checks that nothing kvmtune
    writes clears, and those its boot-time changes clear (``staged``)."""
    failed = [check for check in plan.checks if check.status == 'fail']
    return ([c for c in failed if not staged(plan, c)],
            [c for c in failed if staged(plan, c)])


# The option every apply command takes to write a plan with FAIL checks
# (kvmtune.cmd.add_accept_failed_checks).
ACCEPT_FAILED = '--accept-failed-checks'


def refuse(plan: 'Plan', command: str, *, accept: bool = False,
           boot_time: bool = False,
           warn: 'Callable[[str], object] | None' = None) -> None:
    """Refuse to apply a plan with FAIL checks, unless ``accept``.

    ``command`` is the applying command's name (``kvmtune nova-conf
    apply``). A failure the plan's boot-time changes clear (``staged``)
    never blocks: ``boot_time`` (``boot apply``, ``pages apply``: the
    commands that make those changes) says nothing of it, any other
    command gives ``warn`` one line per such check naming its next step.
    Every other FAIL check is named in the one-line InputError (exit 2),
    before anything is written; with ``accept`` each is one ``warn`` line
    instead."""
    blocking, pending = failed_checks(plan)
    if warn is not None and not boot_time:
        for check in pending:
            now = (f'; or now: kvmtune pages apply --profile {plan.profile}'
                   if plan.hugepages and check.tuner == 'hugepages' else '')
            warn(f'FAIL {check.tuner} {check.name} until the plan\'s '
                 f'boot-time changes are booted: {check.message} (fix: '
                 f'kvmtune boot apply --profile {plan.profile}, then '
                 f'reboot{now})')
    if not blocking:
        return
    if accept:
        if warn is not None:
            for check in blocking:
                warn(f'FAIL {check.tuner} {check.name} accepted '
                     f'({ACCEPT_FAILED}): {check.message}')
        return
    names = '; '.join(f'FAIL {c.tuner} {c.name}: {c.message}'
                      for c in blocking)
    fixes = ''.join(f'{c.tuner} {c.name}: {c.fix}; ' for c in blocking
                    if c.fix)
    raise InputError(
        f'refused: the plan of {plan.profile} has {len(blocking)} FAIL '
        f'check(s) none of its changes clears: {names}',
        source=plan.facts_source, key=command,
        fix=f'{fixes}then run {command} again (or give {ACCEPT_FAILED} '
            'to write it anyway)')
