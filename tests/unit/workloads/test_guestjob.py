"""kvmtune.workloads.guestjob: the job a benchmark guest reads from its
kernel command line (doc/design.md section 6), and the command templates
the image carries."""

import base64
import json

import pytest

from kvmtune.errors import InputError
from kvmtune import workloads
from kvmtune.workloads import commands
from kvmtune.workloads import guestjob


@pytest.fixture(scope='module')
def defs():
    return workloads.load_all()


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


def test_roles_of_each_kind_of_workload(defs):
    assert guestjob.roles(defs['fio-randread-4k']) == ('client',)
    assert guestjob.roles(defs['sysbench-memory-read']) == ('client',)
    assert set(guestjob.roles(defs['iperf3-tcp-stream'])) == {'client',
                                                              'server'}


def test_the_kernel_command_line_argument_round_trips(defs):
    job = guestjob.build(defs['iperf3-udp-stream'], peer='10.0.0.9',
                         runtime=3, params={'parallel': 2})
    key, _, value = guestjob.cmdline(job).partition('=')
    assert ' ' not in value and '\n' not in value
    assert json.loads(base64.b64decode(value)) == job
    assert job['command'] == ' '.join(commands.argv(
        defs['iperf3-udp-stream'], peer='10.0.0.9', runtime=3,
        params={'parallel': 2}))
