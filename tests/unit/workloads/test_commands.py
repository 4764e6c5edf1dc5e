"""kvmtune.workloads.commands: the command line each tool runs, in the
guest and on the bare host, from a workload and its parameters."""

import pytest

from kvmtune.errors import InputError
from kvmtune import workloads
from kvmtune.workloads import commands
from kvmtune.workloads import guestjob


@pytest.fixture(scope='module')
def defs():
    return workloads.load_all()


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


def test_the_workload_runtime_is_the_default(defs):
    argv = commands.argv(defs['sysbench-cpu-1t'])
    assert '--time=10' in argv      # the definition's defaults: runtime 10
    assert commands.argv(defs['iperf3-tcp-stream'], peer='h',
                         runtime='@RUNTIME@')[6] == '@RUNTIME@'


def test_servers_of_each_network_tool(defs):
    assert commands.argv(defs['iperf3-tcp-stream'], role='server') == [
        'iperf3', '-s', '-p', '5201', '-1']
    assert commands.argv(defs['sockperf-udp-rr'], role='server') == [
        'sockperf', 'server', '-i', '0.0.0.0', '-p', '11111']
    with pytest.raises(InputError, match='a disk workload has no server'):
        commands.argv(defs['fio-seqread-2m'], role='server',
                      target='/dev/vdb')


def test_threads_may_be_vcpus_or_a_positive_number(defs):
    w = defs['sysbench-cpu']
    assert '--threads=@VCPUS@' in commands.argv(w, params={
        'threads': 'vcpus'})
    assert '--threads=4' in commands.argv(w, params={'threads': 4})
    with pytest.raises(InputError, match="not a positive integer: True"):
        commands.argv(w, params={'threads': True})


def test_client_ports(defs):
    assert commands.client_ports(defs['iperf3-udp-stream'], 1) == [5201]
    assert commands.client_ports(defs['sockperf-udp-rr'], 2,
                                 {'port': 7000}) == [7000, 7000]
    assert commands.client_ports(defs['iperf3-tcp-stream'], 0) == []
