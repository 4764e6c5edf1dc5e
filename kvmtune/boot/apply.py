"""Write what a plan needs at the next boot, and record the reboot.

``apply(profile, root)`` is the one function ``kvmtune boot apply`` (and
the fleet rollout's apply step) calls:

1. plans the profile on the host tree ``root`` through the front door
   (kvmtune.tuning.plan.for_host: a plan that withheld isolcpus or a huge
   page pool is refused), or takes the plan given (``plan``: one made
   before, such as the plan a rollout applied to the host before its
   reboot, kvmtune.rollout.state), and compares it with what the host
   booted (kvmtune.boot.changes: refused when that is unknown or
   doubtful);
2. when the booted command line lacks some of the plan's kernel
   arguments, writes them where the host's boot loader takes them
   (kvmtune.boot.loader; an unknown boot loader is refused before
   anything is written) and the plan's modprobe.d files, all through the
   one atomic writer, each only when its content changes;
3. runs the distribution's tool (update-grub, grub2-mkconfig, grubby) only
   when ``root`` is this machine's own ``/``: for any other tree the
   commands are returned (and printed) as not run, so a test or a dry
   preparation never touches the machine's boot loader;
4. writes the reboot record (kvmtune.boot.record) with the reasons, or
   removes it when the booted host already runs the whole plan.

Nothing is written when the booted command line already has every
argument and the files hold what they should: a second run changes
nothing.
"""

from collections.abc import Iterable
import dataclasses
import os
import shutil
import subprocess
from typing import Any
from typing import TYPE_CHECKING

from kvmtune.boot import changes
from kvmtune.boot import loader as loaders
from kvmtune.boot import record
from kvmtune.errors import InputError
from kvmtune.errors import KvmtuneError
from kvmtune.facts import cmdline
from kvmtune import fileio
from kvmtune import inputs

if TYPE_CHECKING:
    from kvmtune.facts.types import Facts
    from kvmtune.tuning.plan import Plan
    from kvmtune.tuning.profiles import Profile

# How long a boot loader tool may take (update-grub probes every disk).
TOOL_TIMEOUT = 600


@dataclasses.dataclass
class Result:
    """What ``apply`` did (or, dry, would do) on one host."""

    profile: str
    root: str
    loader: str | None = None
    kernel_args: list[str] = dataclasses.field(default_factory=list)
    # [(path on the host, 'wrote' | 'unchanged' | 'would write')]
    files: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    commands: list[list[str]] = dataclasses.field(default_factory=list)
    # the commands ran (root is this machine's /, and not dry)
    ran: bool = False
    reasons: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    # 'written' | 'removed' | 'unchanged' | 'none' | 'would write' | ...
    record: str = 'none'
    dry_run: bool = False
    # the kernel arguments the next boot gets (each boot entry's line as
    # kvmtune staged it, read back by the kernel's rules), when it staged
    cmdline: list[str] = dataclasses.field(default_factory=list)
    # the plan it staged (kvmtune.tuning.plan.Plan): to_dict()'s 'plan',
    # what the rollout's gate verifies the host against after the reboot
    plan: Any = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def reboot_required(self) -> bool:
        return bool(self.reasons)

    def to_dict(self) -> dict[str, Any]:
        return {'profile': self.profile, 'root': self.root,
                'loader': self.loader, 'kernel_args': self.kernel_args,
                'files': [{'path': path, 'status': status}
                          for path, status in self.files],
                'commands': [{'argv': argv, 'ran': self.ran}
                             for argv in self.commands],
                'reboot_required': self.reboot_required,
                'reasons': {reason: self.reasons.get(reason, [])
                            for reason in record.REASONS},
                'record': self.record, 'dry_run': self.dry_run,
                'staged_cmdline': self.cmdline,
                'plan': None if self.plan is None else self.plan.to_dict()}


def is_this_machine(root: str) -> bool:
    return os.path.realpath(root) == '/'


def _read(path: str) -> str | None:
    try:
        return inputs.read_text(path, max_bytes=1 << 20)
    except InputError as exc:
        if exc.problem == 'no such file':
            return None
        raise


def _modprobe_files(plan: Any) -> dict[str, str]:
    from kvmtune.tuning.export import common

    text = common.modprobe_text(plan)
    if not text:
        return {}
    return {'/' + common.MODPROBE_FILE: (
        f'# Written by kvmtune boot apply --profile {plan.profile}: module '
        'options of its plan.\n' + text)}


def _loaded(root: str, modules: Iterable[str]
            ) -> dict[str, dict[str, str] | None]:
    from kvmtune.facts import hostfs
    from kvmtune.facts import virt

    files = hostfs.HostFiles(root)
    return {module: virt.module_params(files, module) for module in modules}


def _loader(root: str, needed: bool) -> 'loaders.Loader | None':
    """The tree's boot loader; when the plan has no kernel argument, None
    for a tree kvmtune does not know how to boot (nothing to write there,
    and nothing of kvmtune's to take back)."""
    try:
        return loaders.detect(root)
    except InputError:
        if needed:
            raise
        return None


def _check_writable(path: str) -> None:
    """fileio.check_writable, also for a file whose directory (grub.d,
    modprobe.d) is still to be made: its nearest existing parent then."""
    directory = os.path.dirname(path)
    if os.path.isdir(directory):
        fileio.check_writable(path)
        return
    while not os.path.lexists(directory):
        directory = os.path.dirname(directory)
    if not os.path.isdir(directory) or not os.access(
            directory, os.W_OK | os.X_OK):
        raise InputError(f'cannot create the directory of it under '
                         f'{directory}; nothing was written', source=path,
                         fix='run as root, or give a --root you may write')


def _tools_present(argvs: list[list[str]]) -> None:
    for argv in argvs:
        if shutil.which(argv[0]) is None:
            raise InputError(f'{argv[0]} is not installed here, so the boot '
                             'entries cannot be regenerated; nothing was '
                             'written', key=argv[0],
                             fix=f'install the package that has {argv[0]}')


def _run(argv: list[str]) -> None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True,
                              timeout=TOOL_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise KvmtuneError(f'{" ".join(argv)} did not run: {exc}',
                           fix=f'run {argv[0]} by hand; the files are '
                               'written, the reboot record is not') from None
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ['no output'])[-1]
        raise KvmtuneError(f'{" ".join(argv)} failed (exit '
                           f'{done.returncode}): {tail}',
                           fix=f'fix it and run {argv[0]} by hand; the files '
                               'are written, the reboot record is not')


def apply(profile: 'str | Profile | None', root: str = '/',
          config_files: Iterable[str] = (), dry_run: bool = False,
          facts: 'Facts | None' = None, plan: 'Plan | None' = None
          ) -> Result:
    """Stage ``profile``'s boot-time changes on the host tree ``root``
    (module docstring); InputError, with nothing written, for bad input,
    a withheld plan, unknown or doubtful facts, an unknown boot loader or
    a missing tool.

    ``profile``: a name, a file or a Profile already loaded; ``plan``:
    a plan made before, staged as it is instead (``profile`` None: the
    plan names its own; the rollout's --check passes the plan it made
    through the front door, for_host, which refused it if it withheld);
    ``facts``: the facts of ``root`` when the caller has read them
    already (the rollout's --check plans many hosts:
    kvmtune.rollout.check), else read here."""
    from kvmtune import facts as host_facts
    from kvmtune.tuning import plan as plans

    live = is_this_machine(root)
    if facts is None:
        facts = host_facts.resolve(root=None if live else root)
    if plan is None:
        if profile is None:
            raise InputError('no profile and no plan given',
                             key='--profile', fix='give --profile NAME or '
                                                  '--plan FILE')
        plan, = plans.for_host([profile], facts=facts,
                               config_files=config_files)
    result = Result(profile=plan.profile, root=root,
                    kernel_args=list(plan.kernel_args), dry_run=dry_run,
                    plan=plan)
    reasons = changes.cmdline_reasons(plan.kernel_args, facts, root)
    writes: dict[str, str] = {}
    old: list[str] = []
    loader = _loader(root, needed=bool(plan.kernel_args))
    if loader is not None:
        result.loader = loader.name
        old = loaders.owned_args(loader, root)
        for reason, items in changes.dropped_reasons(
                old, plan.kernel_args, facts).items():
            reasons.setdefault(reason, []).extend(items)
        # Written when the booted line lacks an argument, or when the file
        # would give the next boot other arguments than the plan's.
        if reasons or (old and not _same_args(old, plan.kernel_args)):
            # One argument per key: the words of the keys the plan sets
            # come out of the boot loader's lines, the operator's
            # isolcpus flags stay (kvmtune.facts.cmdline).
            staging = loaders.stage(loader, root, plan.kernel_args, old,
                                    changes.booted_line(facts, root))
            result.kernel_args = staging.args
            result.cmdline = staging.lines
            writes['/' + loader.config] = loaders.render(
                loader, root, plan.profile, staging.args, staging.resets)
            # Run also when the file is as it should be but the booted
            # line lacks arguments: a run before may have written it and
            # failed in the tool (the tools are idempotent).
            result.commands = loaders.commands(
                loader, staging.remove + [
                    arg for arg in old if arg not in staging.drop
                    and arg not in plan.kernel_args], staging.args)
    modprobe = _modprobe_files(plan)
    writes.update(modprobe)
    modules = {module for text in modprobe.values()
               for module, _, _ in changes.modprobe_options(text)}
    reasons.update(changes.module_reasons(modprobe,
                                          _loaded(root, sorted(modules))))
    result.reasons = {reason: reasons[reason] for reason in record.REASONS
                      if reason in reasons}

    pending = [(path, text) for path, text in writes.items()
               if _read(os.path.join(root, path.lstrip('/'))) != text]
    for path, text in writes.items():
        if all(path != p for p, _ in pending):
            result.files.append((path, 'unchanged'))
    result.ran = live and not dry_run and bool(result.commands)
    if result.ran:
        _tools_present(result.commands)
    for path, _ in pending:
        _check_writable(os.path.join(root, path.lstrip('/')))
    if result.reasons:
        _check_writable(record.path(root))
    if dry_run:
        result.files += [(path, 'would write') for path, _ in pending]
        result.record = _record_change(root, plan.profile, result.reasons,
                                       dry=True)
        return result
    for path, text in pending:
        full = os.path.join(root, path.lstrip('/'))
        os.makedirs(os.path.dirname(full), exist_ok=True)
        fileio.write_atomic(full, text, mode=0o644)
        result.files.append((path, 'wrote'))
    if result.ran:
        for argv in result.commands:
            _run(argv)
    result.record = _record_change(root, plan.profile, result.reasons)
    return result


def _same_args(old: list[str], planned: list[str]) -> bool:
    """kvmtune's file holds the plan's arguments by meaning (its isolcpus
    may carry the operator's flags besides the plan's CPUs)."""
    keys = {cmdline.key_of(arg) for arg in old}
    return keys == {cmdline.key_of(arg) for arg in planned} and all(
        item.ok for item in cmdline.judge(planned, cmdline.read(old)))


def _record_change(root: str, profile: str, reasons: dict[str, list[str]],
                   dry: bool = False) -> str:
    """Write or remove the reboot record; what happened to it."""
    current = record.read(root)
    if not reasons:
        if current is None:
            return 'none'
        if dry:
            return 'would remove'
        record.remove(root)
        return 'removed'
    if current is not None and current['profile'] == profile \
            and current['boot_id'] == record.boot_id(root) \
            and {k: v for k, v in current['reasons'].items() if v} \
            == reasons:
        return 'unchanged'
    if dry:
        return 'would write'
    record.write(root, profile, reasons)
    return 'written'
