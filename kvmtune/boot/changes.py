"""What the booted host lacks of a plan: the reboot reasons.

- ``cmdline``: a kernel argument of the plan that the booted command line
  (/proc/cmdline) does not have with that value (isolcpus=, ...);
- ``hugepages``: the huge page pool arguments (default_hugepagesz=,
  hugepagesz=, hugepages=) when the booted line does not reserve the same
  pools: compared as the kernel reads them (kvmtune.facts.kernel), so the
  spelling (2M, 2048k) does not count, the pairing of sizes and counts does;
- ``module``: a module option of the plan's modprobe.d file that the loaded
  module runs with another value (/sys/module/<m>/parameters/<p>; bool
  parameters print Y/N, so Y equals 1). A module that is not loaded takes
  the file's options when it loads: nothing pending.

An argument kvmtune wrote before (its GRUB file holds it) that the plan no
longer has and the booted line still has is pending too, listed with a
leading ``-`` (``-isolcpus=2-19``): the next boot drops it.

Facts that are missing or doubtful refuse, never guess: no booted command
line to compare with, or a booted argument of a key the plan sets that the
kernel could not parse either.
"""

from collections.abc import Mapping

from kvmtune.errors import InputError
from kvmtune.facts import kernel
from kvmtune.facts.types import Facts
from kvmtune.facts.types import KernelArgs

HUGEPAGE_KEYS = ('default_hugepagesz', 'hugepagesz', 'hugepages')
_TRUE = {'y', '1', 'yes', 'on', 'true'}
_FALSE = {'n', '0', 'no', 'off', 'false'}


def _key(arg: str) -> str:
    return arg.partition('=')[0]


def _pair(arg: str) -> tuple[str, str | None]:
    """``key=value`` as kernel.split_cmdline gives it."""
    key, eq, value = arg.partition('=')
    return key, value if eq else None


_Pool = tuple[int | None, int, str | None]


def _pools(args: KernelArgs) -> list[_Pool]:
    """(size_kb, count, per-node counts) of each hugepages= argument."""
    return sorted(((entry.get('size_kb'), entry['count'],
                    repr(sorted(entry.get('per_node', {}).items()))
                    if 'per_node' in entry else None)
                   for entry in args['hugepages']), key=repr)


def _hugepages_booted(wanted: list[str], booted: KernelArgs) -> bool:
    want = kernel.parse_args(' '.join(wanted))
    if want['default_hugepagesz'] is not None and kernel.size_kb(
            want['default_hugepagesz']) != kernel.size_kb(
            booted['default_hugepagesz']
            or kernel.X86_DEFAULT_HUGEPAGESZ):
        return False
    have = _pools(booted)
    return all(pool in have for pool in _pools(want))


def cmdline_reasons(kernel_args: list[str], facts: Facts, source: str
                    ) -> dict[str, list[str]]:
    """{'cmdline': [...], 'hugepages': [...]}: the plan's ``kernel_args``
    the booted command line of ``facts`` lacks (only reasons that have
    some); InputError when the booted line is unknown or doubtful."""
    if not kernel_args:
        return {}
    booted_line = facts['kernel']['cmdline']
    if booted_line is None:
        raise InputError(
            'the booted command line is unknown (no proc/cmdline), so '
            'whether isolcpus or huge page reservations are already booted '
            'cannot be told; refused', source=source, key='proc/cmdline',
            fix='run on the host itself, or capture it again with kvmtune '
                'host capture')
    booted = kernel.parse_args(booted_line)
    keys = {_key(arg) for arg in kernel_args}
    doubtful = [arg for arg in booted.get('invalid', []) if _key(arg) in keys]
    if doubtful:
        raise InputError(
            f'the booted command line has {doubtful[0]!r}, which the kernel '
            'could not parse either: what it runs with is doubtful; '
            'refused', source=source, key='proc/cmdline',
            fix='correct that argument in the boot loader and reboot first')
    pairs = kernel.split_cmdline(booted_line)
    reasons: dict[str, list[str]] = {}
    pool_args = [arg for arg in kernel_args if _key(arg) in HUGEPAGE_KEYS]
    other = [arg for arg in kernel_args if _key(arg) not in HUGEPAGE_KEYS]
    missing = [arg for arg in other if _pair(arg) not in pairs]
    if missing:
        reasons['cmdline'] = missing
    if pool_args and not _hugepages_booted(pool_args, booted):
        reasons['hugepages'] = pool_args
    return reasons


def modprobe_options(text: str) -> list[tuple[str, str, str]]:
    """[(module, option, value)] of modprobe.d ``options`` lines."""
    found = []
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] == 'options':
            for word in words[2:]:
                option, _, value = word.partition('=')
                found.append((words[1], option, value))
    return found


def _same(wanted: str, running: str) -> bool:
    for group in (_TRUE, _FALSE):
        if wanted.lower() in group and running.lower() in group:
            return True
    return wanted == running


def module_reasons(modprobe: Mapping[str, str],
                   loaded: Mapping[str, Mapping[str, str] | None]
                   ) -> dict[str, list[str]]:
    """{'module': ['kvm_intel nested=1']}: options of the plan's
    modprobe.d files (``modprobe`` {path: text}) that a loaded module runs
    with another value (``loaded`` {module: {param: value} or None when
    not loaded: the facts' virt.modules})."""
    pending = []
    for text in modprobe.values():
        for module, option, value in modprobe_options(text):
            params = loaded.get(module)
            if params is None:
                continue
            running = params.get(option)
            if running is None or not _same(value, running):
                pending.append(f'{module} {option}={value}')
    return {'module': pending} if pending else {}


def dropped_reasons(old: list[str], kernel_args: list[str], facts: Facts
                    ) -> dict[str, list[str]]:
    """{'cmdline'|'hugepages': ['-arg']}: arguments of kvmtune's file
    (``old``) the plan dropped that the booted line still has."""
    booted_line = facts['kernel']['cmdline'] or ''
    pairs = kernel.split_cmdline(booted_line)
    reasons: dict[str, list[str]] = {}
    for arg in old:
        if arg in kernel_args:
            continue
        key = _key(arg)
        if _pair(arg) in pairs:
            reason = 'hugepages' if key in HUGEPAGE_KEYS else 'cmdline'
            reasons.setdefault(reason, []).append('-' + arg)
    return reasons
