"""One judgement of a kernel command line: what the kernel keeps of it.

Plan, verify, boot apply, ``rollout --check`` and the rollout's gate all
ask the same questions of a command line (the booted /proc/cmdline, the
line a boot loader would boot next, the plan's arguments): this module is
the one place that answers them, by the kernel's own rules:

- words: Documentation/admin-guide/kernel-parameters.txt ("The kernel
  parses parameters from the kernel command line up to "--""; a value may
  be double-quoted to hold spaces; lib/cmdline.c next_arg()).
- ``isolcpus=`` and ``nohz_full=``: kernel/sched/isolation.c.
  housekeeping_isolcpus_setup() reads the leading flags (``nohz,``
  ``domain,`` ``managed_irq,``; an unknown word of letters and ``_`` is
  skipped, one with another character rejects the whole argument; no flag
  at all means ``domain``), then housekeeping_setup() applies the CPU list
  to each housekeeping type of the flags: the first call sets them; a
  later call (a second ``isolcpus=``, or ``nohz_full=``, which is the
  ``nohz`` type) whose list differs from the one already set for a type it
  shares is ignored whole ("Housekeeping: nohz_full= must match
  isolcpus="), and only types not set yet are added by a matching one.
  An empty list changes nothing. (Read in torvalds/linux
  kernel/sched/isolation.c, the per-type housekeeping.cpumasks[] of 5.17
  and later; kernels before kept one mask for every type, so there any
  second list that differs is ignored: the rule here is the same for the
  lines kvmtune stages, which carry one list per key.)
- ``rcu_nocbs=``: kernel/rcu/tree_nocb.h rcu_nocb_setup() parses every
  occurrence into the same mask, so the last one counts; a bad list
  offloads every CPU (read as invalid here).
- huge pages: mm/hugetlb.c. default_hugepagesz_setup() ignores a second
  ``default_hugepagesz=``; hugepagesz_setup() ignores a size given twice
  (unless it is the default size whose count is not given yet) and the
  ``hugepages=`` after it ("does not follow a valid hugepagesz");
  hugepages_setup() gives a count to the size parsed last, to the default
  size when no size came before it (x86's default: 2M), ignores a second
  count for the same size without a ``hugepagesz=`` between
  ("specified twice without interleaving hugepagesz"), and reads the
  per-node form ``N:count,N:count``.
- any other key: its setup function runs for each occurrence, so the last
  one counts (what ``values`` holds).

``read(line)`` gives a Line: what the kernel keeps. ``judge(planned,
line)`` compares the plan's arguments with it by meaning (CPU sets as
sets, sizes in KiB, the operator's extra isolcpus flags allowed).
``stage(planned, words, old)`` gives the words a boot loader should hold:
one argument per key kvmtune owns (the plan's keys: isolcpus with the
operator's flags kept, default_hugepagesz, the pool of each planned
size), every other argument as it was; ``check_staged`` proves the result
by reading it again.
"""

from collections.abc import Iterable
from collections.abc import Sequence
import dataclasses

from kvmtune.errors import InputError
from kvmtune.facts.cpulist import format_cpulist
from kvmtune.facts.cpulist import parse_cpulist
from kvmtune import pagesize

# isolcpus flags -> housekeeping type (kernel/sched/isolation.c hk_flags;
# ``nohz`` is HK_FLAG_KERNEL_NOISE, the type nohz_full= sets)
ISOLCPUS_FLAGS = ('nohz', 'domain', 'managed_irq')
HUGEPAGE_KEYS = ('default_hugepagesz', 'hugepagesz', 'hugepages')
CPU_SET_KEYS = ('isolcpus', 'nohz_full', 'rcu_nocbs')
# x86's default huge page size when default_hugepagesz is not given.
X86_DEFAULT_HUGEPAGESZ = '2M'
_DEFAULT = 'default'


def words(line: str, init: bool = False) -> list[str]:
    """The kernel's words of ``line`` as written (quotes kept), up to a
    lone ``--`` (what follows belongs to init; kept when ``init``)."""
    found: list[str] = []
    word: list[str] = []
    quoted = False
    for char in line:
        if char == '"':
            quoted = not quoted
            word.append(char)
        elif char.isspace() and not quoted:
            if word:
                found.append(''.join(word))
                word = []
        else:
            word.append(char)
    if word:
        found.append(''.join(word))
    if '--' in found and not init:
        found = found[:found.index('--')]
    return found


def pair(word: str) -> tuple[str, str | None]:
    """``key=value`` -> (key, value without its quotes); a bare word ->
    (word, None)."""
    key, eq, value = word.replace('"', '').partition('=')
    return key, value if eq else None


def pairs(line: str) -> list[tuple[str, str | None]]:
    """(key, value) of each word of ``line``; value None for bare words."""
    return [pair(word) for word in words(line)]


def key_of(word: str) -> str:
    return pair(word)[0]


def size_kb(text: str | None) -> int | None:
    """A command line size (``1G``, ``1GB``, ``2M``, ``2048k``, bytes as
    memparse reads a bare number) -> KiB, or None if not a size."""
    try:
        return pagesize.kib(text or '', bare='bytes')
    except ValueError:
        return None


def parse_isolcpus(value: str) -> tuple[list[int], list[str]]:
    """``managed_irq,domain,2-5,8`` -> ([2, 3, 4, 5, 8], [flags as
    written]); ValueError for a flag the kernel rejects or a bad list.
    Flags the kernel skips (letters and ``_`` it does not know) are
    dropped, as housekeeping_isolcpus_setup() does."""
    flags: list[str] = []
    rest = value
    while rest[:1].isalpha():
        head, comma, tail = rest.partition(',')
        if head in ISOLCPUS_FLAGS and comma:
            if head not in flags:
                flags.append(head)
        elif not all(c.isalpha() or c == '_' for c in head):
            raise ValueError(f'isolcpus: invalid flag {head!r}')
        rest = tail
    cpus = parse_cpulist(rest)
    if not cpus:
        raise ValueError('isolcpus: no CPU list')
    return cpus, flags


def types_of(flags: Iterable[str]) -> set[str]:
    """The housekeeping types of isolcpus flags (none: ``domain``)."""
    return set(flags) or {'domain'}


def hugepages_count(value: str) -> tuple[int, dict[str, int] | None]:
    """``16`` or the per-node form ``0:8,1:8`` -> (total, per_node)."""
    if ':' not in value:
        return int(value), None
    per_node: dict[str, int] = {}
    for item in value.split(','):
        node, _, count = item.partition(':')
        per_node[str(int(node))] = int(count)
    return sum(per_node.values()), per_node


@dataclasses.dataclass
class Pool:
    """One huge page pool the kernel reserves at boot."""

    size: str                       # as spelled (or the default's)
    size_kb: int
    count: int
    per_node: dict[str, int] | None
    words: list[int]                # indexes of its words in Line.words

    def same(self, other: 'Pool | None') -> bool:
        return other is not None and (self.size_kb, self.count,
                                      self.per_node) == (
            other.size_kb, other.count, other.per_node)


@dataclasses.dataclass
class Line:
    """What the kernel keeps of one command line (``read``)."""

    words: list[str]
    # housekeeping type ('domain', 'managed_irq', 'nohz') -> isolated CPUs
    isolated: dict[str, frozenset[int]] = dataclasses.field(
        default_factory=dict)
    # isolcpus words the kernel applied: their indexes and flags
    isolcpus: list[int] = dataclasses.field(default_factory=list)
    isolcpus_flags: list[str] = dataclasses.field(default_factory=list)
    rcu_nocbs: frozenset[int] | None = None
    default_size: str | None = None         # default_hugepagesz= kept
    sizes: set[int] = dataclasses.field(default_factory=set)
    pools: dict[int, Pool] = dataclasses.field(default_factory=dict)
    values: dict[str, str | None] = dataclasses.field(default_factory=dict)
    # (word, why the kernel ignores it)
    ignored: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    invalid: list[str] = dataclasses.field(default_factory=list)

    @property
    def default_kb(self) -> int:
        return size_kb(self.default_size or X86_DEFAULT_HUGEPAGESZ) or 2048

    def text(self) -> str:
        return ' '.join(self.words)

    def of_key(self, key: str) -> list[str]:
        return [word for word in self.words if key_of(word) == key]


def _housekeeping(line: Line, index: int, types: set[str],
                  cpus: frozenset[int]) -> None:
    """housekeeping_setup(): the first list per type counts."""
    word = line.words[index]
    clash = [t for t in sorted(types & set(line.isolated))
             if line.isolated[t] != cpus]
    if clash:
        line.ignored.append((word, f'its CPUs differ from the '
                             f'{clash[0]} isolation set before it, which '
                             'the kernel keeps'))
        return
    for kind in types - set(line.isolated):
        line.isolated[kind] = cpus
    if key_of(word) == 'isolcpus':
        line.isolcpus.append(index)


def read(line: str | Sequence[str]) -> Line:
    """What the kernel keeps of ``line`` (text, or its words)."""
    found = Line(words=words(line) if isinstance(line, str) else list(line))
    # mm/hugetlb.c state: the size the next hugepages= counts for, whether
    # the last hugepagesz= was valid, the size the last count went to
    current: int | str | None = None
    valid = True
    last: int | str | None = None
    pending: tuple[int, dict[str, int] | None, int] | None = None
    size_word: dict[int, int] = {}      # size -> its hugepagesz= word
    for index, word in enumerate(found.words):
        key, value = pair(word)
        if value is None:
            found.values[key] = None
            continue
        try:
            if key == 'isolcpus':
                cpus, flags = parse_isolcpus(value)
                before = len(found.isolcpus)
                _housekeeping(found, index, types_of(flags),
                              frozenset(cpus))
                if len(found.isolcpus) > before:
                    found.isolcpus_flags += [f for f in flags if f not in
                                             found.isolcpus_flags]
            elif key == 'nohz_full':
                cpus = parse_cpulist(value)
                if cpus:
                    _housekeeping(found, index, {'nohz'}, frozenset(cpus))
            elif key == 'rcu_nocbs':
                found.rcu_nocbs = frozenset(parse_cpulist(value))
            elif key == 'default_hugepagesz':
                valid = False
                kb = size_kb(value)
                if kb is None:
                    raise ValueError(value)
                if found.default_size is not None:
                    found.ignored.append((word, 'default_hugepagesz was '
                                          'given before'))
                    continue
                found.default_size, valid = value, True
                found.sizes.add(kb)
                current = kb
                if pending is not None:
                    count, per_node, at = pending
                    found.pools[kb] = Pool(value, kb, count, per_node,
                                           [at])
                    pending = None
            elif key == 'hugepagesz':
                valid = False
                kb = size_kb(value)
                if kb is None:
                    raise ValueError(value)
                if kb in found.sizes and not (
                        found.default_size is not None
                        and kb == size_kb(found.default_size)
                        and kb not in found.pools):
                    found.ignored.append((word, f'hugepagesz={value} was '
                                          'given before'))
                    continue
                found.sizes.add(kb)
                current, valid = kb, True
                size_word[kb] = index
            elif key == 'hugepages':
                count, per_node = hugepages_count(value)
                if not valid:
                    valid = True
                    found.ignored.append((word, 'it does not follow a '
                                          'valid hugepagesz'))
                    continue
                target = _DEFAULT if current is None else current
                if target == last:
                    found.ignored.append((word, 'a second count for the '
                                          'same size without a hugepagesz '
                                          'between'))
                    continue
                last = target
                if target == _DEFAULT:
                    pending = (count, per_node, index)
                else:
                    kb = int(target)
                    sized = [size_word[kb]] if kb in size_word else []
                    found.pools[kb] = Pool(_spelled(found, kb), kb, count,
                                           per_node, sized + [index])
            else:
                found.values[key] = value
        except ValueError:
            found.invalid.append(word.replace('"', ''))
    if pending is not None:
        count, per_node, at = pending
        kb = found.default_kb
        found.pools[kb] = Pool(found.default_size or X86_DEFAULT_HUGEPAGESZ,
                               kb, count, per_node, [at])
    return found


def _spelled(line: Line, kb: int) -> str:
    for word in line.words:
        key, value = pair(word)
        if key in ('hugepagesz', 'default_hugepagesz') \
                and size_kb(value) == kb and value is not None:
            return value
    return pagesize.text(kb, compact=True)


# -- the judgement of a plan's arguments ------------------------------------

@dataclasses.dataclass(frozen=True)
class Item:
    """One planned argument judged against a line."""

    arg: str        # the planned word
    key: str
    name: str       # 'isolcpus', 'hugepages (1G)': a row's name
    ok: bool
    live: str       # what the line has for it ('absent' when nothing)
    have: tuple[str, ...] = ()      # the line's words of it


def _live(line: Line, key: str) -> str:
    shown = []
    ignored = {word for word, _ in line.ignored}
    for word in line.of_key(key):
        shown.append(word + (' (ignored by the kernel)'
                             if word in ignored else ''))
    return ' '.join(shown) or 'absent'


def judge(planned: Sequence[str], line: Line) -> list[Item]:
    """Each of the plan's arguments (``planned``, in order) judged against
    what the kernel keeps of ``line``."""
    items = []
    size: str | None = None
    for arg in planned:
        key, value = pair(arg)
        name = key
        live = _live(line, key)
        have = tuple(line.of_key(key))
        ok = False
        try:
            if value is None:
                ok = key in line.values
            elif key == 'isolcpus':
                cpus, flags = parse_isolcpus(value)
                ok = all(line.isolated.get(t) == frozenset(cpus)
                         for t in types_of(flags))
            elif key == 'nohz_full':
                ok = line.isolated.get('nohz') == frozenset(
                    parse_cpulist(value))
            elif key == 'rcu_nocbs':
                ok = line.rcu_nocbs == frozenset(parse_cpulist(value))
            elif key == 'default_hugepagesz':
                ok = line.default_kb == size_kb(value)
            elif key == 'hugepagesz':
                size = value
                ok = size_kb(value) in line.sizes | {line.default_kb}
                # the words of its size's pool, not another size's
                pool = line.pools.get(size_kb(value) or 0)
                have = tuple(line.words[i] for i in pool.words
                             if key_of(line.words[i]) == 'hugepagesz') \
                    if pool is not None else ()
                live = ' '.join(have) or 'absent'
            elif key == 'hugepages':
                kb = size_kb(size) if size is not None else line.default_kb
                if size is not None:
                    name = f'hugepages ({size})'
                count, per_node = hugepages_count(value)
                pool = line.pools.get(kb or 0)
                ok = pool is not None and (pool.count, pool.per_node) == (
                    count, per_node)
                have, live = (), 'absent'
                if pool is not None:
                    have = tuple(line.words[i] for i in pool.words
                                 if key_of(line.words[i]) == 'hugepages')
                    live = ' '.join(have)
            else:
                ok = line.values.get(key, '\0') == value
        except ValueError:
            ok = False
        items.append(Item(arg=arg, key=key, name=name, ok=ok, live=live,
                          have=have))
    return items


def fix(item: Item, staged: str) -> str:
    """What to do on the command line for a failing ``item``: add the
    argument when the line has none of its key, else replace what is
    there (``staged``: the word kvmtune stages for it)."""
    if not item.have:
        return f'add {staged}'
    return f'replace {" ".join(item.have)} with {staged}'


def changes(planned: Sequence[str], line: Line) -> str:
    """What ``line`` needs for the plan's arguments it does not give, in
    one phrase: ``add a b; replace c with d``."""
    staged = staged_args(planned, line)
    items = judge(planned, line)
    adds = []
    for n, item in enumerate(items):
        # a pool the line lacks is added with its hugepagesz=, whose size
        # may be there for another reason (default_hugepagesz=)
        pair_ = n and item.key == 'hugepages' and not item.ok \
            and not item.have and items[n - 1].key == 'hugepagesz'
        if pair_ and staged[n - 1] not in adds:
            adds.append(staged[n - 1])
        if not item.ok and not item.have:
            adds.append(staged[n])
    return '; '.join(([f'add {" ".join(adds)}'] if adds else []) + [
        fix(item, staged[n]) for n, item in enumerate(items)
        if not item.ok and item.have] or [f'add {" ".join(staged)}'])


# -- staging: one argument per key kvmtune owns ------------------------------

def planned_sizes(planned: Sequence[str]) -> set[int]:
    """KiB of each pool the plan sets (hugepagesz=, or the default)."""
    sizes: set[int] = set()
    size: str | None = None
    default = None
    for arg in planned:
        key, value = pair(arg)
        if key == 'default_hugepagesz':
            default = value
        elif key == 'hugepagesz':
            size = value
        elif key == 'hugepages':
            kb = size_kb(size or default or X86_DEFAULT_HUGEPAGESZ)
            if kb is not None:
                sizes.add(kb)
    return sizes


def owned(planned: Sequence[str], line: Line,
          old: Sequence[str] = ()) -> list[int]:
    """Indexes of ``line``'s words kvmtune replaces: every word of a key
    the plan sets (isolcpus, nohz_full, rcu_nocbs, default_hugepagesz,
    any other key), the pool words (hugepagesz= and its hugepages=) of
    each size the plan reserves, and kvmtune's own earlier words
    (``old``) the plan dropped."""
    keys = {key_of(arg) for arg in planned} - {'hugepagesz', 'hugepages'}
    sizes = planned_sizes(planned)
    gone = {arg for arg in old if arg not in planned}
    found = set()
    for index, word in enumerate(line.words):
        key, value = pair(word)
        if key in keys or word in gone:
            found.add(index)
        elif key == 'hugepagesz' and size_kb(value) in sizes:
            found.add(index)
    for kb, pool in line.pools.items():
        if kb in sizes:
            found.update(pool.words)
    # a hugepages= the kernel ignored, after an owned hugepagesz=
    for index, word in enumerate(line.words):
        if key_of(word) == 'hugepages' and index - 1 in found \
                and key_of(line.words[index - 1]) == 'hugepagesz':
            found.add(index)
    return sorted(found)


def staged_args(planned: Sequence[str], line: Line) -> list[str]:
    """The plan's arguments as kvmtune stages them on ``line``: an
    isolcpus keeps the flags of the operator's isolcpus (the plan's
    types added), one word per key."""
    out = []
    for arg in planned:
        key, value = pair(arg)
        if key == 'isolcpus' and value is not None and line.isolcpus_flags:
            cpus, flags = parse_isolcpus(value)
            merged = list(line.isolcpus_flags)
            merged += [f for f in sorted(types_of(flags)) if f not in merged]
            arg = f'isolcpus={",".join(merged)},{format_cpulist(cpus)}'
        out.append(arg)
    return out


def check_staged(planned: Sequence[str], before: Line, after: str,
                 source: str) -> Line:
    """Read the line a boot would get (``after``) and prove it: every
    planned argument holds, one word per owned key, and every pool of the
    operator's (``before``) of a size the plan does not set is unchanged;
    InputError naming the argument otherwise (nothing is written)."""
    line = read(after)
    for item in judge(planned, line):
        if not item.ok:
            why = '; '.join(f'{word}: {reason}'
                            for word, reason in line.ignored) or \
                f'it would boot {item.live}'
            raise InputError(
                f'the staged command line would not give {item.arg}: '
                f'{why}', source=source, key=item.key,
                fix='remove or correct the conflicting argument in the '
                    'boot loader (a nohz_full= or isolcpus=nohz with '
                    'other CPUs), then run kvmtune boot apply again')
    single = {key_of(arg) for arg in planned} - {'hugepages', 'hugepagesz'}
    for key in sorted(single):
        if len(line.of_key(key)) > 1:
            raise InputError(
                f'the staged command line would hold {key}= '
                f'{len(line.of_key(key))} times: '
                + ' '.join(line.of_key(key)), source=source, key=key,
                fix='remove the others from the boot loader\'s files, '
                    'then run kvmtune boot apply again')
    sizes = planned_sizes(planned)
    for kb, pool in before.pools.items():
        if kb not in sizes and not pool.same(line.pools.get(kb)):
            raise InputError(
                'the staged command line would change the operator\'s '
                f'{pool.size} huge page pool ('
                + ' '.join(before.words[i] for i in pool.words) + ')',
                source=source, key='hugepages',
                fix='give that pool its own hugepagesz= before its '
                    'hugepages=, then run kvmtune boot apply again')
    return line


def stage(planned: Sequence[str], words_now: Sequence[str],
          old: Sequence[str] = ()) -> tuple[list[str], list[str]]:
    """(the words of ``words_now`` kvmtune removes, the arguments it
    appends): one per owned key, the operator's other words kept."""
    line = read(words_now)
    drop = [line.words[i] for i in owned(planned, line, old)]
    return drop, staged_args(planned, line)
