"""kvmtune.mainjob.hugepages: the page size and count the main job's tuned
guests need on their compute, and the pool raised through a copy of the
host's sysfs tree (the whole compute setup: test_compute.py)."""

import os
import shutil

import pytest

from kvmtune.errors import CloudError
from kvmtune.errors import KvmtuneError
from kvmtune import facts
from kvmtune.mainjob import compute
from kvmtune.mainjob import hugepages
from tests import paths

HOSTS = os.path.join(paths.FIXTURES, 'hosts')
KB_2M, KB_1G = 2048, 1024 * 1024


def test_boot_arguments_hold_at_least_the_pages_needed():
    intel = facts.gather(os.path.join(HOSTS, 'intel-2s-smt-ept-1g'))
    profile = compute.load_profile('pinned-hugepages-ept')
    # the plan keeps the 32 x 1 GB pool the host has ...
    assert hugepages.guest_pages(profile, intel, 3, 1024).kernel_args == [
        'default_hugepagesz=1G', 'hugepagesz=1G', 'hugepages=32']
    # ... unless the guests need more
    assert hugepages.guest_pages(profile, intel, 40, 1024).kernel_args[-1] \
        == 'hugepages=43'


def test_1g_pages_for_guests_not_a_whole_gb_refused(tmp_path):
    found = facts.gather(os.path.join(HOSTS, 'intel-2s-smt-ept-1g'))
    path = tmp_path / 'gb.yaml'
    path.write_text('description: 1G\nsource: test\ntuners:\n'
                    '  - {name: hugepages, params: {page_size: 1GB}}\n')
    with pytest.raises(KvmtuneError,
                       match='are no whole number of 1 GB pages, Nova cannot '
                             'place them') as err:
        hugepages.guest_pages(compute.load_profile(str(path)), found, 1, 256)
    assert 'no whole number of 1 GB pages' in err.value.line()
    need = hugepages.guest_pages(compute.load_profile(str(path)), found, 2,
                                 2048)
    assert (need.size_kb, need.count) == (KB_1G, 4 + 2 + 1)


def test_page_labels():
    assert hugepages.Pages(KB_1G, 3, 'why', []).label == '1 GB'


def test_a_profile_without_huge_pages_needs_none():
    intel = facts.gather(os.path.join(HOSTS, 'intel-2s-smt-ept-1g'))
    assert hugepages.guest_pages(compute.load_profile('cpu-pinning'),
                                 intel, 3, 1024) is None


def test_large_takes_2m_when_1g_does_not_divide_the_guest_ram():
    intel = facts.gather(os.path.join(HOSTS, 'intel-2s-smt-ept-1g'))
    profile = compute.load_profile('pinned-hugepages-ept')
    need = hugepages.guest_pages(profile, intel, 3, 512)
    assert need.size_kb == KB_2M
    assert 'no whole number of them, so 2 MB' in need.why
    # three 512 MB guests, the reserve, 128 MB of slack
    assert need.count >= 3 * 256 + 64


@pytest.fixture
def sysfs(tmp_path):
    root = tmp_path / 'host'
    shutil.copytree(os.path.join(HOSTS, 'intel-2s-smt-ept-1g'), root,
                    symlinks=True)
    return str(root)


def nr(root, kb):
    with open(os.path.join(root, hugepages.NR_HUGEPAGES.format(kb=kb))) as f:
        return int(f.read())


def test_the_pool_is_raised_never_lowered(sysfs):
    before = nr(sysfs, KB_2M)
    hugepages.reserve_hugepages(hugepages.Pages(KB_2M, before + 10, 'w',
                                                []), root=sysfs)
    assert nr(sysfs, KB_2M) == before + 10
    hugepages.reserve_hugepages(hugepages.Pages(KB_2M, 1, 'w', []),
                                root=sysfs)
    assert nr(sysfs, KB_2M) == before + 10


def test_a_pool_the_kernel_lacks_names_the_boot_arguments(sysfs):
    shutil.rmtree(os.path.join(sysfs, 'sys/kernel/mm/hugepages/'
                                      'hugepages-1048576kB'))
    with pytest.raises(CloudError) as err:
        hugepages.reserve_hugepages(hugepages.Pages(
            KB_1G, 4, 'w', ['hugepagesz=1G', 'hugepages=4']), root=sysfs)
    line = err.value.line()
    assert 'no 1 GB page pool in this kernel' in line
    assert 'hugepagesz=1G hugepages=4' in line
