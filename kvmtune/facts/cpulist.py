"""The kernel's CPU list syntax: ``0-3,8,10-11`` and ``0-15:2/4``.

It appears in sysfs (``cpulist``, ``online``, ``thread_siblings_list``), on
the kernel command line (``isolcpus``, ``nohz_full``) and in nova.conf
(``cpu_dedicated_set``; Nova also accepts ``^N`` exclusions there, which the
kernel does not: ``parse_cpu_spec`` reads Nova's form). sysfs also writes
the same sets as hex masks (``cpumap``, ``thread_siblings``):
``parse_cpumask``. This module is kvmtune's one CPU-list parser.

CPU numbers are bounded by ``MAX_CPUS``, the largest ``CONFIG_NR_CPUS``
the kernel can be built with (8192, x86's ``MAXSMP``; see ``NR_CPUS`` in
the kernel's arch/x86/Kconfig): a list naming a higher CPU is refused
before any set is built, so ``isolcpus=2-4294967295`` costs nothing.
"""

from collections.abc import Iterable

MAX_CPUS = 8192
_GROUP_SEP = '/'
_STRIDE_SEP = ':'
# sysfs files end in a newline; some 5.15 kernels wrote a NUL after it.
_TRAILING = ' \t\r\n\x00'


def parse_cpulist(text: str, last_cpu: int | None = None) -> list[int]:
    """Return the sorted CPU numbers of a kernel CPU list.

    Accepts ``a``, ``a-b`` and ``a-b:used/group`` items separated by
    commas (see the kernel's ``bitmap_parselist``); ``N`` stands for the last
    CPU when ``last_cpu`` is given. An empty string is the empty list;
    leading and trailing whitespace and NUL bytes are ignored.

    :raises ValueError: on anything else, naming the bad item.
    """
    cpus: set[int] = set()
    text = text.strip(_TRAILING)
    if not text:
        return []
    for item in text.split(','):
        item = item.strip()
        try:
            cpus.update(_parse_item(item, last_cpu))
        except ValueError as exc:
            why = f' ({exc})' if str(exc) else ''
            raise ValueError(
                f'not a CPU list item: {item!r}{why}') from None
    return sorted(cpus)


def parse_cpu_spec(text: str) -> set[int]:
    """Nova's CPU set syntax (``0-7,^3,12``): the kernel's items plus
    ``^N`` / ``^N-M`` exclusions, as nova.virt.hardware.parse_cpu_spec
    reads them. Returns a set; raises ValueError naming the bad item."""
    included: set[int] = set()
    excluded: set[int] = set()
    for item in (i.strip() for i in text.split(',')):
        if not item:
            continue
        target = excluded if item.startswith('^') else included
        body = item[1:].strip() if item.startswith('^') else item
        if _STRIDE_SEP in body:
            raise ValueError(f'{item!r} is not N, N-M, ^N or ^N-M')
        try:
            target.update(_parse_item(body, None))
        except ValueError as exc:
            why = f' ({exc})' if str(exc) else ''
            raise ValueError(
                f'{item!r} is not N, N-M, ^N or ^N-M{why}') from None
    return included - excluded


def parse_cpumask(text: str) -> list[int]:
    """Return the sorted CPU numbers of a sysfs hex mask (``cpumap``).

    The kernel prints 32-bit words, most significant first, separated by
    commas (``00000000,000000ff``); NUL and whitespace around it are
    ignored. Bits above ``MAX_CPUS`` are refused.

    :raises ValueError: if it is not such a mask.
    """
    text = text.strip(_TRAILING)
    words = text.split(',')
    if not text or any(not w or len(w) > 8 for w in words):
        raise ValueError(f'not a CPU mask: {text[:40]!r}')
    cpus = []
    for index, word in enumerate(reversed(words)):
        try:
            bits = int(word, 16)
        except ValueError:
            raise ValueError(f'not a CPU mask: {text[:40]!r}') from None
        if bits and index * 32 >= MAX_CPUS:
            raise ValueError(f'CPU mask names a CPU above {MAX_CPUS - 1}')
        while bits:
            low = bits & -bits
            cpus.append(index * 32 + low.bit_length() - 1)
            bits ^= low
    return sorted(cpus)


def _parse_item(item: str, last_cpu: int | None) -> Iterable[int]:
    span, _, stride = item.partition(_STRIDE_SEP)
    first_text, dash, end_text = span.partition('-')
    first = _cpu_number(first_text, last_cpu)
    end = _cpu_number(end_text, last_cpu) if dash else first
    if end < first:
        raise ValueError('the range ends before it starts')
    if not stride:
        return range(first, end + 1)
    used_text, _, group_text = stride.partition(_GROUP_SEP)
    if not (used_text.isdigit() and group_text.isdigit()):
        raise ValueError('')
    used, group = int(used_text), int(group_text)
    if not 0 < used <= group:
        raise ValueError('')
    return [cpu for cpu in range(first, end + 1)
            if (cpu - first) % group < used]


def _cpu_number(text: str, last_cpu: int | None) -> int:
    text = text.strip()
    if text == 'N' and last_cpu is not None:
        return last_cpu
    if not (text.isascii() and text.isdigit()):
        raise ValueError('')
    if len(text) > 5 or int(text) >= MAX_CPUS:
        raise ValueError(f'CPU numbers stop at {MAX_CPUS - 1}, the '
                         'kernel\'s largest NR_CPUS')
    return int(text)


def format_cpulist(cpus: Iterable[int | str]) -> str:
    """Return the shortest kernel CPU list for an iterable of CPU numbers.

    >>> format_cpulist([0, 1, 2, 3, 8, 10, 11])
    '0-3,8,10-11'
    """
    items = []
    ordered = sorted(set(int(cpu) for cpu in cpus))
    start: int | None = None
    prev: int | None = None
    for cpu in (*ordered, None):
        if prev is not None and cpu == prev + 1:
            prev = cpu
            continue
        if start is not None:
            items.append(str(start) if start == prev else f'{start}-{prev}')
        start = prev = cpu
    return ','.join(items)
