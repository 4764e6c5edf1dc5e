"""What the booted host lacks of a plan: the reboot reasons.

- ``cmdline``: a kernel argument of the plan that the booted command line
  (/proc/cmdline) does not give, as the kernel reads it
  (kvmtune.facts.cmdline: isolcpus= compares CPU sets per housekeeping
  type, the operator's extra flags allowed; a second isolcpus= that the
  kernel ignores does not count);
- ``hugepages``: the huge page pool arguments (default_hugepagesz=,
  hugepagesz=, hugepages=) when the booted line does not reserve the same
  pools: compared as the kernel reads them, so the spelling (2M, 2048k)
  does not count, the pairing of sizes and counts does;
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
from kvmtune.facts import cmdline
from kvmtune.facts.types import Facts

HUGEPAGE_KEYS = cmdline.HUGEPAGE_KEYS
_TRUE = {'y', '1', 'yes', 'on', 'true'}
_FALSE = {'n', '0', 'no', 'off', 'false'}


def booted_line(facts: Facts, source: str) -> str:
    """The booted command line of ``facts``; InputError when unknown."""
    line = facts['kernel']['cmdline']
    if line is None:
        raise InputError(
            'the booted command line is unknown (no proc/cmdline), so '
            'whether isolcpus or huge page reservations are already booted '
            'cannot be told; refused', source=source, key='proc/cmdline',
            fix='run on the host itself, or capture it again with kvmtune '
                'host capture')
    return line


def cmdline_reasons(kernel_args: list[str], facts: Facts, source: str
                    ) -> dict[str, list[str]]:
    """{'cmdline': [...], 'hugepages': [...]}: the plan's ``kernel_args``
    the booted command line of ``facts`` does not give, judged by what the
    kernel keeps of it (kvmtune.facts.cmdline; only reasons that have
    some); InputError when the booted line is unknown or doubtful."""
    if not kernel_args:
        return {}
    booted = cmdline.read(booted_line(facts, source))
    keys = {cmdline.key_of(arg) for arg in kernel_args}
    doubtful = [arg for arg in booted.invalid
                if cmdline.key_of(arg) in keys]
    if doubtful:
        raise InputError(
            f'the booted command line has {doubtful[0]!r}, which the kernel '
            'could not parse either: what it runs with is doubtful; '
            'refused', source=source, key='proc/cmdline',
            fix='correct that argument in the boot loader and reboot first')
    items = cmdline.judge(kernel_args, booted)
    reasons: dict[str, list[str]] = {}
    missing = [item.arg for item in items
               if not item.ok and item.key not in HUGEPAGE_KEYS]
    if missing:
        reasons['cmdline'] = missing
    if any(not item.ok for item in items if item.key in HUGEPAGE_KEYS):
        reasons['hugepages'] = [arg for arg in kernel_args
                                if cmdline.key_of(arg) in HUGEPAGE_KEYS]
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
    pairs = cmdline.pairs(facts['kernel']['cmdline'] or '')
    reasons: dict[str, list[str]] = {}
    for arg in old:
        # one the plan sets again with the same meaning (its isolcpus
        # with the operator's flags) is not dropped
        same_key = [a for a in kernel_args
                    if cmdline.key_of(a) == cmdline.key_of(arg)]
        if arg in kernel_args or same_key and all(
                item.ok for item in cmdline.judge(same_key,
                                                  cmdline.read(arg))):
            continue
        key = cmdline.key_of(arg)
        if cmdline.pair(arg) in pairs:
            reason = 'hugepages' if key in HUGEPAGE_KEYS else 'cmdline'
            reasons.setdefault(reason, []).append('-' + arg)
    return reasons
