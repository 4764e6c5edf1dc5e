"""kvmtune bench nested: what it refuses, as one line and exit status 2,
before any guest boots (the runs: tests/unit/bench/test_nested.py and
the figures in doc/experiments.md, 000)."""

import pytest

from kvmtune import cli


@pytest.fixture
def image_dir(tmp_path):
    """A benchmark image directory whose nested/ image is complete."""
    nested = tmp_path / 'nested'
    nested.mkdir()
    for name in ('vmlinuz', 'initrd.img', 'kvmtune-bench.raw'):
        (nested / name).write_bytes(b'')
    return str(tmp_path)


@pytest.mark.parametrize('argv,words', [
    (['--workload', 'no-such'], "unknown workload 'no-such'"),
    (['--workload', 'iperf3-tcp-stream'], 'needs a peer'),
    (['--workload', 'sysbench-cpu', '--vcpus', '0'], '--vcpus'),
    (['--workload', 'sysbench-cpu', '--ram-mb', '0'], '--ram-mb'),
    (['--workload', 'sysbench-cpu', '--runtime', '0'], '--runtime'),
    (['--workload', 'sysbench-cpu', '--levels', 'L3'], "unknown level 'L3'"),
    (['--workload', 'sysbench-cpu', '--param', 'runtime=x'],
     'not a whole number'),
])
def test_refused_with_one_line(argv, words, image_dir, capsys):
    assert cli.main(['bench', 'nested', '--image-dir', image_dir,
                     *argv]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1, err
    assert err[0].startswith('kvmtune: error: ')
    assert words in err[0]


def test_missing_nested_image_names_the_build(tmp_path, capsys):
    assert cli.main(['bench', 'nested', '--workload', 'sysbench-cpu',
                     '--image-dir', str(tmp_path)]) == 2
    (err,) = capsys.readouterr().err.splitlines()
    assert 'kvmtune image build --nested' in err
