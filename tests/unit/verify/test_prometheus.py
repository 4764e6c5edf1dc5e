"""verify's textfile, read by Prometheus's own parser (prometheus_client)."""

import os

import pytest
from prometheus_client import parser

from kvmtune import verify
from kvmtune.errors import InputError
from kvmtune.verify import prometheus

CHECKS = [
    verify.compare('host', 'cmdline isolcpus', 'isolcpus=2-7',
                   'isolcpus=2-7', 'reboot', host='compute-1',
                   profile='cpu-pinning'),
    verify.compare('host', 'pages node0 2M', '>= 512', '256', 'fix',
                   host='compute-1', profile='pinned-hugepages'),
    verify.unknown('guests', 'instance "a\\b" pins', 'in 2-7',
                   'no libvirt', host='compute-1', profile='cpu-pinning'),
]


def families(text):
    return {family.name: family
            for family in parser.text_string_to_metric_families(text)}


def test_prometheus_reads_every_check_with_its_labels():
    found = families(prometheus.render(CHECKS, now=1700000000.5))
    check = found['kvmtune_verify_check']
    assert check.type == 'gauge'
    samples = [(s.labels, s.value) for s in check.samples]
    assert samples[0] == ({'host': 'compute-1', 'layer': 'host',
                           'check': 'cmdline isolcpus',
                           'profile': 'cpu-pinning', 'status': 'PASS'}, 1)
    assert samples[1][0]['status'] == 'DRIFT'
    # quotes and backslashes survive the escaping
    assert samples[2][0]['check'] == 'instance "a\\b" pins'
    assert samples[2][0]['status'] == 'UNKNOWN'
    counts = {s.labels['status']: s.value
              for s in found['kvmtune_verify_checks'].samples}
    assert counts == {'PASS': 1, 'DRIFT': 1, 'UNKNOWN': 1}
    [last] = found['kvmtune_verify_last_run_timestamp_seconds'].samples
    assert (last.labels, last.value) == ({'host': 'compute-1'},
                                         1700000000.5)
    # node_exporter skips a file whose samples carry timestamps
    assert all(s.timestamp is None for f in found.values()
               for s in f.samples)


def test_a_newline_in_a_label_stays_inside_its_sample():
    odd = [verify.unknown('cloud', 'flavor x\nkvmtune_fake 1', 'e', 'r',
                          host='h')]
    found = families(prometheus.render(odd, now=1))
    assert 'kvmtune_fake' not in found
    [sample] = found['kvmtune_verify_check'].samples
    assert sample.labels['check'] == 'flavor x\nkvmtune_fake 1'


def test_written_atomically_and_nothing_left_beside_it(tmp_path):
    path = tmp_path / 'kvmtune_verify.prom'
    prometheus.write(str(path), CHECKS, now=1)
    assert families(path.read_text())['kvmtune_verify_check']
    assert os.listdir(tmp_path) == ['kvmtune_verify.prom']


def test_a_file_that_cannot_be_written_is_one_line_and_kept(tmp_path):
    path = tmp_path / 'kvmtune_verify.prom'
    path.write_text('old\n')
    os.mkfifo(tmp_path / 'fifo.prom')
    with pytest.raises(InputError, match='fifo.prom: .*FIFO'):
        prometheus.write(str(tmp_path / 'fifo.prom'), CHECKS)
    with pytest.raises(InputError, match='directory'):
        prometheus.write(str(tmp_path / 'no' / 'x.prom'), CHECKS)
    assert path.read_text() == 'old\n'
    assert sorted(os.listdir(tmp_path)) == ['fifo.prom',
                                            'kvmtune_verify.prom']
