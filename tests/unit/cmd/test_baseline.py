"""``kvmtune baseline``: a workload on the bare host, saved so that
``kvmtune report`` can read it back. Runs the real sysbench (one second);
the workload runners themselves are tested in tests/unit/bench/."""

import re

import pytest

from kvmtune.bench import baseline
from kvmtune import cli
from kvmtune.cmd import baseline as command
from kvmtune.errors import InputError


def test_a_cpu_baseline_is_run_saved_and_read_back(tmp_path, capsys):
    out_file = tmp_path / 'baseline.json'
    assert cli.main(['baseline', '--workload', 'sysbench-cpu-1t',
                     '--runtime', '1', '-o', str(out_file)]) == 0
    doc = baseline.load(str(out_file))
    assert doc['workload'] == 'sysbench-cpu-1t'
    assert doc['runtime'] == 1
    assert doc['command'][:2] == ['sysbench', 'cpu']
    assert '--time=1' in doc['command']
    assert doc['result']['events_s'] > 0
    first, second = capsys.readouterr().out.splitlines()
    assert first.startswith('sysbench-cpu-1t on the bare host (sysbench ')
    figure = re.search(r'events_s (\d+\.\d)', first)
    # the saved figure, printed to one decimal (not compared within 0.05:
    # 4509.55 prints as 4509.6, 0.05000000004 away in binary floats)
    assert figure[1] == f"{doc['result']['events_s']:.1f}"
    assert second.startswith(f'baseline saved to {out_file}')


def test_a_write_workload_refuses_a_file_holding_data(tmp_path, capsys):
    target = tmp_path / 'data.img'
    target.write_bytes(b'precious' * 512)
    out_file = tmp_path / 'baseline.json'
    assert cli.main(['baseline', '--workload', 'fio-randwrite-4k',
                     '--target', str(target), '-o', str(out_file)]) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and '--destroy-data' in err
    assert target.read_bytes() == b'precious' * 512
    assert not out_file.exists()


@pytest.mark.parametrize('argv, words', [
    (['--runtime', '0'], '--runtime: must be positive'),
    (['--param', 'novalue'], "--param: not KEY=VALUE: 'novalue'"),
    (['--param', 'nosuchoption=1'], 'nosuchoption'),
])
def test_bad_arguments_are_one_line_before_any_run(argv, words, tmp_path,
                                                   capsys):
    out_file = tmp_path / 'baseline.json'
    assert cli.main(['baseline', '--workload', 'sysbench-cpu-1t',
                     '-o', str(out_file), *argv]) == 2
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and words in err
    assert not out_file.exists()


def test_parse_params_types_digits_as_numbers():
    assert command.parse_params(['size=256M', 'iodepth=32', 'rw=']) == {
        'size': '256M', 'iodepth': 32, 'rw': ''}
    with pytest.raises(InputError, match="not KEY=VALUE: '=1'"):
        command.parse_params(['=1'])


def test_the_summary_prints_bytes_per_second_in_mib_per_second():
    result = {'iops': 1000.0, 'bw_bytes_s': 4096000.0,
              'lat_ns': {'mean': 2500.0}}
    assert command.figures(result) == ['iops 1000.0', '3.9 MiB/s',
                                       'lat mean 2.5 us']
