"""CPU model, flags and topology from /proc/cpuinfo and sysfs."""

from kvmtune.facts.cpulist import parse_cpulist

CPUINFO = '/proc/cpuinfo'
ONLINE = '/sys/devices/system/cpu/online'
TOPOLOGY = '/sys/devices/system/cpu/cpu{cpu}/topology/{name}'


def parse_cpuinfo(text):
    """Return one dict per ``processor`` stanza (keys as the kernel wrote)."""
    stanzas, current = [], {}
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


def _sysfs_topology(files, cpu):
    """(package, core, siblings) of one CPU from sysfs, or None."""
    def path(name):
        return TOPOLOGY.format(cpu=cpu, name=name)
    siblings = files.read_value(path('thread_siblings_list'))
    if siblings is None:
        return None
    return (files.read_int(path('physical_package_id')),
            files.read_int(path('core_id')), parse_cpulist(siblings))


def _cpuinfo_topology(stanza, cpu):
    """The same from a cpuinfo stanza (containers may hide sysfs)."""
    return (int(stanza.get('physical id', 0)),
            int(stanza.get('core id', cpu)), None)


def gather(files):
    stanzas = parse_cpuinfo(files.read(CPUINFO))
    first = stanzas[0] if stanzas else {}
    flags = first.get('flags', '').split()
    by_number = {int(s['processor']): s for s in stanzas}
    online_text = files.read_value(ONLINE)
    online = (parse_cpulist(online_text) if online_text
              else sorted(by_number))
    cores, groups = {}, {}
    for cpu in online:
        package, core, siblings = (
            _sysfs_topology(files, cpu)
            or _cpuinfo_topology(by_number.get(cpu, {}), cpu))
        cores.setdefault((package, core), []).append(cpu)
        if siblings is not None:
            siblings = [c for c in siblings if c in online]
            groups[min(siblings)] = siblings
    if not groups:      # no sysfs: CPUs on one core are its threads
        groups = {min(cpus): cpus for cpus in cores.values()}
    sockets = len({package for package, _ in cores}) or None
    return {
        'vendor': first.get('vendor_id'),
        'model_name': first.get('model name'),
        'flags': flags,
        'online': online,
        'sockets': sockets,
        'cores_per_socket': len(cores) // sockets if sockets else None,
        'threads_per_core': max(
            (len(g) for g in groups.values()), default=None),
        'thread_siblings': [groups[k] for k in sorted(groups)],
        'pdpe1gb': 'pdpe1gb' in flags,
    }
