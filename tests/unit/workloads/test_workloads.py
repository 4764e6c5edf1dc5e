"""Workload definitions: the packaged ones, their parameters, and every
bad definition as one line (the command lines they make:
test_commands.py; the guest job: test_guestjob.py)."""


import pytest

from kvmtune.errors import InputError
from kvmtune import workloads

EXPECTED = {
    'fio-randread-4k', 'fio-randwrite-4k', 'fio-seqread-2m',
    'fio-seqwrite-2m', 'cdm-seq1m-q8t1', 'cdm-4k-q32t1', 'cdm-4k-q1t1',
    'iperf3-tcp-stream', 'iperf3-udp-stream', 'sockperf-tcp-rr',
    'sockperf-udp-rr', 'sysbench-cpu', 'sysbench-cpu-1t',
    'sysbench-memory-read', 'sysbench-memory-write',
}


@pytest.fixture(scope='module')
def defs():
    return workloads.load_all()


def test_packaged_definitions(defs):
    assert set(defs) == EXPECTED
    for w in defs.values():
        assert w.description and w.source
        assert 'runtime' in w.defaults


def test_unknown_parameter_is_refused(defs):
    with pytest.raises(InputError, match="unknown parameter 'blocksize'"):
        defs['fio-randread-4k'].settings({'blocksize': '8k'})


def test_bad_size_is_refused(defs):
    with pytest.raises(InputError, match='not a size'):
        defs['fio-randread-4k'].settings({'size': '1 GB'})


def test_definition_file_name_must_match(tmp_path):
    (tmp_path / 'a.yaml').write_text('name: b\ntool: fio\ntarget: disk\n')
    with pytest.raises(InputError, match='differs from the file name'):
        workloads.load_all([str(tmp_path)])


def test_unknown_tool_in_a_definition(tmp_path):
    (tmp_path / 'x.yaml').write_text('name: x\ntool: netperf\n'
                                     'target: peer\n')
    with pytest.raises(InputError, match="unknown tool 'netperf'"):
        workloads.load_all([str(tmp_path)])


def test_unknown_workload_lists_the_known():
    with pytest.raises(InputError, match='fio-randread-4k'):
        workloads.get('nope')


@pytest.mark.parametrize('text, words', [
    ('name: x\ntool: fio\ntarget: disk\ntool: iperf3\n', "duplicate key"),
    ('name: x\ntool: fio\ntarget: disk\nyes: 1\n', 'not a string'),
    ('name: x\ntool: fio\ntarget: disk\noptions: ' + '[' * 3000 + '\n',
     'nested'),
])
def test_hostile_definition_is_one_line(tmp_path, text, words):
    """A second ``tool:`` silently replaced the first."""
    (tmp_path / 'x.yaml').write_text(text)
    with pytest.raises(InputError, match=words) as info:
        workloads.load_all([str(tmp_path)])
    assert '\n' not in str(info.value)
