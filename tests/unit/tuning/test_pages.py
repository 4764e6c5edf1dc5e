"""kvmtune.tuning.pages on a copy of the kernel's per-node sysfs layout.

The layout is the kernel's (Documentation/admin-guide/mm/hugetlbpage.rst,
"Interaction of Task Memory Policy with Huge Page Allocation/Freeing" and
the per node hugepages attributes); the real kernel is written by
tests/functional/test_devstack_real.py.
"""

import pytest

from kvmtune.errors import InputError
from kvmtune.tuning import pages


def make_node(root, node, free_kb, pools):
    base = root / 'sys' / 'devices' / 'system' / 'node' / f'node{node}'
    for size_kb, count in pools.items():
        pool = base / 'hugepages' / f'hugepages-{size_kb}kB'
        pool.mkdir(parents=True)
        (pool / 'nr_hugepages').write_text(f'{count}\n')
    (base / 'meminfo').write_text(
        f'Node {node} MemTotal:       16000000 kB\n'
        f'Node {node} MemFree:        {free_kb} kB\n')


@pytest.fixture
def root(tmp_path):
    make_node(tmp_path, 0, 1024 * 1024, {2048: 0, 1048576: 0})
    make_node(tmp_path, 1, 64 * 1024, {2048: 4})
    return tmp_path


def test_read_pools(root):
    assert pages.read_pools(str(root)) == {
        (0, 2048): 0, (0, 1048576): 0, (1, 2048): 4}
    assert pages.free_kb(1, str(root)) == 64 * 1024


@pytest.mark.parametrize('text,pool', [
    ('0:2M:512', pages.Pool(0, 2048, 512)),
    ('1:1G:2', pages.Pool(1, 1048576, 2)),
    ('0:2048:1', pages.Pool(0, 2048, 1)),
    ('0:2MB:0', pages.Pool(0, 2048, 0)),
])
def test_parse_pool(text, pool):
    assert pages.parse_pool(text) == pool


@pytest.mark.parametrize('text', ['0:2M', 'a:2M:1', '0:3Q:1', '0:2M:-1'])
def test_parse_pool_refuses(text):
    with pytest.raises(ValueError, match=r"^'.*' is not "):
        pages.parse_pool(text)


def test_apply_sets_each_node_and_says_so(root):
    said = []
    wanted = [pages.Pool(0, 2048, 16),
              {'node': 1, 'size_kb': 2048, 'count': 4}]
    done = pages.apply(wanted, str(root), say=said.append)
    assert [(a.before, a.after) for a in done] == [(0, 16), (4, 4)]
    assert pages.read_count(0, 2048, str(root)) == 16
    assert said == ['hugepages: node 0 2 MB: 0 -> 16',
                    'hugepages: node 1 2 MB: 4 already']


def test_growth_beyond_free_memory_is_refused_before_any_write(root):
    # node 1 has 64 MB free: 40 more 2 MB pages need 80 MB.
    with pytest.raises(pages.PagesRefused,
                       match='need 81920 kB more and node 1 has '
                             '65536 kB free') as err:
        pages.apply([pages.Pool(0, 2048, 16), pages.Pool(1, 2048, 44)],
                    str(root))
    line = err.value.line()
    assert 'need 81920 kB more and node 1 has 65536 kB free' in line
    assert 'hugepagesz=2M hugepages=44' in line
    assert pages.read_count(0, 2048, str(root)) == 0


def test_missing_node_or_size_is_refused(root):
    with pytest.raises(pages.PagesRefused,
                       match='there is no NUMA node 2') as err:
        pages.apply([pages.Pool(2, 2048, 1)], str(root))
    assert 'there is no NUMA node 2' in err.value.line()
    with pytest.raises(pages.PagesRefused,
                       match='this kernel has no 1 GB pages') as err:
        pages.apply([pages.Pool(1, 1048576, 1)], str(root))
    assert 'this kernel has no 1 GB pages' in err.value.line()


def test_a_pool_given_twice_is_bad_input(root):
    with pytest.raises(InputError, match='^node 0 2 MB: given twice'):
        pages.apply([pages.Pool(0, 2048, 1), pages.Pool(0, 2048, 2)],
                    str(root))
