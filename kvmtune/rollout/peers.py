"""Peer outliers across a fleet: hosts of one hardware class whose
benchmark medians stand apart from their peers', and the facts in which
they differ from them.

Hosts are grouped by hardware class (kvmtune.rollout.control); within a
group of at least MIN_PEERS hosts each metric's host medians get robust
z-scores (0.6745 (x - median) / MAD, kvmtune.stats.robust_z): one wild
host cannot hide itself by inflating a standard deviation, as it would
with a mean and sigma (Rally's ``outliers`` SLA). A host beyond
kvmtune.stats.OUTLIER_Z is named with the facts that set it apart from
the most common value among its peers: the CPU frequency governor, the
microcode, the kernel release, the kernel arguments, the NUMA shape
(CANARY-NOTES.md section 5, idea 4). A fact the facts do not hold is not
compared.
"""

import collections
from collections.abc import Mapping
import dataclasses
from typing import Any

from kvmtune.rollout import control
from kvmtune import stats

MIN_PEERS = 4
# arguments every host has its own value of
_OWN_ARGS = ('BOOT_IMAGE', 'root', 'initrd', 'resume', 'rd.lvm.lv')


@dataclasses.dataclass(frozen=True)
class Outlier:
    host: str
    hardware_class: str
    metric: str
    value: float
    peer_median: float
    z: float
    differs: dict[str, tuple[str, str]]   # fact: (this host's, peers')

    def to_dict(self) -> dict[str, Any]:
        return {'host': self.host, 'hardware_class': self.hardware_class,
                'metric': self.metric, 'value': self.value,
                'peer_median': self.peer_median,
                'z': self.z if abs(self.z) != float('inf') else None,
                'differs': {k: list(v) for k, v in self.differs.items()}}


def _args(cmdline: object) -> str:
    if not isinstance(cmdline, str):
        return ''
    return ' '.join(sorted(a for a in cmdline.split()
                           if a.split('=', 1)[0] not in _OWN_ARGS))


def comparable_facts(facts: Mapping[str, Any]) -> dict[str, str]:
    """The facts an outlier is explained by, as text; those the facts do
    not hold are left out."""
    cpu = facts.get('cpu') or {}
    kernel = facts.get('kernel') or {}
    out = {}
    for name, value in (('governor', cpu.get('governor')),
                        ('microcode', cpu.get('microcode')),
                        ('kernel release', kernel.get('release'))):
        if value is not None:
            out[name] = str(value)
    if isinstance(kernel.get('cmdline'), str):
        out['kernel arguments'] = _args(kernel['cmdline'])
    nodes = (facts.get('numa') or {}).get('nodes')
    if isinstance(nodes, list):
        out['NUMA shape'] = 'x'.join(
            str(len(n.get('cpus') or [])) for n in nodes
            if isinstance(n, Mapping))
    return out


def _differs(host: str, peers: list[str],
             facts: Mapping[str, Mapping[str, Any]]
             ) -> dict[str, tuple[str, str]]:
    mine = comparable_facts(facts[host])
    theirs = [comparable_facts(facts[p]) for p in peers if p != host]
    out = {}
    for name, value in mine.items():
        common = collections.Counter(t[name] for t in theirs if name in t)
        if not common:
            continue
        usual, _ = common.most_common(1)[0]
        if value != usual:
            if name == 'kernel arguments':
                a, b = set(value.split()), set(usual.split())
                value = ' '.join(sorted(a - b)) or '-'
                usual = ' '.join(sorted(b - a)) or '-'
            out[name] = (value, usual)
    return out


def classes(facts: Mapping[str, Mapping[str, Any]]
            ) -> list[tuple[control.HardwareClass, list[str]]]:
    """The hosts grouped by hardware class (a host joins the first group
    whose class it matches), in name order."""
    groups: list[tuple[control.HardwareClass, list[str]]] = []
    for host in sorted(facts):
        have = control.hardware_class(facts[host], host)
        for cls, hosts in groups:
            if cls.same(have):
                hosts.append(host)
                break
        else:
            groups.append((have, [host]))
    return groups


def outliers(medians: Mapping[str, Mapping[str, float]],
             facts: Mapping[str, Mapping[str, Any]]) -> list[Outlier]:
    """Hosts whose median of a metric lies beyond OUTLIER_Z robust
    z-scores of their class's, each with the facts it differs in.
    ``medians``: {host: {metric: median}}; hosts without facts are left
    out."""
    found = []
    known = {h: f for h, f in facts.items() if h in medians}
    for cls, hosts in classes(known):
        if len(hosts) < MIN_PEERS:
            continue
        metrics = sorted({m for h in hosts for m in medians[h]})
        for metric in metrics:
            have = [h for h in hosts if metric in medians[h]]
            if len(have) < MIN_PEERS:
                continue
            values = [medians[h][metric] for h in have]
            middle = stats.median(values)
            for host, z in zip(have, stats.robust_z(values)):
                if abs(z) > stats.OUTLIER_Z:
                    found.append(Outlier(
                        host, str(cls), metric, medians[host][metric],
                        middle, z, _differs(host, have, facts)))
    return found
