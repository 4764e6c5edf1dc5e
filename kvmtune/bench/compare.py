"""Local A/B of host settings: ``kvmtune bench local --compare S=V1,V2``.

Each ``--compare`` names one setting and the values to try; every other
setting keeps its value from the command line (the defaults below). The
runs vary one setting at a time from that base, the way seed 003's step
table lists its tweaks one after another, and a run whose settings equal
one already made (each setting's base value) is made once and shown in
both columns. A value this host cannot give (huge pages with no free
page, vhost-net without /dev/vhost-net, pinning with too few CPUs) is
skipped with one line saying why and how to make it possible; it is never
replaced by something else.

The settings and what they map to (QEMU options as libvirt writes them
for Nova's choices, see kvmtune.bench.qemu.Guest.argv):

=========  ==========================  =================================
setting    values                      QEMU
=========  ==========================  =================================
cache      none writeback writethrough  -drive cache=  (nova.conf
           directsync unsafe            [libvirt] disk_cachemodes)
format     raw qcow2                   the data disk's format
bus        virtio-blk virtio-scsi      virtio-blk-pci, or virtio-scsi-pci
                                       + scsi-hd (hw_disk_bus)
iothread   on off                      -object iothread + iothread= on
                                       the disk's device
hugepages  on off                      memory-backend-file on hugetlbfs
                                       (hw:mem_page_size)
pinning    on off                      taskset: each guest on its own
                                       host CPUs (hw:cpu_policy=dedicated)
vhost      on off                      network workloads: vhost-net
vcpus      1 2 ...                     -smp (seed 003 step 2)
=========  ==========================  =================================
"""

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
import dataclasses
import os
from typing import Any
from typing import TYPE_CHECKING

from kvmtune.bench.local import Measured
from kvmtune.errors import InputError
from kvmtune.workloads import Workload

if TYPE_CHECKING:
    from kvmtune.results.records import Record

DEFAULTS = {'cache': 'none', 'format': 'raw', 'bus': 'virtio-blk',
            'iothread': 'on', 'hugepages': 'off', 'pinning': 'off',
            'vhost': 'off', 'vcpus': 1}
CHOICES = {
    'cache': ('none', 'writeback', 'writethrough', 'directsync', 'unsafe'),
    'format': ('raw', 'qcow2'),
    'bus': ('virtio-blk', 'virtio-scsi'),
    'iothread': ('on', 'off'),
    'hugepages': ('on', 'off'),
    'pinning': ('on', 'off'),
    'vhost': ('on', 'off'),
}
DISK_ONLY = ('cache', 'format', 'bus', 'iothread')
NET_ONLY = ('vhost',)
VHOST_NET = '/dev/vhost-net'
MEMINFO = '/proc/meminfo'
MOUNTS = '/proc/mounts'


def parse_axis(text: str) -> tuple[str, list[Any]]:
    """``SETTING=V1,V2[,...]`` -> (setting, [values]); InputError else."""
    name, sep, values = text.partition('=')
    name = name.strip()
    known = sorted(list(CHOICES) + ['vcpus'])
    if not sep or name not in known:
        raise InputError(f'not SETTING=V1,V2: {text!r}', key='--compare',
                         fix=f'SETTING one of {", ".join(known)}')
    picked = [v.strip() for v in values.split(',') if v.strip()]
    if len(picked) < 1 or len(set(picked)) != len(picked):
        raise InputError(f'{name}: give distinct values, comma-separated',
                         key='--compare',
                         fix=f'e.g. --compare {name}=V1,V2 with two '
                             'different values')
    if name == 'vcpus':
        if not all(v.isdigit() and int(v) >= 1 for v in picked):
            raise InputError(f'vcpus: whole numbers >= 1, not {values!r}',
                             key='--compare', fix='e.g. --compare '
                             'vcpus=1,2')
        return name, [int(v) for v in picked]
    bad = [v for v in picked if v not in CHOICES[name]]
    if bad:
        raise InputError(f'{name}: unknown value {bad[0]!r}',
                         key='--compare',
                         fix=f'one of {", ".join(CHOICES[name])}')
    return name, picked


def check_axes(axes: Iterable[tuple[str, Sequence[Any]]],
               workload: Workload) -> None:
    """InputError for a setting the workload does not exercise."""
    seen = set()
    for name, _ in axes:
        if name in seen:
            raise InputError(f'{name} given twice', key='--compare',
                             fix='one --compare per setting')
        seen.add(name)
        if name in DISK_ONLY and workload.target != 'disk':
            raise InputError(f'{name} is a data disk setting; '
                             f'{workload.name} uses no disk',
                             key='--compare',
                             fix='compare it with a fio workload')
        if name in NET_ONLY and workload.target != 'peer':
            raise InputError(f'{name} is a NIC setting; {workload.name} '
                             'uses no network', key='--compare',
                             fix='compare it with an iperf3 or sockperf '
                                 'workload')


def runs(base: Mapping[str, Any], axes: Iterable[tuple[str, Sequence[Any]]]
         ) -> list[tuple[str, dict[str, Any]]]:
    """[(label, settings)] one column per value of every axis, in order.

    :param base: the settings every run starts from (DEFAULTS overridden
        by the command line)
    :param axes: [(setting, [values])]
    """
    columns = []
    for name, values in axes:
        for value in values:
            columns.append((f'{name}={value}', dict(base, **{name: value})))
    return columns


def key(settings: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, str(v)) for k, v in settings.items()))


def _meminfo(path: str = MEMINFO) -> dict[str, int]:
    found = {}
    try:
        with open(path) as f:
            for line in f:
                name, _, value = line.partition(':')
                parts = value.split()
                if parts and parts[0].isdigit():
                    found[name.strip()] = int(parts[0])
    except OSError:
        pass
    return found


def hugetlbfs_mount(mounts: str = MOUNTS) -> str | None:
    """The first hugetlbfs mount of 2 MB pages (the default size), or
    None."""
    try:
        with open(mounts) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) >= 4 and fields[2] == 'hugetlbfs':
            sizes = [o for o in fields[3].split(',')
                     if o.startswith('pagesize=')]
            if not sizes or sizes[0] in ('pagesize=2M', 'pagesize=2048k'):
                return fields[1]
    return None


def skip_reason(settings: Mapping[str, Any], vms: int, ram_mb: int,
                host_cpus: int, meminfo: Mapping[str, int] | None = None,
                mount: str | None = None,
                vhost_device: str = VHOST_NET) -> str | None:
    """Why this host cannot run ``settings`` (one line with the fix), or
    None. Nothing here changes the host: reserving huge pages or loading
    vhost_net is the operator's call."""
    if settings.get('hugepages') == 'on':
        info = _meminfo() if meminfo is None else meminfo
        page_kb = info.get('Hugepagesize', 2048)
        need = vms * -(-ram_mb * 1024 // page_kb)
        free = info.get('HugePages_Free', 0)
        where = hugetlbfs_mount() if mount is None else mount
        if free < need:
            return (f'hugepages=on skipped: {free} free {page_kb} kB huge '
                    f'pages, {vms} guest(s) of {ram_mb} MB need {need} '
                    f'(echo {need} > /proc/sys/vm/nr_hugepages, then '
                    'mount -t hugetlbfs none /dev/hugepages)')
        if not where:
            return ('hugepages=on skipped: no hugetlbfs mount (mount -t '
                    'hugetlbfs none /dev/hugepages)')
    if settings.get('vhost') == 'on' and not os.path.exists(vhost_device):
        return (f'vhost=on skipped: {vhost_device} is missing (no vhost_net '
                'module on this host: modprobe vhost_net); vhost=off runs')
    if settings.get('pinning') == 'on':
        need = vms * int(settings.get('vcpus', 1))
        if need > host_cpus:
            return (f'pinning=on skipped: {vms} guest(s) of '
                    f'{settings.get("vcpus", 1)} vCPU need {need} host '
                    f'CPUs to themselves, this host has {host_cpus}')
    return None


@dataclasses.dataclass
class Column:
    """One column of a comparison: the guests measured with its settings,
    or why this host could not give them."""

    label: str
    settings: dict[str, Any]
    guests: list[Measured] = dataclasses.field(default_factory=list)
    skipped: str | None = None

    def doc(self) -> dict[str, Any]:
        """The column as ``bench local -o`` writes it (rows: Measured.flat)."""
        out: dict[str, Any] = {'label': self.label,
                               'settings': self.settings}
        if self.skipped:
            return dict(out, skipped=self.skipped)
        return dict(out, rows=[g.flat() for g in self.guests])


def run_columns(columns: Sequence[tuple[str, dict[str, Any]]], vms: int,
                ram_mb: int, host_cpus: int, workload: str,
                measure: Callable[[dict[str, Any], Callable[[str], None]],
                                  list[Measured]],
                log: Callable[[str], None] = print) -> list[Column]:
    """Measure every column (``runs``) with ``measure(settings, log)``:
    a column this host cannot give is skipped with its reason, one whose
    settings equal an earlier column's reuses that run."""
    done: dict[tuple[tuple[str, str], ...], list[Measured]] = {}
    out = []
    for label, settings in columns:
        why_not = skip_reason(settings, vms, ram_mb, host_cpus)
        if why_not:
            log(why_not)
            out.append(Column(label, settings, skipped=why_not))
            continue
        k = key(settings)
        if k not in done:
            log(f'--- {label}: {vms} VM(s) of {workload} '
                f'({" ".join(f"{n}={v}" for n, v in settings.items())})')
            done[k] = measure(settings, lambda line: log(f'    {line}'))
            ok = sum(1 for g in done[k] if g.row.ok)
            log(f'    {ok}/{vms} guest(s) valid')
        else:
            log(f'--- {label}: same settings as an earlier column, '
                'its run reused')
        out.append(Column(label, settings, done[k]))
    return out


def record(kind: str, workload: Workload, accel: str, why: str | None,
           settings: Mapping[str, Any], params: dict[str, Any],
           runtime: int) -> 'Record':
    """The record (kvmtune.results.records) of a bench local run or
    --compare on this host, with only the settings the workload
    exercises (no disk settings for sysbench)."""
    from kvmtune import facts as host_facts
    from kvmtune.results import records

    settings = {k: v for k, v in settings.items()
                if not (k in DISK_ONLY and workload.target != 'disk')
                and not (k in NET_ONLY and workload.target != 'peer')}

    return records.make(kind, workload, host_facts.gather(), accel,
                        records.Conditions(params=params, runtime=runtime,
                                           settings=settings, virt=accel,
                                           why=why))
