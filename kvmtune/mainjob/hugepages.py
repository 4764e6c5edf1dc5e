"""Huge pages for the main job's tuned guests: which page size and how many
pages the tuned flavor needs on its compute (Pages, guest_pages), and
raising that pool through /sys/kernel/mm/hugepages (reserve_hugepages)."""
import dataclasses
import os
from typing import cast
from typing import TYPE_CHECKING

from kvmtune.errors import CloudError
from kvmtune.errors import KvmtuneError
from kvmtune.mainjob import steps
from kvmtune import pagesize

if TYPE_CHECKING:
    from kvmtune.facts.types import Facts
    from kvmtune.tuning.plan import Plan
    from kvmtune.tuning.profiles import Profile
    from kvmtune.tuning.tuners.hugepages import Hugepages

# One pool per page size; the kernel fills or empties it on a write.
NR_HUGEPAGES = os.path.join('sys', 'kernel', 'mm', 'hugepages',
                            'hugepages-{kb}kB', 'nr_hugepages')
SMALLEST_HUGEPAGE_KB = 2048     # x86-64: 2 MB, then 1 GB
HUGEPAGE_MARGIN_MB = 128        # beyond the guests' RAM, for QEMU's slack


@dataclasses.dataclass
class Pages:
    """The huge pages the tuned guests need on their compute."""

    size_kb: int          # page size (a pool under /sys/kernel/mm)
    count: int            # pages for max_vms guests, Nova's reserve, slack
    why: str              # how the flavor's hw:mem_page_size led here
    kernel_args: list[str]  # the plan's boot-time pool of this size

    @property
    def label(self) -> str:
        return pagesize.text(self.size_kb)


def _pool_name(size_kb: int) -> str | None:
    """'1G' or '2M', the tuner's names of the x86 page pools."""
    from kvmtune.tuning.tuners import hugepages

    return {kb: name for name, kb in hugepages.PAGE_KB.items()}.get(size_kb)


def _hugepages_tuner(profile: 'Profile', facts: 'Facts',
                     size_kb: int | None = None) -> 'Hugepages | None':
    """The profile's hugepages tuner, its pool set to size_kb if given."""
    from kvmtune.tuning.tuners import hugepages

    for ref in profile.tuner_refs:
        if ref.name == hugepages.Hugepages.name:
            params = dict(ref.params)
            if size_kb:
                params['host_page_size'] = _pool_name(size_kb)
            return cast('Hugepages', ref.tuner_class(
                params, facts, source=profile.path))
    return None


def plan_for(profile: 'Profile', facts: 'Facts') -> 'Plan':
    """The profile's plan for a compute's facts, through the one front
    door (kvmtune.tuning.plan.for_host): a plan that withheld values is refused
    here, before the job changes anything."""
    from kvmtune.tuning import plan as plans

    [plan] = plans.for_host([profile], facts=facts)
    return plan


def guest_pages(profile: 'Profile', facts: 'Facts', max_vms: int,
                ram_mb: int, plan: 'Plan | None' = None) -> Pages | None:
    """Pages of the size the profile's flavor asks for (hw:mem_page_size),
    or None when its guests take no huge pages (small, any or unset).

    Nova backs `large` with the largest host page that divides the
    guest's RAM (it tries them largest first); the candidates are the
    pool the profile's plan makes (1 GB with pdpe1gb, else 2 MB) and 2 MB.
    """
    from kvmtune.tuning.tuners import hugepages

    if plan is None:
        plan = plan_for(profile, facts)
    spec = plan.extra_specs.get('hw:mem_page_size')
    if spec is None:
        return None
    ram_kb = ram_mb * 1024
    explicit = hugepages.page_size_kb(spec)
    if explicit is not None:
        size_kb = explicit
        if _pool_name(size_kb) is None:
            raise KvmtuneError(f'no {size_kb} KiB pages on x86-64',
                               source=profile.path, key='hw:mem_page_size',
                               fix='use 2MB, 1GB or large')
        if ram_kb % size_kb:
            raise KvmtuneError(
                f'{ram_mb} MB guests are no whole number of '
                f'{pagesize.text(size_kb)} pages, Nova cannot place them',
                source=profile.path, key='hw:mem_page_size',
                fix='use a page size that divides the guest RAM')
        why = f'hw:mem_page_size={spec}'
    elif spec == 'large':
        pool = hugepages.PAGE_KB[cast('Hugepages', _hugepages_tuner(
            profile, facts)).pool_size()]
        fits = [kb for kb in (pool, SMALLEST_HUGEPAGE_KB) if not ram_kb % kb]
        size_kb = fits[0] if fits else SMALLEST_HUGEPAGE_KB
        why = (f'hw:mem_page_size=large: Nova takes the largest page that '
               f'divides the guest RAM; the plan\'s pool has '
               f'{pagesize.text(pool)} pages')
        if size_kb != pool:
            why += (f', {ram_mb} MB is no whole number of them, so '
                    f'{pagesize.text(size_kb)}')
    else:
        return None
    tuner = _hugepages_tuner(profile, facts, size_kb)
    reserved = (tuner.params['host_reserved_pages'] * len(tuner.numa_nodes())
                if tuner else 0)
    count = (max_vms * -(-ram_kb // size_kb) + reserved +
             -(-HUGEPAGE_MARGIN_MB * 1024 // size_kb))
    # The plan's boot-time pool of this size (the profile's own sizing),
    # never smaller than what the job needs.
    boot = cast(list[str], tuner.pool_args()) if tuner else [
        f'hugepagesz={_pool_name(size_kb)}', 'hugepages=0']
    boot = [f'hugepages={max(int(arg.split("=")[1]), count)}'
            if arg.startswith('hugepages=') else arg for arg in boot]
    return Pages(size_kb, count, why, boot)


def _read_int(path: str) -> int:
    with open(path) as f:
        return int(f.read())


def _write_int(path: str, value: int) -> None:
    with open(path, 'w') as f:
        f.write(str(value))


def reserve_hugepages(pages: Pages, root: str = '/') -> None:
    """Raise the pool of pages.size_kb to pages.count (never lower it);
    the kernel may find fewer free, so read back what it gave."""
    from kvmtune.tuning.tuners import base

    path = os.path.join(root, NR_HUGEPAGES.format(kb=pages.size_kb))
    boot_fix = base.KERNEL_ARGS_FIX.format(args=' '.join(pages.kernel_args))
    if not os.path.exists(path):
        raise CloudError(f'no {pages.label} page pool in this kernel',
                         source=path, fix=boot_fix)
    before = _read_int(path)
    if before >= pages.count:
        steps.detail(f'hugepages: {before} x {pages.label} already, '
                     f'{pages.count} needed')
        return
    try:
        _write_int(path, pages.count)
    except OSError as exc:
        raise CloudError(f'cannot grow the {pages.label} pool: '
                         f'{exc.strerror}', source=path,
                         fix='run the job as root on the compute') from None
    got = _read_int(path)
    if got < pages.count:
        # Large pages need contiguous free memory: 1 GB ones rarely
        # exist after boot, so the pool is made at boot.
        raise CloudError(f'the kernel gave {got} of {pages.count} '
                         f'{pages.label} pages', source=path,
                         fix=('free memory and run again, or '
                              if pages.size_kb == SMALLEST_HUGEPAGE_KB
                              else '') + boot_fix)
    steps.detail(f'hugepages: {before} -> {got} x {pages.label} for the '
                 'tuned guests')
