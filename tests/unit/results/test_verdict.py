"""The one verdict, on consoles real guests printed
(tests/fixtures/outputs/console-tcg-*.log), and the same verdict whoever
calls it: the Rally scenarios' row
(kvmtune.rally.scenarios.kvmtune.guests) and bench local's row agree on
every console."""

import dataclasses
import os

import pytest

from kvmtune.bench import local
from kvmtune.bench import qemu
from kvmtune.rally.scenarios.kvmtune import guests
from kvmtune.results import bench as results_bench
from kvmtune.results import row as rows
from kvmtune.results import verdict
from kvmtune import workloads
from tests import paths

OUTPUTS = os.path.join(paths.FIXTURES, 'outputs')
GUEST = '11111111-2222-3333-4444-555555555555'
FIO = 'fio-randread-4k'


def console(name):
    with open(os.path.join(OUTPUTS, name), encoding='utf-8',
              errors='surrogateescape') as f:
        return f.read()


def test_a_guest_that_measured_is_ok_with_its_figures():
    seen = verdict.read(console('console-tcg-fio-randread-4k.log'), GUEST,
                        'client', FIO, emulated=True)
    assert seen.status == rows.OK and seen.reason == ''
    assert seen.result['workload'] == FIO and seen.result['iops'] > 0
    assert seen.result['emulated'] is True
    assert len(seen.sha256) == 64
    # this image did not say its accelerator: the caller's word stands
    quiet = verdict.read(console('console-tcg-fio-randread-4k.log'), GUEST,
                         'client', FIO, emulated=False)
    assert quiet.result['emulated'] is False


def test_a_guest_that_says_tcg_is_emulated_whatever_the_caller_knew():
    text = console('console-tcg-fio-randread-4k-guest-line.log')
    instance = next(line.split()[1] for line in text.splitlines()
                    if line.startswith('KVMTUNE-STATUS '))
    seen = verdict.read(text, instance, 'client', FIO, emulated=False)
    assert seen.status == rows.OK and seen.result['emulated'] is True


@pytest.mark.parametrize('text, status, words', [
    (f'KVMTUNE-STATUS {GUEST} late\n', rows.LATE, 'did not run'),
    (f'KVMTUNE-STATUS {GUEST} error fio: bad job\n', rows.ERROR,
     'fio: bad job'),
    (f'KVMTUNE-STATUS {GUEST} ok\n', rows.INVALID,
     'no KVMTUNE-RESULT-BEGIN line'),
    (f'KVMTUNE-STATUS {GUEST} ready uptime=5 time=1\n', rows.NO_RESULT,
     'ready but gave no verdict'),
    ('SeaBIOS\nBooting from ROM...\n', rows.NO_RESULT,
     'no KVMTUNE-STATUS line'),
])
def test_each_status_says_why(text, status, words):
    seen = verdict.read(text, GUEST, 'client', FIO, emulated=True)
    assert seen.status == status and words in seen.reason
    assert seen.result is None


def test_a_frame_that_fails_its_checksum_is_invalid():
    text = console('console-tcg-fio-randread-4k.log')
    tampered = text.replace('"fio-3.33"', '"fio-3.34"', 1)
    assert tampered != text
    seen = verdict.read(tampered, GUEST, 'client', FIO, emulated=True)
    assert seen.status == rows.INVALID and 'sha256' in seen.reason, seen


def test_a_server_that_served_is_a_server():
    assert verdict.read(f'KVMTUNE-STATUS {GUEST} serving\n', GUEST,
                        'server', 'sockperf-tcp-rr', True).status == \
        rows.SERVER


def test_the_callers_own_reason_for_no_status():
    seen = verdict.read('', GUEST, 'client', FIO, True,
                        no_status='QEMU exited 1 without a status')
    assert seen == verdict.Verdict(rows.NO_RESULT,
                                   'QEMU exited 1 without a status')


CONSOLES = ['console-tcg-fio-randread-4k.log',
            'console-tcg-error-no-hold.log',
            'console-tcg-nmi-no-signal-late.log',
            'console-tcg-guest-dmesg.log']


@pytest.mark.parametrize('name', CONSOLES)
def test_rally_and_bench_local_give_one_verdict(name, tmp_path):
    text = console(name)
    ids = sorted(set(
        line.split()[1] for line in text.splitlines()
        if line.startswith('KVMTUNE-STATUS ') and len(line.split()) > 2))
    instance = ids[0] if ids else GUEST
    # the scenarios' Row without the times a console said (bench local
    # has its own)
    rally = dataclasses.replace(
        guests.row(text, instance, 'client', FIO, True), ready_s=None,
        start_s=None)
    guest = qemu.Guest(0, instance, str(tmp_path))
    guest.role = 'client'
    guest.started, guest.ended = 100.0, 110.0
    guest.proc = type('P', (), {'returncode': 0})()
    with open(guest.console, 'w', encoding='utf-8',
              errors='surrogateescape') as f:
        f.write(text)
    bench = local._measured(guest, workloads.get(FIO), 'tcg').row
    assert rally.status == bench.status, (rally, bench)
    if rally.status == rows.OK:
        assert dataclasses.replace(bench, accel=None, ready_s=None,
                                   start_s=None, seconds=None) == rally
    elif rally.status != rows.NO_RESULT:
        # no-result reasons differ by design: Rally's timeout, QEMU's exit
        assert rally.reason == bench.reason
    # bench local's file, read back, is the same Row
    read = results_bench.row_of(bench.flat(), 'b.json', 'rows[0]')
    assert read == bench


def test_console_row_is_the_row_of_the_reading():
    text = console('console-tcg-fio-randread-4k.log')
    instance = next(line.split()[1] for line in text.splitlines()
                    if line.startswith('KVMTUNE-STATUS '))
    row = verdict.console_row(text, instance, 'client', FIO, True,
                              accel='tcg')
    seen = verdict.read(text, instance, 'client', FIO, True)
    assert row.ok and row.iops == seen.result['iops'] and row.emulated
    assert row.lat_ns.p99 == seen.result['lat_ns']['p99']
    assert row.bw_bytes_s == seen.result['bw_bytes_s'] and row.accel == 'tcg'
    gone = verdict.console_row(None, instance, 'client', FIO, True,
                               no_status='Nova gave no console log')
    assert (gone.status, gone.reason) == (rows.NO_RESULT,
                                          'Nova gave no console log')
