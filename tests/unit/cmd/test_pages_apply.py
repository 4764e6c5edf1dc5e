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
