"""kvmtune.bench.hostrun: one workload's tool run on this host, as a guest
runs it, its output parsed. Runs the real sysbench, fio and iperf3 (a
second or less each); a tool that is missing, fails or hangs is one
KvmtuneError."""

import os
import socket
import stat
import subprocess

import pytest

from kvmtune.bench import hostrun
from kvmtune.errors import KvmtuneError
from kvmtune import workloads
from tests import hang


def test_sysbench_runs_and_is_parsed():
    argv, result = hostrun.run(workloads.get('sysbench-cpu-1t'), runtime=1)
    assert argv[:2] == ['sysbench', 'cpu'] and '--time=1' in argv
    assert result['tool'] == 'sysbench'
    assert result['workload'] == 'sysbench-cpu-1t'
    assert result['emulated'] is False
    assert result['events_s'] > 0


def test_fio_numjobs_is_this_hosts_cpu_count(tmp_path):
    target = tmp_path / 'scratch.img'
    target.write_bytes(b'\0' * (1 << 20))
    argv, result = hostrun.run(
        workloads.get('fio-randread-4k'), target=str(target), runtime=1,
        params={'size': '1M', 'iodepth': 1})
    assert f'--numjobs={os.cpu_count()}' in argv
    assert '@VCPUS@' not in ' '.join(argv)
    assert result['iops'] > 0


def free_port():
    with socket.socket() as probe:
        probe.bind(('127.0.0.1', 0))
        return probe.getsockname()[1]


def test_iperf3_against_a_local_server():
    port = free_port()
    server = subprocess.Popen(
        ['iperf3', '-s', '-p', str(port), '-1', '--forceflush'],
        stdout=subprocess.PIPE, text=True)
    try:
        # it says it listens (flushed) before it accepts the one client
        lines = hang.call(lambda: [server.stdout.readline(),
                                   server.stdout.readline()],
                          timeout=10)
        assert f'Server listening on {port}' in ''.join(lines)
        argv, result = hostrun.run(workloads.get('iperf3-tcp-stream'),
                                   peer='127.0.0.1', runtime=1,
                                   params={'port': port})
    finally:
        server.kill()
        server.wait()
    assert argv[:3] == ['iperf3', '-c', '127.0.0.1']
    assert result['gbit_s'] > 0


@pytest.fixture
def fake_tool(tmp_path, monkeypatch):
    """A stand-in sysbench first on PATH."""
    monkeypatch.setenv('PATH', f'{tmp_path}:{os.environ["PATH"]}')

    def make(script):
        path = tmp_path / 'sysbench'
        path.write_text('#!/bin/sh\n' + script + '\n')
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return make


def test_a_missing_tool_names_the_package(tmp_path, monkeypatch):
    monkeypatch.setenv('PATH', str(tmp_path))
    with pytest.raises(KvmtuneError) as err:
        hostrun.run(workloads.get('sysbench-cpu-1t'), runtime=1)
    assert err.value.line() == ('sysbench not found (fix: apt-get install '
                                'sysbench)')


def test_a_failing_tool_gives_its_last_line(fake_tool):
    fake_tool('echo starting; echo "FATAL: no such test" >&2; exit 3')
    with pytest.raises(KvmtuneError) as err:
        hostrun.run(workloads.get('sysbench-cpu-1t'), runtime=1)
    assert err.value.line() == ('sysbench-cpu-1t: sysbench exited 3: '
                                'FATAL: no such test')


def test_a_tool_that_does_not_finish(fake_tool):
    fake_tool('exec sleep 30')
    with pytest.raises(KvmtuneError,
                       match='sysbench did not finish within 1 s'):
        hostrun.run(workloads.get('sysbench-cpu-1t'), runtime=1,
                    timeout_margin=0)
