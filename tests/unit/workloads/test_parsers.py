"""Parsers on real outputs of the real tools (tests/fixtures/outputs/,
captured on the development host: fio 3.33, iperf3 3.12 on 127.0.0.1,
sockperf 3.7 ping-pong on 127.0.0.1) and on broken ones."""

import json
import os
import re

import pytest

from kvmtune.errors import KvmtuneError
from kvmtune.workloads import parsers
from tests import paths

FIXTURES = os.path.join(paths.FIXTURES, 'outputs')


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return f.read()


@pytest.mark.parametrize('name,direction', [
    ('fio-3.33-randread-4k.json', 'read'),
    ('fio-3.33-randwrite-4k.json', 'write'),
    ('fio-3.33-seqread-2m.json', 'read'),
])
def test_fio_figures_come_from_the_measured_direction(name, direction):
    raw = fixture(name)
    job = json.loads(raw)['jobs'][0]
    stats = job[direction]
    result = parsers.parse('fio', raw, emulated=False)
    assert result['iops'] == pytest.approx(stats['iops'])
    assert result['bw_bytes_s'] == pytest.approx(stats['bw_bytes'])
    assert result['lat_ns']['mean'] == pytest.approx(stats['clat_ns']['mean'])
    pct = stats['clat_ns']['percentile']
    assert result['lat_ns']['p50'] == pct['50.000000']
    assert result['lat_ns']['p95'] == pct['95.000000']
    assert result['lat_ns']['p99'] == pct['99.000000']
    assert result['cpu_pct'] == pytest.approx(job['usr_cpu'] +
                                              job['sys_cpu'])
    assert result['workload'] == job['jobname']
    assert result['gbit_s'] is None and result['tps'] is None
    assert result['emulated'] is False


def test_iperf3_tcp_uses_the_received_rate():
    raw = fixture('iperf3-3.12-tcp.json')
    end = json.loads(raw)['end']
    result = parsers.parse('iperf3', raw, 'iperf3-tcp-stream')
    bps = end['sum_received']['bits_per_second']
    assert result['gbit_s'] == pytest.approx(bps / 1e9)
    assert result['bw_bytes_s'] == pytest.approx(bps / 8)
    assert result['cpu_pct'] == end['cpu_utilization_percent']['host_total']
    rtt_us = end['streams'][0]['sender']['mean_rtt']
    assert result['lat_ns']['mean'] == pytest.approx(rtt_us * 1000)
    assert result['iops'] is None and result['tps'] is None


def test_iperf3_udp_reports_loss_and_received_rate():
    raw = fixture('iperf3-3.12-udp.json')
    end = json.loads(raw)['end']
    result = parsers.parse('iperf3', raw, 'iperf3-udp-stream')
    assert result['gbit_s'] == pytest.approx(
        end['sum_received']['bits_per_second'] / 1e9)
    # The sender offered more than arrived: never report the offer.
    assert result['gbit_s'] < end['sum']['bits_per_second'] / 1e9
    assert result['lost_pct'] == end['sum']['lost_percent']


def test_iperf3_error_document_is_an_error():
    with pytest.raises(KvmtuneError, match='Connection refused'):
        parsers.parse('iperf3', fixture('iperf3-3.12-refused.json'))


@pytest.mark.parametrize('name', ['sockperf-3.7-tcp-pingpong.txt',
                                  'sockperf-3.7-udp-pingpong.txt'])
def test_sockperf_round_trips(name):
    raw = fixture(name)
    runtime, received = re.search(
        r'Valid Duration\] RunTime=([0-9.]+) sec; SentMessages=\d+; '
        r'ReceivedMessages=(\d+)', raw).groups()
    rtt = re.search(r'Round trip is ([0-9.]+) usec', raw).group(1)
    result = parsers.parse('sockperf', raw, 'sockperf-tcp-rr')
    assert result['tps'] == pytest.approx(int(received) / float(runtime))
    assert result['lat_ns']['mean'] == pytest.approx(float(rtt) * 1000)
    p99 = re.search(r'percentile 99.000 =\s*([0-9.]+)', raw).group(1)
    assert result['lat_ns']['p99'] == pytest.approx(float(p99) * 1000)
    assert result['lat_ns']['p95'] is None   # sockperf prints no p95
    assert result['iops'] is None


@pytest.mark.parametrize('tool,name', [
    ('fio', 'fio-3.33-randread-4k.json'),
    ('iperf3', 'iperf3-3.12-tcp.json'),
    ('sockperf', 'sockperf-3.7-tcp-pingpong.txt'),
])
def test_truncated_output_raises(tool, name):
    raw = fixture(name)
    with pytest.raises(KvmtuneError, match=f'^{tool} output '):
        parsers.parse(tool, raw[:len(raw) // 2])


def test_garbled_fio_json_raises():
    raw = fixture('fio-3.33-randread-4k.json').replace('"iops" :', '"iops" ',
                                                       1)
    with pytest.raises(KvmtuneError, match='not JSON'):
        parsers.parse('fio', raw)


def test_fio_job_error_raises():
    doc = json.loads(fixture('fio-3.33-randread-4k.json'))
    doc['jobs'][0]['error'] = 5
    with pytest.raises(KvmtuneError, match='error 5'):
        parsers.parse('fio', json.dumps(doc))


def test_fio_without_io_raises():
    doc = json.loads(fixture('fio-3.33-randread-4k.json'))
    doc['jobs'][0]['read']['total_ios'] = 0
    with pytest.raises(KvmtuneError, match='no I/O'):
        parsers.parse('fio', json.dumps(doc))


def test_fio_missing_direction_names_the_key():
    doc = json.loads(fixture('fio-3.33-randread-4k.json'))
    del doc['jobs'][0]['write']
    with pytest.raises(KvmtuneError, match='write'):
        parsers.parse('fio', json.dumps(doc))


def test_sockperf_half_rtt_output_is_refused():
    raw = fixture('sockperf-3.7-tcp-pingpong.txt').replace(
        'Round trip is', 'Latency is')
    with pytest.raises(KvmtuneError, match='Round trip'):
        parsers.parse('sockperf', raw)


def test_unknown_tool():
    with pytest.raises(KvmtuneError, match='no parser'):
        parsers.parse('netperf', 'x')


# sysbench 1.0.20 (Debian 12), captured on the development host:
#   sysbench cpu --threads=1|2 --time=5 --cpu-max-prime=10000 run
#   sysbench memory --threads=2|1 --time=5 --memory-block-size=1M
#       --memory-total-size=1T --memory-oper=read|write run
@pytest.mark.parametrize('name,threads,events_s,events,seconds', [
    ('sysbench-1.0.20-cpu-1t.txt', 1, 1539.48, 7706, 5.0039),
    ('sysbench-1.0.20-cpu-2t.txt', 2, 1596.42, 7987, 5.0016),
])
def test_sysbench_cpu_events_per_second(name, threads, events_s, events,
                                        seconds):
    raw = fixture(name)
    result = parsers.parse('sysbench', raw, 'sysbench-cpu', emulated=True)
    assert result['events_s'] == events_s
    assert result['threads'] == threads
    assert result['events'] == events and result['seconds'] == seconds
    # the other throughput figures are not measured by a CPU test
    assert result['iops'] is None and result['bw_bytes_s'] is None
    assert result['tps'] is None and result['gbit_s'] is None
    lat = dict(re.findall(r'(avg|max|95th percentile):\s+([0-9.]+)', raw))
    assert result['lat_ns']['mean'] == pytest.approx(
        float(lat['avg']) * 1e6)
    assert result['lat_ns']['p95'] == pytest.approx(
        float(lat['95th percentile']) * 1e6)
    assert result['lat_max_ns'] == pytest.approx(float(lat['max']) * 1e6)
    assert result['lat_ns']['p99'] is None
    assert result['workload'] == 'sysbench-cpu' and result['emulated']


@pytest.mark.parametrize('name,mib_s', [
    ('sysbench-1.0.20-memory-read.txt', 18618.53),
    ('sysbench-1.0.20-memory-write.txt', 13347.12),
])
def test_sysbench_memory_bandwidth(name, mib_s):
    raw = fixture(name)
    assert f'({mib_s} MiB/sec)' in raw    # the figure the tool printed
    result = parsers.parse('sysbench', raw)
    assert result['bw_bytes_s'] == pytest.approx(mib_s * 1048576)
    assert result['events_s'] is None


def _replace(raw, old, new):
    assert old in raw
    return raw.replace(old, new)


@pytest.mark.parametrize('broken,message', [
    (lambda r: r[:r.index('General statistics')], 'total time'),
    (lambda r: _replace(r, 'events per second:', 'events per minute:'),
     'figure'),
    (lambda r: re.sub(r'total number of events:\s+\d+',
                      'total number of events: 0', r), 'no event'),
    (lambda r: re.sub(r'events per second:\s+[0-9.]+',
                      'events per second:  nan', r), 'figure'),
    (lambda r: re.sub(r'avg:\s+[0-9.]+\n', '', r), 'avg'),
    (lambda r: '', 'Number of threads'),
    (lambda r: 'Invalid value for the \'cpu_max_prime\' option: \'abc\'\n',
     'Number of threads'),
])
def test_sysbench_bad_output_raises(broken, message):
    raw = broken(fixture('sysbench-1.0.20-cpu-1t.txt'))
    with pytest.raises(KvmtuneError, match=message):
        parsers.parse('sysbench', raw)


def test_sysbench_cpu_and_memory_lines_together_are_refused():
    raw = fixture('sysbench-1.0.20-cpu-1t.txt') + fixture(
        'sysbench-1.0.20-memory-read.txt')
    with pytest.raises(KvmtuneError,
                       match=r'^sysbench output lacks its figure \(events per '
                             r'second or MiB/sec\) line'):
        parsers.parse('sysbench', raw)


# -- figures that are not figures --------------------------------------------

def _fio_with(first_iops):
    raw = fixture('fio-3.33-randread-4k.json')
    return re.sub(r'"iops" : [0-9.e+]+', f'"iops" : {first_iops}', raw,
                  count=1)


@pytest.mark.parametrize('value', ['NaN', 'Infinity', '-Infinity', '1e400',
                                   '"inf"', '"nan"', '"1e400"', '-5',
                                   'null', 'true', '[1]', '{}'])
def test_fio_iops_that_is_not_a_figure(value):
    with pytest.raises(KvmtuneError, match='^fio output') as info:
        parsers.parse('fio', _fio_with(value))
    assert '\n' not in str(info.value)


@pytest.mark.parametrize('value', ['NaN', 'Infinity', '1e400', '"inf"',
                                   '-1'])
def test_iperf3_rate_that_is_not_a_figure(value):
    doc = json.loads(fixture('iperf3-3.12-tcp.json'))
    raw = json.dumps(doc).replace(
        f'"bits_per_second": {doc["end"]["sum_received"]["bits_per_second"]}',
        f'"bits_per_second": {value}')
    assert raw != json.dumps(doc)
    with pytest.raises(KvmtuneError, match='^iperf3 output'):
        parsers.parse('iperf3', raw)


def test_iperf3_cpu_nan_is_not_a_figure():
    doc = json.loads(fixture('iperf3-3.12-tcp.json'))
    doc['end']['cpu_utilization_percent']['host_total'] = 'nan'
    with pytest.raises(KvmtuneError, match='host_total'):
        parsers.parse('iperf3', json.dumps(doc))


@pytest.mark.parametrize('tool, raw', [
    ('fio', '{"jobs": {"a": 1}}'),
    ('fio', '{"jobs": ["x"]}'),
    ('fio', '{"jobs": [{"read": [], "write": 1, "trim": null}]}'),
    ('fio', '[' * 10000),
    ('iperf3', '{"end": [], "start": {}}'),
    ('iperf3', '{"start": {"test_start": {"protocol": "TCP"}}, '
               '"end": {"sum_received": {"bits_per_second": 1}, '
               '"streams": [1, 2], "cpu_utilization_percent": 3}}'),
    ('sockperf', ''),
    ('fio', None),
])
def test_wrong_shapes_are_the_projects_error_not_a_crash(tool, raw):
    """In Rally a KeyError/TypeError kills the iteration; KvmtuneError
    records an invalid guest with its reason."""
    with pytest.raises(KvmtuneError, match=f'^{tool} output'):
        parsers.parse(tool, raw)


def test_sockperf_cut_inside_the_p99_number_is_detected():
    raw = fixture('sockperf-3.7-tcp-pingpong.txt')
    cut = raw[:raw.index('419.560') + 2]            # "... =  41"
    with pytest.raises(KvmtuneError, match='cut'):
        parsers.parse('sockperf', cut)
    whole = parsers.parse('sockperf', raw)
    assert whole['lat_ns']['p99'] == pytest.approx(419560)


@pytest.mark.parametrize('old, new', [
    ('Round trip is 45.932 usec', 'Round trip is nan usec'),
    ('percentile 99.000 =  419.560', 'percentile 99.000 =  inf'),
    ('RunTime=1.550 sec; Sent', 'RunTime=1e400 sec; Sent'),
])
def test_sockperf_figures_that_are_not_figures(old, new):
    raw = fixture('sockperf-3.7-tcp-pingpong.txt')
    assert old in raw
    with pytest.raises(KvmtuneError,
                       match=r"^sockperf output: .*: '.*' is not a finite "
                             r"number"):
        parsers.parse('sockperf', raw.replace(old, new))
