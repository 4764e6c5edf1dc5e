"""A page size as text: the one formatter and the one parser.

Sizes are KiB everywhere inside kvmtune (``size_kb``), as the kernel names
its pools (``hugepages-2048kB``). ``text`` prints one for people, spaced
(``2 MB``, the main job and ``kvmtune pages apply``) or compact (``2M``,
as the kernel's ``hugepagesz=`` and the verify and host tables write it).
``kib`` reads the spellings kvmtune is given: ``2M``, ``2MB``, ``1G``,
``1GiB``, ``2048k``, and a bare number, which is KiB (a profile, a pool
``NODE:SIZE:COUNT``) or bytes (the kernel command line, whose memparse
reads bytes: admin-guide/kernel-parameters.txt, "hugepagesz").

A flavor's ``hw:mem_page_size`` is read as Nova reads it (bits, refusals
and all) by kvmtune.tuning.extra_specs.page_size_kb, Nova's grammar, not
this one.
"""

import re

_KIB_PER = {'': 1, 'K': 1, 'M': 1024, 'G': 1024 ** 2, 'T': 1024 ** 3}
_SIZE = re.compile(r'(\d+)([kKmMgGtT]?)(i?)(B|b|bit)?')


def text(size_kb: int, compact: bool = False) -> str:
    """``2 MB``, ``1 GB``, ``64 kB`` (or ``2M``, ``1G``, ``64k`` when
    ``compact``) for a size in KiB: the largest unit that divides it."""
    for unit, factor in (('G', 1024 ** 2), ('M', 1024)):
        if size_kb >= factor and not size_kb % factor:
            number = size_kb // factor
            return f'{number}{unit}' if compact else f'{number} {unit}B'
    return f'{size_kb}k' if compact else f'{size_kb} kB'


def kib(value: object, bare: str = 'KiB') -> int:
    """``2M``, ``2MB``, ``1G``, ``1GiB``, ``2048k``, ``2048`` -> KiB.

    :param bare: what a number without a unit is: ``KiB`` or ``bytes``
    :raises ValueError: not a size, or bytes that are no whole KiB
    """
    spelled = str(value).strip()
    match = _SIZE.fullmatch(spelled)
    if not match:
        raise ValueError(f'{spelled!r} is not a page size (2M, 1G, or KiB)')
    number, unit, _iec, _suffix = match.groups()
    if not unit and bare == 'bytes':
        if int(number) % 1024:
            raise ValueError(f'{spelled!r} bytes is no whole KiB')
        return int(number) // 1024
    return int(number) * _KIB_PER[unit.upper()]
