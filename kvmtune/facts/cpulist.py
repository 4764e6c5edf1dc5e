"""The kernel's CPU list syntax: ``0-3,8,10-11`` and ``0-15:2/4``.

It appears in sysfs (``cpulist``, ``online``, ``thread_siblings_list``), on
the kernel command line (``isolcpus``, ``nohz_full``) and in nova.conf
(``cpu_dedicated_set``; nova also accepts ``^N`` exclusions there, which the
kernel does not, so they are refused here).
"""

_GROUP_SEP = '/'
_STRIDE_SEP = ':'


def parse_cpulist(text, last_cpu=None):
    """Return the sorted CPU numbers of a kernel CPU list.

    Accepts ``a``, ``a-b`` and ``a-b:used/group`` items separated by
    commas (see the kernel's ``bitmap_parselist``); ``N`` stands for the last
    CPU when ``last_cpu`` is given. An empty string is the empty list.

    :raises ValueError: on anything else, naming the bad item.
    """
    cpus = set()
    text = text.strip()
    if not text:
        return []
    for item in text.split(','):
        item = item.strip()
        try:
            cpus.update(_parse_item(item, last_cpu))
        except ValueError:
            raise ValueError(f'not a CPU list item: {item!r}') from None
    return sorted(cpus)


def _parse_item(item, last_cpu):
    span, _, stride = item.partition(_STRIDE_SEP)
    first, dash, end = span.partition('-')
    first = _cpu_number(first, last_cpu)
    end = _cpu_number(end, last_cpu) if dash else first
    if end < first:
        raise ValueError(item)
    if not stride:
        return range(first, end + 1)
    used, _, group = stride.partition(_GROUP_SEP)
    used, group = int(used), int(group)
    if not 0 < used <= group:
        raise ValueError(item)
    return [cpu for cpu in range(first, end + 1)
            if (cpu - first) % group < used]


def _cpu_number(text, last_cpu):
    text = text.strip()
    if text == 'N' and last_cpu is not None:
        return last_cpu
    if not text.isdigit():
        raise ValueError(text)
    return int(text)


def format_cpulist(cpus):
    """Return the shortest kernel CPU list for an iterable of CPU numbers.

    >>> format_cpulist([0, 1, 2, 3, 8, 10, 11])
    '0-3,8,10-11'
    """
    items = []
    ordered = sorted(set(int(cpu) for cpu in cpus))
    start = prev = None
    for cpu in ordered + [None]:
        if prev is not None and cpu == prev + 1:
            prev = cpu
            continue
        if start is not None:
            items.append(str(start) if start == prev else f'{start}-{prev}')
        start = prev = cpu
    return ','.join(items)
