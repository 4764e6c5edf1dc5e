"""verify's textfile, read by Prometheus's own parser (prometheus_client);
the alert rules over it are proven by promtool (tests/unit/data)."""

import os

from prometheus_client import parser
import pytest

from kvmtune.boot import record
from kvmtune.errors import InputError
from kvmtune import verify
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
    check = found['kvmtune_verify_check_status']
    assert check.type == 'gauge'
    samples = [(s.labels, s.value) for s in check.samples]
    assert samples[0] == ({'hostname': 'compute-1', 'layer': 'host',
                           'check': 'cmdline isolcpus',
                           'profile': 'cpu-pinning', 'status': 'PASS'}, 1)
    assert samples[1][0]['status'] == 'DRIFT'
    # quotes and backslashes survive the escaping
    assert samples[2][0]['check'] == 'instance "a\\b" pins'
    assert samples[2][0]['status'] == 'UNKNOWN'
    counts = {s.labels['status']: s.value
              for s in found['kvmtune_verify_checks_by_status'].samples}
    assert counts == {'PASS': 1, 'DRIFT': 1, 'UNKNOWN': 1}
    [last] = found['kvmtune_last_run_timestamp_seconds'].samples
    assert (last.labels, last.value) == (
        {'command': 'verify', 'hostname': 'compute-1'}, 1700000000.5)
    # something drifted: no success in this run (and none before)
    [ok] = found['kvmtune_last_success_timestamp_seconds'].samples
    assert ok.value == 0
    # node_exporter skips a file whose samples carry timestamps
    assert all(s.timestamp is None for f in found.values()
               for s in f.samples)


def test_the_old_names_stay_for_one_release_with_host():
    found = families(prometheus.render(CHECKS, now=1700000000.5))
    new = [(s.labels, s.value)
           for s in found['kvmtune_verify_check_status'].samples]
    old = [(s.labels, s.value) for s in found['kvmtune_verify_check'].samples]
    assert old == [({'host' if k == 'hostname' else k: v
                     for k, v in labels.items()}, value)
                   for labels, value in new]
    assert {s.labels['status']: s.value
            for s in found['kvmtune_verify_checks'].samples} == {
        'PASS': 1, 'DRIFT': 1, 'UNKNOWN': 1}
    [last] = found['kvmtune_verify_last_run_timestamp_seconds'].samples
    assert (last.labels, last.value) == ({'host': 'compute-1'},
                                         1700000000.5)
    assert 'Deprecated' in found['kvmtune_verify_check'].documentation


def test_every_per_host_series_has_the_hostname():
    restart = verify.Check(layer='novacompute', name='nova-compute restart',
                           expected='e', live='l', status=verify.DRIFT,
                           fix='restart', host=None)
    text = prometheus.render(CHECKS[:2] + [restart], host='compute-1',
                             now=1, reboot={'cmdline': ['isolcpus=2-7']})
    found = families(text)
    new = [f for name, f in found.items()
           if name.startswith('kvmtune_') and 'Deprecated' not in
           f.documentation]
    assert len(new) == 6
    for family in new:
        assert family.samples, family.name
        assert all(s.labels['hostname'] == 'compute-1'
                   for s in family.samples), family.name
    assert {s.labels['reason']: s.value
            for s in found['kvmtune_reboot_required'].samples} == {
        'cmdline': 1, 'hugepages': 0, 'module': 0}
    assert [(s.labels['service'], s.value)
            for s in found['kvmtune_restart_required'].samples] == [
        ('nova-compute', 1)]


def test_no_reboot_series_when_not_known_and_no_restart_when_unknown():
    unknown = verify.unknown('novacompute', 'nova-compute restart', 'e',
                             'no /proc/1/stat', host='h')
    found = families(prometheus.render([unknown], now=1))
    assert 'kvmtune_reboot_required' not in found
    assert found['kvmtune_restart_required'].samples == []
    # UNKNOWN alone: nothing was checked, no success (0: never)
    [ok] = found['kvmtune_last_success_timestamp_seconds'].samples
    assert ok.value == 0


def _last_success(path):
    return {s.labels['hostname']: s.value for s in families(
        path.read_text())['kvmtune_last_success_timestamp_seconds'].samples}


def test_a_run_that_checked_nothing_keeps_the_last_success(tmp_path):
    """In sync at 100; then runs that could check nothing (every check
    UNKNOWN, or no check at all) keep 100, so KvmtuneVerifyNotSucceeded
    fires a day later; a mix of PASS and UNKNOWN is a success."""
    path = tmp_path / 'kvmtune_verify.prom'
    passed = verify.compare('host', 'cmdline isolcpus', 'isolcpus=2-7',
                            'isolcpus=2-7', 'reboot', host='h')
    lost = verify.unknown('novacompute', 'nova-compute options', 'running',
                          'no nova-compute process', host='h')
    prometheus.write(str(path), [passed], now=100)
    assert _last_success(path) == {'h': 100}
    prometheus.write(str(path), [lost], now=200)
    assert _last_success(path) == {'h': 100}
    prometheus.write(str(path), [], host='h', now=300)
    assert _last_success(path) == {'h': 100}
    last_run = {s.labels['hostname']: s.value for s in families(
        path.read_text())['kvmtune_last_run_timestamp_seconds'].samples}
    assert last_run == {'h': 300}
    prometheus.write(str(path), [passed, lost], now=400)
    assert _last_success(path) == {'h': 400}
    # the fleet view: each host on its own checks
    other = verify.unknown('cloud', 'resource provider', 'e', '404',
                           host='g')
    prometheus.write(str(path), [passed, other], now=500)
    assert _last_success(path) == {'h': 500, 'g': 0}


def test_a_pending_reboot_is_read_from_the_hosts_record(tmp_path):
    """kvmtune_reboot_required follows kvmtune.boot.record: pending while
    the boot that wrote the record runs, 0 once the host booted again."""
    boot_id = tmp_path / 'proc/sys/kernel/random/boot_id'
    boot_id.parent.mkdir(parents=True)
    boot_id.write_text('b1\n')
    record.write(str(tmp_path), 'cpu-pinning',
                 {'cmdline': ['isolcpus=2-7'],
                  'module': ['kvm_intel nested=1']})
    path = tmp_path / 'kvmtune_verify.prom'

    def reboot():
        prometheus.write(str(path), CHECKS, now=1, root=str(tmp_path))
        return {s.labels['reason']: s.value for s in families(
            path.read_text())['kvmtune_reboot_required'].samples}

    assert reboot() == {'cmdline': 1, 'hugepages': 0, 'module': 1}
    boot_id.write_text('b2\n')                 # booted since
    assert reboot() == {'cmdline': 0, 'hugepages': 0, 'module': 0}
    # the fleet view (no root): no reboot series at all
    prometheus.write(str(path), CHECKS, now=2)
    assert 'kvmtune_reboot_required' not in families(path.read_text())


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
    assert families(path.read_text())['kvmtune_verify_check_status']
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
