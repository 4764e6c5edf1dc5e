"""Workload definitions, the command lines they make and the guest job."""

import base64
import json

import pytest

from kvmtune.errors import InputError
from kvmtune import workloads
from kvmtune.workloads import commands
from kvmtune.workloads import guestjob

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


@pytest.mark.parametrize('name,rw,bs,iodepth,numjobs', [
    ('fio-randread-4k', 'randread', '4k', 128, '@VCPUS@'),
    ('fio-randwrite-4k', 'randwrite', '4k', 128, '@VCPUS@'),
    ('fio-seqread-2m', 'read', '2m', 1, 1),
    ('fio-seqwrite-2m', 'write', '2m', 1, 1),
    ('cdm-seq1m-q8t1', 'read', '1m', 8, 1),
    ('cdm-4k-q32t1', 'randread', '4k', 32, 1),
    ('cdm-4k-q1t1', 'randread', '4k', 1, 1),
])
def test_fio_command_lines(defs, name, rw, bs, iodepth, numjobs):
    argv = commands.argv(defs[name], target='/dev/vdb', runtime=7)
    for arg in (f'--rw={rw}', f'--bs={bs}', f'--iodepth={iodepth}',
                f'--numjobs={numjobs}', '--direct=1', '--ioengine=libaio',
                '--filename=/dev/vdb', '--runtime=7', '--time_based',
                '--output-format=json', '--group_reporting'):
        assert arg in argv
    assert ('--readonly' in argv) == (not defs[name].writes())


@pytest.mark.parametrize('name,expected', [
    ('sysbench-cpu', ['sysbench', 'cpu', '--threads=@VCPUS@', '--time=7',
                      '--cpu-max-prime=10000', 'run']),
    ('sysbench-cpu-1t', ['sysbench', 'cpu', '--threads=1', '--time=7',
                         '--cpu-max-prime=10000', 'run']),
    ('sysbench-memory-read', [
        'sysbench', 'memory', '--threads=@VCPUS@', '--time=7',
        '--memory-block-size=1M', '--memory-total-size=1T',
        '--memory-oper=read', '--memory-access-mode=seq', 'run']),
    ('sysbench-memory-write', [
        'sysbench', 'memory', '--threads=@VCPUS@', '--time=7',
        '--memory-block-size=1M', '--memory-total-size=1T',
        '--memory-oper=write', '--memory-access-mode=seq', 'run']),
])
def test_sysbench_command_lines_need_no_disk_or_peer(defs, name, expected):
    w = defs[name]
    assert w.target == 'none' and not w.writes()
    assert commands.argv(w, runtime=7) == expected
    # the guest's job and the image's template: one client, no server
    assert guestjob.roles(w) == ('client',)
    assert guestjob.build(w, runtime=7)['command'] == ' '.join(expected)
    assert f'{name}.server' not in guestjob.templates({name: w})
    with pytest.raises(InputError, match='no server role'):
        commands.argv(w, role='server')


@pytest.mark.parametrize('params,key', [
    ({'threads': 0}, 'threads'), ({'threads': 'many'}, 'threads'),
    ({'max_prime': -5}, 'max_prime'), ({'test': 'fileio'}, 'test'),
])
def test_sysbench_bad_cpu_params(defs, params, key):
    with pytest.raises(InputError,
                       match='^sysbench-cpu: '
                             '(max_prime|test|threads): ') as exc:
        commands.argv(defs['sysbench-cpu'], params=params)
    assert exc.value.key == key


@pytest.mark.parametrize('params,key', [
    ({'oper': 'copy'}, 'oper'), ({'block_size': '1X'}, 'block_size'),
    ({'total_size': '-1'}, 'total_size'),
])
def test_sysbench_bad_memory_params(defs, params, key):
    with pytest.raises(InputError,
                       match='^sysbench-memory-read: '
                             '(block_size|oper|total_size): ') as exc:
        commands.argv(defs['sysbench-memory-read'], params=params)
    assert exc.value.key == key


def test_params_override_and_turn_a_read_into_a_write(defs):
    w = defs['cdm-4k-q32t1']
    assert not w.writes()
    assert w.writes({'rw': 'randwrite'})
    argv = commands.argv(w, target='/dev/vdb',
                         params={'rw': 'randwrite', 'size': '1G'})
    assert '--readonly' not in argv
    assert '--size=1G' in argv


def test_unknown_parameter_is_refused(defs):
    with pytest.raises(InputError, match="unknown parameter 'blocksize'"):
        defs['fio-randread-4k'].settings({'blocksize': '8k'})


def test_bad_size_is_refused(defs):
    with pytest.raises(InputError, match='not a size'):
        defs['fio-randread-4k'].settings({'size': '1 GB'})


def test_disk_workload_needs_an_explicit_target(defs):
    with pytest.raises(InputError, match='no target disk'):
        commands.argv(defs['fio-randread-4k'])


def test_network_roles(defs):
    client = commands.argv(defs['iperf3-udp-stream'], peer='10.0.0.5',
                           runtime=3)
    assert client[:3] == ['iperf3', '-c', '10.0.0.5']
    assert '-J' in client and '-u' in client
    server = commands.argv(defs['sockperf-tcp-rr'], role='server')
    assert server[:2] == ['sockperf', 'server'] and '--tcp' in server
    rr = commands.argv(defs['sockperf-udp-rr'], peer='10.0.0.5')
    assert '--full-rtt' in rr and '--tcp' not in rr
    with pytest.raises(InputError, match='no peer'):
        commands.argv(defs['iperf3-tcp-stream'])


def test_job_has_the_design_keys_and_a_command(defs):
    j = guestjob.build(defs['fio-randwrite-4k'], target='/dev/vdb',
                       start_at=1790000000.7, runtime=5)
    for key in ('workload', 'target', 'peer', 'role', 'start_at', 'runtime',
                'hold', 'params'):
        assert key in j
    assert j['start_at'] == 1790000000 and j['tool'] == 'fio'
    assert j['command'].startswith('fio --name=fio-randwrite-4k ')
    line = guestjob.encode(j)
    assert '\n' not in line and json.loads(line) == j
    decoded = base64.b64decode(guestjob.cmdline(j).split('=', 1)[1])
    assert json.loads(decoded) == j


def test_job_refuses_values_the_guest_shell_cannot_carry(defs):
    with pytest.raises(InputError, match='unsafe value'):
        guestjob.build(defs['iperf3-tcp-stream'], peer='10.0.0.1 ; reboot')
    with pytest.raises(InputError, match='unknown role'):
        guestjob.build(defs['iperf3-tcp-stream'], role='observer')


def test_templates_cover_every_workload_and_role(defs):
    found = guestjob.templates(defs)
    assert 'fio-randread-4k.client' in found
    assert 'fio-randread-4k.server' not in found
    assert {'iperf3-tcp-stream.client', 'iperf3-tcp-stream.server',
            'sockperf-udp-rr.server'} <= set(found)
    assert '--filename=@TARGET@' in found['fio-seqread-2m.client']
    assert '--runtime=@RUNTIME@' in found['fio-seqread-2m.client']
    assert '-c @PEER@' in found['iperf3-tcp-stream.client']


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


def test_job_static_address(defs):
    j = guestjob.build(defs['sockperf-tcp-rr'], role='server',
                       address='10.233.0.1/24')
    assert j['address'] == '10.233.0.1/24'
    assert 'address' not in guestjob.build(defs['sockperf-tcp-rr'],
                                           role='server')
    with pytest.raises(InputError, match='unsafe value'):
        guestjob.build(defs['sockperf-tcp-rr'], role='server',
                       address='10.0.0.1/24"')


def test_iperf3_clients_get_a_server_each_sockperf_clients_share_one(defs):
    iperf3, sockperf = defs['iperf3-tcp-stream'], defs['sockperf-tcp-rr']
    assert commands.client_ports(iperf3, 3) == [5201, 5202, 5203]
    assert commands.client_ports(iperf3, 2, {'port': 6000}) == [6000, 6001]
    assert commands.client_ports(sockperf, 3) == [11111] * 3

    server = guestjob.build(iperf3, role='server', ports=[5201, 5202, 5203])
    # the guest init starts one `iperf3 -s` per port (design.md section 6)
    assert server['ports'] == '5201,5202,5203'
    assert server['command'] == 'iperf3 -s -p @PORT@ -1'

    shared = guestjob.build(sockperf, role='server', ports=[11111] * 3)
    assert 'ports' not in shared and '-p 11111' in shared['command']


def test_only_a_server_listens_on_ports(defs):
    with pytest.raises(InputError, match='only a server'):
        guestjob.build(defs['iperf3-tcp-stream'], peer='10.0.0.1',
                       ports=[5201, 5202])


def test_job_started_by_signal_has_no_start_at(defs):
    j = guestjob.build(defs['fio-randread-4k'], target='/dev/vdb', start='nmi',
                       start_timeout=300, hold=True)
    assert j['start'] == 'nmi' and j['start_timeout'] == 300
    assert j['start_at'] is None
    # the guest's sed reads the keys from the one line
    line = guestjob.encode(j)
    assert '"start": "nmi"' in line and '"start_timeout": 300' in line
    plain = guestjob.build(defs['fio-randread-4k'], target='/dev/vdb',
                           start_at=1790000000)
    assert 'start' not in plain and 'start_timeout' not in plain


def test_job_starts_by_signal_or_at_a_time_not_both(defs):
    with pytest.raises(InputError, match='not both'):
        guestjob.build(defs['fio-randread-4k'], target='/dev/vdb', start='nmi',
                       start_at=1790000000)
    with pytest.raises(InputError, match="unknown start 'ssh'"):
        guestjob.build(defs['fio-randread-4k'], target='/dev/vdb', start='ssh')


@pytest.mark.parametrize('text, words', [
    ('name: x\ntool: fio\ntarget: disk\ntool: iperf3\n', "duplicate key"),
    ('name: x\ntool: fio\ntarget: disk\nyes: 1\n', 'not a string'),
    ('name: x\ntool: fio\ntarget: disk\noptions: ' + '[' * 3000 + '\n',
     'nested'),
])
def test_hostile_definition_is_one_line(tmp_path, text, words):
    """A second ``tool:`` silently replaced the first (issue 11)."""
    (tmp_path / 'x.yaml').write_text(text)
    with pytest.raises(InputError, match=words) as info:
        workloads.load_all([str(tmp_path)])
    assert '\n' not in str(info.value)
