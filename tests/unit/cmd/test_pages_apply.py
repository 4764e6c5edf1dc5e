"""kvmtune pages apply: what it refuses, as one line and exit status 2,
before writing anything (the writes are kvmtune.tuning.pages', tested in
tests/unit/tuning/test_pages.py and through DevStack in
tests/functional/test_devstack_real.py)."""

import pytest

from kvmtune import cli


@pytest.mark.parametrize('argv,words', [
    ([], 'give NODE:SIZE:COUNT pools or --profile'),
    (['0:3Q:1'], "'3Q' is not a page size"),
    (['0:2M'], 'is not NODE:SIZE:COUNT'),
    (['4096:2M:1'], 'there is no NUMA node 4096'),
    (['0:2M:1', '--profile', 'baseline'], 'one of them'),
])
def test_refused_with_one_line(argv, words, capsys):
    assert cli.main(['pages', 'apply', *argv]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1
    assert err[0].startswith('kvmtune: error: ')
    assert words in err[0]


def test_a_profile_with_a_fail_check_no_pool_clears_is_refused(
        monkeypatch, capsys):
    """--profile plans for this host (here the PVM capture's facts): the
    missing pool is what pages apply makes, no EPT is refused, named,
    before any pool is touched; --accept-failed-checks goes on."""
    import os

    from kvmtune import facts as host_facts
    from kvmtune.tuning import pages
    from tests import paths

    pvm = host_facts.gather(os.path.join(paths.HOSTS, 'pvm-guest-2cpu'))
    monkeypatch.setattr(host_facts, 'resolve', lambda **kw: pvm)
    applied = []
    monkeypatch.setattr(pages, 'apply',
                        lambda pools, say: applied.append(list(pools)))
    assert cli.main(['pages', 'apply', '--profile',
                     'pinned-hugepages-ept']) == 2
    err = capsys.readouterr().err
    assert 'kvmtune pages apply: refused' in err
    assert 'FAIL ept ept-enabled' in err
    assert applied == []
    assert cli.main(['pages', 'apply', '--profile', 'pinned-hugepages-ept',
                     '--accept-failed-checks']) == 0
    assert applied and applied[0][0]['size_kb'] == 1048576
    assert 'FAIL ept ept-enabled accepted' in capsys.readouterr().err
    # the pool alone: pages apply is its fix, no refusal, no warning
    assert cli.main(['pages', 'apply', '--profile',
                     'pinned-hugepages']) == 0
    assert applied[-1][0]['size_kb'] == 2048
    assert 'warning' not in capsys.readouterr().err
