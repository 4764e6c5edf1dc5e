"""kvmtune.facts.cmdline: a command line read by the kernel's rules
(kernel/sched/isolation.c, kernel/rcu/tree_nocb.h, mm/hugetlb.c), judged
against a plan, and staged with one argument per key."""

import pytest

from kvmtune.errors import InputError
from kvmtune.facts import cmdline


def test_words_stop_at_init_args_and_keep_quotes():
    line = 'ro quiet dyndbg="file a.c +p" isolcpus=2 -- isolcpus=3 --x'
    assert cmdline.words(line) == ['ro', 'quiet', 'dyndbg="file a.c +p"',
                                   'isolcpus=2']
    assert cmdline.pairs(line)[2] == ('dyndbg', 'file a.c +p')
    assert cmdline.words(line, init=True)[-2:] == ['isolcpus=3', '--x']


@pytest.mark.parametrize('text, kb', [('1G', 1048576), ('1GB', 1048576),
                                      ('2M', 2048), ('2048k', 2048),
                                      ('2097152', 2048), ('x', None),
                                      (None, None)])
def test_size_kb(text, kb):
    assert cmdline.size_kb(text) == kb


@pytest.mark.parametrize('value, cpus, flags', [
    ('2-5,8', [2, 3, 4, 5, 8], []),
    ('managed_irq,domain,2-3', [2, 3], ['managed_irq', 'domain']),
    # an unknown flag of letters is skipped, as the kernel skips it
    ('nohz,newflag,4', [4], ['nohz']),
])
def test_isolcpus_flags_as_housekeeping_isolcpus_setup(value, cpus, flags):
    assert cmdline.parse_isolcpus(value) == (cpus, flags)


@pytest.mark.parametrize('value', ['dom-ain,2', 'domain,', '2-x'])
def test_isolcpus_the_kernel_rejects(value):
    with pytest.raises(ValueError):
        cmdline.parse_isolcpus(value)


def test_no_flag_is_domain_and_each_flag_its_type():
    line = cmdline.read('isolcpus=2-3')
    assert line.isolated == {'domain': frozenset({2, 3})}
    line = cmdline.read('isolcpus=nohz,managed_irq,2-3')
    assert set(line.isolated) == {'nohz', 'managed_irq'}


@pytest.mark.parametrize('text, domain, ignored', [
    # housekeeping_setup: the first list of a type counts
    ('isolcpus=2-7 isolcpus=2-9', {2, 3, 4, 5, 6, 7}, ['isolcpus=2-9']),
    ('isolcpus=2-7 isolcpus=2-7', {2, 3, 4, 5, 6, 7}, []),
    # nohz_full is the nohz type: another type, no clash with domain
    ('isolcpus=2-7 nohz_full=2-9', {2, 3, 4, 5, 6, 7}, []),
    # ... but with isolcpus=nohz it clashes, and the isolcpus is ignored
    # whole (its domain type too)
    ('nohz_full=2-9 isolcpus=nohz,domain,2-7', None,
     ['isolcpus=nohz,domain,2-7']),
])
def test_a_second_list_is_ignored_as_the_kernel_ignores_it(
        text, domain, ignored):
    line = cmdline.read(text)
    assert line.isolated.get('domain') == (
        None if domain is None else frozenset(domain))
    assert [word for word, _ in line.ignored] == ignored


def test_rcu_nocbs_last_wins_and_a_bad_list_is_invalid():
    assert cmdline.read('rcu_nocbs=1 rcu_nocbs=2-3').rcu_nocbs == {2, 3}
    assert cmdline.read('rcu_nocbs=x').invalid == ['rcu_nocbs=x']


@pytest.mark.parametrize('text, pools, ignored', [
    ('default_hugepagesz=1G hugepagesz=1G hugepages=16 '
     'hugepagesz=2M hugepages=512', {1048576: 16, 2048: 512}, []),
    # a count before any size is the default size's, wherever that is set
    ('hugepages=64 default_hugepagesz=1G', {1048576: 64}, []),
    ('hugepages=64', {2048: 64}, []),
    # default_hugepagesz=1G then hugepages=: the default size's
    ('default_hugepagesz=1G hugepages=8', {1048576: 8}, []),
    # a size twice: the second and its count are ignored
    ('hugepagesz=1G hugepages=4 hugepagesz=1G hugepages=8',
     {1048576: 4}, ['hugepagesz=1G', 'hugepages=8']),
    # a second count without a hugepagesz between
    ('hugepagesz=2M hugepages=4 hugepages=8', {2048: 4}, ['hugepages=8']),
    # a second default_hugepagesz is ignored, and so is the count after
    # it (default_hugepagesz_setup clears parsed_valid_hugepagesz first)
    ('default_hugepagesz=1G default_hugepagesz=2M hugepages=3',
     {}, ['default_hugepagesz=2M', 'hugepages=3']),
])
def test_pools_as_mm_hugetlb_reads_them(text, pools, ignored):
    line = cmdline.read(text)
    assert {kb: pool.count for kb, pool in line.pools.items()} == pools
    assert [word for word, _ in line.ignored] == ignored


def test_judge_by_meaning():
    line = cmdline.read('ro isolcpus=managed_irq,domain,1-3 '
                        'hugepagesz=2048k hugepages=0:4,1:4 foo=1 foo=2')
    items = cmdline.judge(['isolcpus=1,2,3', 'hugepagesz=2M',
                           'hugepages=0:4,1:4', 'foo=2', 'ro', 'bar'], line)
    assert [item.ok for item in items] == [True, True, True, True, True,
                                           False]
    assert items[2].name == 'hugepages (2M)'
    assert items[-1].live == 'absent'
    # no domain isolation: not the plan's isolcpus
    item, = cmdline.judge(['isolcpus=1-3'],
                          cmdline.read('isolcpus=nohz,managed_irq,1-3'))
    assert not item.ok
    assert cmdline.fix(item, 'isolcpus=nohz,managed_irq,domain,1-3') == (
        'replace isolcpus=nohz,managed_irq,1-3 with '
        'isolcpus=nohz,managed_irq,domain,1-3')


def test_stage_one_argument_per_key_the_operators_kept():
    words = cmdline.words(
        'quiet isolcpus=nohz,domain,managed_irq,2-7 isolcpus=3 '
        'hugepagesz=2M hugepages=512 default_hugepagesz=2M '
        'hugepagesz=1G hugepages=4 nohz_full=2-7 rcu_nocbs=2-7')
    planned = ['isolcpus=2-19', 'default_hugepagesz=1G', 'hugepagesz=1G',
               'hugepages=32']
    drop, args = cmdline.stage(planned, words)
    assert drop == ['isolcpus=nohz,domain,managed_irq,2-7', 'isolcpus=3',
                    'default_hugepagesz=2M', 'hugepagesz=1G', 'hugepages=4']
    assert args[0] == 'isolcpus=nohz,domain,managed_irq,2-19'
    kept = [word for word in words if word not in drop]
    # nohz_full=2-7 before isolcpus=nohz,...,2-19: the kernel would
    # ignore the staged isolcpus whole; refused, naming it
    with pytest.raises(InputError, match='would not give isolcpus=2-19'):
        cmdline.check_staged(planned, cmdline.read(words),
                             ' '.join(kept + args), 'x')
    kept.remove('nohz_full=2-7')
    line = cmdline.check_staged(planned, cmdline.read(words),
                                ' '.join(kept + args), 'x')
    assert line.of_key('isolcpus') == [args[0]]
    # the operator's 2M pool is still reserved
    assert line.pools[2048].count == 512


def test_check_staged_refuses_a_changed_operator_pool():
    before = cmdline.read('hugepages=64')           # 64 pages of 2M
    with pytest.raises(InputError, match="operator's 2M huge page pool"):
        cmdline.check_staged(['default_hugepagesz=1G', 'hugepagesz=1G',
                              'hugepages=4'], before,
                             'default_hugepagesz=1G hugepagesz=1G '
                             'hugepages=4 hugepages=64', 'x')


def test_changes_say_add_or_replace_as_the_line_needs():
    line = cmdline.read('ro isolcpus=domain,2-3 default_hugepagesz=1G')
    assert cmdline.changes(['isolcpus=2-7', 'default_hugepagesz=2M',
                            'hugepagesz=1G', 'hugepages=4'], line) == (
        'add hugepagesz=1G hugepages=4; '
        'replace isolcpus=domain,2-3 with isolcpus=domain,2-7; '
        'replace default_hugepagesz=1G with default_hugepagesz=2M')
    # another size's pool is the operator's: kept, not replaced
    line = cmdline.read('ro hugepagesz=2M hugepages=128')
    assert cmdline.changes(['hugepagesz=1G', 'hugepages=4'], line) == (
        'add hugepagesz=1G hugepages=4')
