"""Huge pages per NUMA node and page size: read them, and set them.

The kernel keeps one pool per node and page size, and Nova counts guest
huge pages per host NUMA node, so pools are set per node, through
``/sys/devices/system/node/node<N>/hugepages/hugepages-<kB>kB/nr_hugepages``
(the kernel's admin-guide/mm/hugetlbpage.rst, "per node huge pages"), not
``vm.nr_hugepages``, which spreads one count of the default size over all
nodes.

``apply`` is the one function that changes pools, for every caller (the
main job, the DevStack plugin, ``kvmtune pages apply``). It refuses, with
one line and before writing anything, a pool the kernel does not have (no
such node, or a page size this CPU lacks) and growth the node's free memory
cannot hold; after writing it reads each pool back, and when the kernel
gave fewer pages (free memory is fragmented, as it usually is for 1 GB
pages after boot) it puts every pool it changed back and refuses. Not
root: the writes go through ``sudo -n`` (kvmtune.privileged).
"""

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
import dataclasses
import os
import re
from typing import Any

from kvmtune.errors import InputError
from kvmtune.errors import KvmtuneError
from kvmtune import pagesize
from kvmtune import privileged

NODES = os.path.join('sys', 'devices', 'system', 'node')
POOL = os.path.join('node{node}', 'hugepages', 'hugepages-{size_kb}kB',
                    'nr_hugepages')


class PagesRefused(KvmtuneError):
    """The kernel cannot give the pages asked for; nothing is left changed."""


@dataclasses.dataclass(frozen=True)
class Pool:
    """``count`` pages of ``size_kb`` KiB on NUMA node ``node``."""

    node: int
    size_kb: int
    count: int

    @property
    def label(self) -> str:
        return f'node {self.node} {pagesize.text(self.size_kb)}'

    def to_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Applied:
    pool: Pool
    before: int
    after: int | None


def parse_pool(text: object) -> Pool:
    """'NODE:SIZE:COUNT' (e.g. 0:2M:512) -> Pool; ValueError otherwise."""
    parts = str(text).split(':')
    if len(parts) != 3 or not parts[0].isdigit() or not parts[2].isdigit():
        raise ValueError(f'{text!r} is not NODE:SIZE:COUNT (e.g. 0:2M:512)')
    return Pool(int(parts[0]), pagesize.kib(parts[1]), int(parts[2]))


def pools_from(items: Iterable[Pool | Mapping[str, Any]]) -> list[Pool]:
    """Pools from dicts ({'node', 'size_kb', 'count'}, as a plan's
    ``hugepages`` key has them) or Pool objects."""
    return [item if isinstance(item, Pool) else
            Pool(int(item['node']), int(item['size_kb']), int(item['count']))
            for item in items]


def pool_path(node: int, size_kb: int, root: str = '/') -> str:
    return os.path.join(root, NODES, POOL.format(node=node, size_kb=size_kb))


def read_count(node: int, size_kb: int, root: str = '/') -> int | None:
    """Pages in the pool now, or None when the kernel has no such pool."""
    try:
        with open(pool_path(node, size_kb, root)) as handle:
            return int(handle.read().strip())
    except FileNotFoundError:
        return None


def read_pools(root: str = '/') -> dict[tuple[int, int], int | None]:
    """{(node, size_kb): count} for every pool the kernel has."""
    found = {}
    base = os.path.join(root, NODES)
    for name in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        if not re.fullmatch(r'node\d+', name):
            continue
        pools = os.path.join(base, name, 'hugepages')
        for pool in sorted(os.listdir(pools)) if os.path.isdir(pools) \
                else []:
            match = re.fullmatch(r'hugepages-(\d+)kB', pool)
            if match:
                node, kb = int(name[4:]), int(match.group(1))
                found[(node, kb)] = read_count(node, kb, root)
    return found


def free_kb(node: int, root: str = '/') -> int | None:
    """The node's MemFree in KiB (its meminfo), or None if unreadable."""
    path = os.path.join(root, NODES, f'node{node}', 'meminfo')
    try:
        with open(path) as handle:
            for line in handle:
                match = re.match(r'Node\s+\d+\s+MemFree:\s+(\d+)\s+kB', line)
                if match:
                    return int(match.group(1))
    except FileNotFoundError:
        return None
    return None


def _boot_fix(pools: list[Pool]) -> str:
    sizes = sorted({p.size_kb for p in pools})
    args = ' '.join(
        f'hugepagesz={pagesize.text(kb, compact=True)} hugepages='
        f'{sum(p.count for p in pools if p.size_kb == kb)}' for kb in sizes)
    return (f'free memory and run again, or reserve the pages at boot '
            f'(kernel arguments {args})')


def check(pools: list[Pool], root: str = '/') -> dict[tuple[int, int], int]:
    """Refuse (PagesRefused) what cannot be had, before any write;
    return {(node, size_kb): count now}."""
    now: dict[tuple[int, int], int] = {}
    growth: dict[int, int] = {}
    for pool in pools:
        if pool.count < 0:
            raise InputError(f'{pool.count} pages', key=pool.label,
                             fix='give a count of 0 or more')
        key = (pool.node, pool.size_kb)
        if key in now:
            raise InputError('given twice', key=pool.label,
                             fix='give each node and page size once')
        count = read_count(pool.node, pool.size_kb, root)
        if count is None:
            has_node = os.path.isdir(os.path.join(root, NODES,
                                                  f'node{pool.node}'))
            raise PagesRefused(
                (f'this kernel has no {pagesize.text(pool.size_kb)} pages'
                 if has_node else f'there is no NUMA node {pool.node}'),
                source=pool_path(pool.node, pool.size_kb, root),
                fix=('use a page size the CPU has (2M; 1G needs pdpe1gb)'
                     if has_node else 'give a node this host has'))
        now[key] = count
        if pool.count > count:
            growth[pool.node] = growth.get(pool.node, 0) + \
                (pool.count - count) * pool.size_kb
    for node, needed in sorted(growth.items()):
        free = free_kb(node, root)
        if free is not None and needed > free:
            raise PagesRefused(
                f'the pages asked for need {needed} kB more and node '
                f'{node} has {free} kB free', source=f'NUMA node {node}',
                fix=_boot_fix([p for p in pools if p.node == node]))
    return now


def apply(pools: Iterable[Pool | Mapping[str, Any]], root: str = '/',
          say: Callable[[str], object] | None = None) -> list[Applied]:
    """Make each pool hold exactly ``pool.count`` pages; [Applied].

    :param pools: Pool objects, or dicts as ``pools_from`` takes.
    :param root: the filesystem root (tests use a copy of /sys).
    :param say: a function given one progress line per pool, if any.
    :raises PagesRefused: a pool the kernel lacks, growth free memory
        cannot hold, or fewer pages than asked for after the write (then
        every pool changed here is put back first).
    :raises kvmtune.privileged.NotAllowed: not root and sudo refused.
    """
    wanted = pools_from(pools)
    now = check(wanted, root)
    done = []
    for pool in wanted:
        before = now[(pool.node, pool.size_kb)]
        path = pool_path(pool.node, pool.size_kb, root)
        if before != pool.count:
            privileged.write_knob(path, f'{pool.count}\n')
        after = read_count(pool.node, pool.size_kb, root)
        done.append(Applied(pool, before, after))
        if after != pool.count:
            _put_back(done, root)
            raise PagesRefused(
                f'the kernel gave {after} of {pool.count} '
                f'{pagesize.text(pool.size_kb)} pages; every pool is back '
                'as it was',
                source=path, fix=_boot_fix(wanted))
        if say:
            say(f'hugepages: {pool.label}: {before} -> {after}'
                if before != after else
                f'hugepages: {pool.label}: {after} already')
    return done


def _put_back(done: list[Applied], root: str) -> None:
    for applied in reversed(done):
        if applied.after != applied.before:
            privileged.write_knob(
                pool_path(applied.pool.node, applied.pool.size_kb, root),
                f'{applied.before}\n')
