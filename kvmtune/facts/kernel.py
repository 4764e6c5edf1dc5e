"""The kernel release and the command line arguments kvmtune cares about.

Syntax follows Documentation/admin-guide/kernel-parameters.txt: words are
separated by spaces, a value may be double-quoted, and everything after a
lone ``--`` belongs to init, not to the kernel.
"""

from kvmtune.facts.cpulist import parse_cpulist
from kvmtune.facts.types import HugepagesArg
from kvmtune.facts.types import KernelArgs
from kvmtune import pagesize

ISOLCPUS_FLAGS = ('nohz', 'domain', 'managed_irq')
IOMMU_KEYS = ('intel_iommu', 'amd_iommu', 'iommu')
# x86's default huge page size when default_hugepagesz is not given.
X86_DEFAULT_HUGEPAGESZ = '2M'


def split_cmdline(cmdline: str) -> list[tuple[str, str | None]]:
    """Return (key, value) pairs; value is None for bare words."""
    words: list[str] = []
    word: list[str] = []
    quoted = False
    for char in cmdline:
        if char == '"':
            quoted = not quoted
        elif char.isspace() and not quoted:
            if word:
                words.append(''.join(word))
                word = []
        else:
            word.append(char)
    if word:
        words.append(''.join(word))
    pairs: list[tuple[str, str | None]] = []
    for text in words:
        if text == '--':
            break
        key, eq, value = text.partition('=')
        pairs.append((key, value if eq else None))
    return pairs


def size_kb(text: str | None) -> int | None:
    """A command line size (``1G``, ``1GB``, ``2M``, ``2048k``, bytes) ->
    KiB (kvmtune.pagesize.kib), or None if not a size."""
    try:
        return pagesize.kib(text or '', bare='bytes')
    except ValueError:
        return None


def parse_isolcpus(value: str) -> tuple[list[int], list[str]]:
    """``managed_irq,domain,2-5,8`` -> ([2, 3, 4, 5, 8], [flags])."""
    items = value.split(',')
    flags = []
    while items and items[0] in ISOLCPUS_FLAGS:
        flags.append(items.pop(0))
    return parse_cpulist(','.join(items)), flags


def _hugepages_count(value: str) -> tuple[int, dict[str, int] | None]:
    """``16`` or the per-node form ``0:8,1:8`` -> (total, per_node)."""
    if ':' not in value:
        return int(value), None
    per_node: dict[str, int] = {}
    for item in value.split(','):
        node, _, count = item.partition(':')
        per_node[str(int(node))] = int(count)
    return sum(per_node.values()), per_node


def parse_args(cmdline: str) -> KernelArgs:
    """Return the ``kernel.args`` dict of the facts (doc/facts.md)."""
    args: KernelArgs = {
        'isolcpus': [], 'isolcpus_flags': [], 'nohz_full': [],
        'hugepages': [], 'default_hugepagesz': None,
        'hugepagesz': [], 'iommu': {}, 'invalid': []}
    size = None
    pending: list[HugepagesArg] = []
    for key, value in split_cmdline(cmdline):
        try:
            if key == 'isolcpus' and value is not None:
                args['isolcpus'], args['isolcpus_flags'] = (
                    parse_isolcpus(value))
            elif key == 'nohz_full' and value is not None:
                args['nohz_full'] = parse_cpulist(value)
            elif key == 'default_hugepagesz' and value is not None:
                args['default_hugepagesz'] = value
            elif key == 'hugepagesz' and value is not None:
                args['hugepagesz'].append(value)
                size = value
            elif key == 'hugepages' and value is not None:
                count, per_node = _hugepages_count(value)
                entry: HugepagesArg = {'size': size, 'count': count}
                if per_node is not None:
                    entry['per_node'] = per_node
                args['hugepages'].append(entry)
                if size is None:
                    pending.append(entry)
            elif key in IOMMU_KEYS or key.startswith('iommu.'):
                args['iommu'][key] = value
        except ValueError:
            args['invalid'].append(f'{key}={value}')
    # hugepages= before any hugepagesz= counts pages of the default size.
    default = args['default_hugepagesz'] or X86_DEFAULT_HUGEPAGESZ
    for entry in pending:
        entry['size'] = default
    for entry in args['hugepages']:
        entry['size_kb'] = size_kb(entry['size'])
    return args
