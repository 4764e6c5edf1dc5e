"""CPU model, flags and topology from /proc/cpuinfo and sysfs.

The topology follows what the kernel says and nothing else (doc/facts.md,
"How the topology is read"): a core is a group of thread siblings as the
kernel lists them (``core_cpus_list``, else ``thread_siblings_list``, else
the ``thread_siblings`` mask), which also holds on multi-die packages and
clusters where ``core_id`` repeats inside a package; a socket is a
``physical_package_id``, or, where that is -1 (some POWER and s390
machines), a group of ``package_cpus_list``/``core_siblings_list``. What
the kernel does not say is null.
"""

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
import os
import re
from typing import Any
from typing import cast

from kvmtune.errors import InputError
from kvmtune.facts import arch
from kvmtune.facts.cpulist import MAX_CPUS
from kvmtune.facts.cpulist import parse_cpulist
from kvmtune.facts.cpulist import parse_cpumask
from kvmtune.facts.hostfs import HostFiles
from kvmtune.facts.types import CpuFacts
from kvmtune.facts.types import Topology

# One CPU's topology: package, die, cluster, core (int or None), siblings
# and package_cpus (CPU lists or None).
CpuTopology = Mapping[str, Any]

CPUINFO = '/proc/cpuinfo'
CPUS = '/sys/devices/system/cpu'
ONLINE = CPUS + '/online'
CPU_ONLINE = CPUS + '/cpu{cpu}/online'
TOPOLOGY = CPUS + '/cpu{cpu}/topology/{name}'
RECAPTURE = ('capture the host again with kvmtune host capture (a tree '
             'must hold the files as the kernel wrote them)')
_CPU_DIR = re.compile(r'^cpu(\d+)\Z')
# Where the kernel lists a CPU's thread siblings and package mates: the
# newer list name, the older list name, the older mask (oldest kernels).
SIBLINGS = ('core_cpus_list', 'thread_siblings_list', 'thread_siblings')
PACKAGE_CPUS = ('package_cpus_list', 'core_siblings_list', 'core_siblings')
# Every topology file a capture keeps (read or not), for bug reports.
TOPOLOGY_FILES = ('physical_package_id', 'die_id', 'cluster_id', 'core_id',
                  'book_id', 'drawer_id', 'core_cpus_list',
                  'thread_siblings_list', 'thread_siblings',
                  'package_cpus_list', 'core_siblings_list',
                  'core_siblings', 'die_cpus_list', 'cluster_cpus_list')


def bad_file(files: HostFiles, path: str, problem: str,
             key: str) -> InputError:
    """The InputError for a file that is not what the kernel writes."""
    return InputError(problem, source=os.path.join(files.root,
                                                   path.lstrip('/')),
                      key=key, fix=RECAPTURE)


def read_cpuset(files: HostFiles, path: str, key: str) -> list[int] | None:
    """CPUs of a list (``*_list``, ``cpulist``, ``online``) or hex mask
    file; None when the file is missing. A file that is neither is an
    InputError naming it."""
    text = files.read(path)
    if text is None:
        return None
    parse: Callable[[str], list[int]] = parse_cpulist \
        if path.endswith(('list', 'online')) else parse_cpumask
    try:
        return parse(text)
    except ValueError as exc:
        raise bad_file(files, path, str(exc), key) from None


def parse_cpuinfo(text: str | None) -> list[dict[str, str]]:
    """Return one dict per ``processor`` stanza (keys as the kernel wrote)."""
    stanzas: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in (text or '').splitlines():
        key, sep, value = line.partition(':')
        if not sep:
            if current:
                stanzas.append(current)
                current = {}
            continue
        current[key.strip()] = value.strip()
    if current:
        stanzas.append(current)
    return [s for s in stanzas if 'processor' in s]


def _processors(files: HostFiles, stanzas: list[dict[str, str]]
                ) -> dict[int, dict[str, str]]:
    """{CPU number: stanza}; a processor that is not a number is refused."""
    by_number = {}
    for stanza in stanzas:
        number = stanza['processor']
        if not (number.isascii() and number.isdigit()
                and int(number) < MAX_CPUS):
            raise bad_file(files, CPUINFO, f'processor {number[:20]!r} is '
                           f'not a CPU number (0-{MAX_CPUS - 1})',
                           'processor')
        by_number[int(number)] = stanza
    return by_number


def _online(files: HostFiles,
            by_number: dict[int, dict[str, str]]) -> list[int]:
    """The global ``online`` list, else each ``cpuN`` without
    ``online`` 0, else every cpuinfo processor."""
    online = read_cpuset(files, ONLINE, 'cpu.online')
    if online is not None:
        return online
    numbers = sorted(int(m.group(1)) for m in map(
        _CPU_DIR.match, files.listdir(CPUS)) if m)
    numbers = [n for n in numbers if n < MAX_CPUS]
    if not numbers:
        return sorted(by_number)
    # cpu0 is often not hot-pluggable and has no online file: online.
    return [n for n in numbers
            if files.read_value(CPU_ONLINE.format(cpu=n)) != '0']


class _SysfsTopology(dict[str, Any]):
    """One CPU's ``topology`` directory, each file read when first asked
    for (``host inspect`` reads 3 files a CPU where all agree)."""

    IDS = {'package': 'physical_package_id', 'die': 'die_id',
           'cluster': 'cluster_id', 'core': 'core_id'}

    def __init__(self, files: HostFiles, cpu: int,
                 names: list[str]) -> None:
        super().__init__()
        self.files, self.cpu, self.names = files, cpu, set(names)

    def __missing__(self, key: str) -> Any:
        value: int | list[int] | None
        if key in self.IDS:
            value = self._id(self.IDS[key])
        elif key == 'siblings':
            value = self._first(SIBLINGS, 'cpu.thread_siblings')
        else:       # package_cpus
            value = self._first(PACKAGE_CPUS, 'cpu.sockets')
        self[key] = value
        return value

    def _path(self, name: str) -> str:
        return TOPOLOGY.format(cpu=self.cpu, name=name)

    def _id(self, name: str) -> int | None:
        """A topology id, None if missing, unreadable or -1 (not told)."""
        if name not in self.names:
            return None
        value = self.files.read_int(self._path(name))
        return value if value is not None and value >= 0 else None

    def _first(self, names: Sequence[str], key: str) -> list[int] | None:
        for name in names:
            if name in self.names:
                return read_cpuset(self.files, self._path(name), key)
        return None


def _cpuinfo_topology(stanza: dict[str, str]) -> dict[str, Any]:
    """Package and core from cpuinfo (containers may hide sysfs)."""
    def number(key: str) -> int | None:
        value = stanza.get(key, '')
        return int(value) if value.isascii() and value.isdigit() else None
    return {'package': number('physical id'), 'die': None,
            'cluster': None, 'core': number('core id'), 'siblings': None,
            'package_cpus': None}


def _socket_keys(online: list[int], topo: Mapping[int, CpuTopology]
                 ) -> dict[int, int] | None:
    """{cpu: socket key} or None when the kernel does not tell."""
    if all(topo[cpu]['package'] is not None for cpu in online):
        return {cpu: topo[cpu]['package'] for cpu in online}
    if all(topo[cpu]['package_cpus'] for cpu in online):
        return {cpu: min(topo[cpu]['package_cpus']) for cpu in online}
    return None


def _sibling_groups(online: list[int], topo: Mapping[int, CpuTopology],
                    sockets: dict[int, int] | None
                    ) -> list[tuple[int, ...]] | None:
    """Sorted thread sibling groups (online CPUs only), or None."""
    online_set = set(online)
    if all(topo[cpu]['siblings'] is not None for cpu in online):
        group_of = {cpu: tuple(sorted(set(topo[cpu]['siblings'])
                                      & online_set)) for cpu in online}
        for cpu, group in group_of.items():
            # A CPU outside its own list, or two CPUs that disagree,
            # is a list the kernel did not write: not told.
            if cpu not in group or any(group_of[c] != group
                                       for c in group):
                return None
        return sorted(set(group_of.values()))
    if sockets is None or any(topo[cpu]['core'] is None for cpu in online):
        return None
    cores: dict[tuple[Any, ...], list[int]] = {}
    for cpu in online:
        t = topo[cpu]
        key = (sockets[cpu], t['die'], t['cluster'], t['core'])
        cores.setdefault(key, []).append(cpu)
    return sorted(tuple(cpus) for cpus in cores.values())


def topology(online: list[int],
             topo: Mapping[int, CpuTopology]) -> Topology:
    """sockets, cores, cores_per_socket, threads_per_core, thread_siblings
    from per-CPU topology dicts (see _sysfs_topology)."""
    sockets = _socket_keys(online, topo) if online else None
    groups = _sibling_groups(online, topo, sockets) if online else None
    result: Topology = {
        'sockets': None, 'cores': None, 'cores_per_socket': None,
        'threads_per_core': None, 'thread_siblings': None}
    if sockets is not None:
        result['sockets'] = len(set(sockets.values()))
    if groups is None:
        return result
    result['cores'] = len(groups)
    result['threads_per_core'] = max(len(g) for g in groups)
    result['thread_siblings'] = [list(g) for g in groups]
    if sockets is not None:
        per_socket: dict[int, int] = {}
        for group in groups:
            key = sockets[group[0]]
            per_socket[key] = per_socket.get(key, 0) + 1
        if len(set(per_socket.values())) == 1:
            result['cores_per_socket'] = next(iter(per_socket.values()))
    return result


def _cpuinfo_agrees(threads: int, online: list[int],
                    topo: Mapping[int, CpuTopology],
                    by_number: dict[int, dict[str, str]]) -> bool:
    """Cores made from cpuinfo's ``core id`` (no sysfs) must not hold
    more threads than its ``siblings`` / ``cpu cores`` say: ``core id``
    repeats on multi-die packages, and cpuinfo has no die."""
    if any(topo[cpu]['siblings'] is not None for cpu in online):
        return True
    for cpu in online:
        stanza = by_number.get(cpu, {})
        try:
            per_core = (int(stanza['siblings'])
                        // int(stanza['cpu cores']))
        except (KeyError, ValueError, ZeroDivisionError):
            return False
        if threads > per_core:
            return False
    return True


def gather(files: HostFiles) -> CpuFacts:
    text = files.read(CPUINFO)
    stanzas = parse_cpuinfo(text)
    first = stanzas[0] if stanzas else {}
    # An unreadable cpuinfo says nothing about the CPU's flags: unknown
    # (None), never "no vmx, no pdpe1gb" (tests/unit/test_hostile.py).
    flags = None if text is None else first.get('flags', '').split()
    by_number = _processors(files, stanzas)
    online = _online(files, by_number)
    topo: dict[int, CpuTopology] = {}
    for cpu in online:
        names = files.listdir(TOPOLOGY.format(cpu=cpu, name='')[:-1])
        if names:
            topo[cpu] = _SysfsTopology(files, cpu, names)
        else:
            topo[cpu] = _cpuinfo_topology(by_number.get(cpu, {}))
    facts = topology(online, topo)
    # thread_siblings set means threads_per_core is too
    if facts['thread_siblings'] and not _cpuinfo_agrees(
            cast(int, facts['threads_per_core']), online, topo, by_number):
        facts.update({'threads_per_core': None, 'thread_siblings': None,
                      'cores': None, 'cores_per_socket': None})
    return {
        'vendor': first.get('vendor_id'),
        'model_name': first.get('model name') or first.get('cpu'),
        'flags': flags,
        'online': online,
        **facts,
        'pdpe1gb': None if flags is None else 'pdpe1gb' in flags,
        'arch': None if text is None else arch.detect(first, text),
    }


def read_for_capture(files: HostFiles) -> None:
    """Read every CPU file a bug report may need, also those ``gather``
    did not (other CPUs' topology, offline CPUs), so that ``host capture``
    keeps them: the tree then answers questions kvmtune does not ask yet."""
    for name in files.listdir(CPUS):
        if not _CPU_DIR.match(name):
            continue
        files.read(f'{CPUS}/{name}/online')
        directory = f'{CPUS}/{name}/topology'
        present = set(files.listdir(directory))
        for topology_file in TOPOLOGY_FILES:
            if topology_file in present:
                files.read(f'{directory}/{topology_file}')
    for path in (ONLINE, CPUS + '/possible', CPUS + '/present'):
        files.read(path)
