"""kvmtune image build: what it refuses before building anything (the
builds themselves: tests/functional/test_image_bench.py, and the nested
image through tests/functional/test_nested.py)."""

from kvmtune import cli


def test_nested_image_has_no_network_tools(tmp_path, capsys):
    assert cli.main(['image', 'build', '--nested', '--with-net',
                     '--output', str(tmp_path)]) == 2
    (err,) = capsys.readouterr().err.splitlines()
    assert err.startswith('kvmtune: error: ')
    assert '--with-net' in err and 'nested image' in err
    assert list(tmp_path.iterdir()) == []     # nothing written
