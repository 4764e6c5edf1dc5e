"""Guest jobs and status lines (design.md §6) seen from the scenarios."""

import json
import os

import pytest

from kvmtune.errors import InputError
from kvmtune.rally.scenarios.kvmtune import guests
from tests import paths
from tests.unit.workloads import test_console

DESIGN_KEYS = ('workload', 'target', 'peer', 'role', 'start_at', 'runtime',
               'hold', 'params')


def test_job_is_the_protocol_shape():
    text = guests.job('fio-randread-4k', 1790000000.7, 10, target='/dev/vdb')
    assert '\n' not in text        # the guest reads one line with sed
    job = json.loads(text)
    assert {k: job[k] for k in DESIGN_KEYS} == {
        'workload': 'fio-randread-4k', 'target': '/dev/vdb', 'peer': None,
        'role': 'client', 'start_at': 1790000000, 'runtime': 10,
        'hold': False, 'params': {}}
    # the data disk is named in the command the guest runs
    assert '--filename=/dev/vdb' in job['command']
    assert '--runtime=10' in job['command']


def test_an_unknown_workload_is_an_input_error():
    with pytest.raises(InputError, match='fio-no-such'):
        guests.job('fio-no-such', 0, 10, target='/dev/vdb')


def test_start_at_grows_with_the_batch():
    assert guests.start_at(1000.0, 1, 45, 20) == 1065
    assert guests.start_at(1000.0, 3, 45, 20) == 1105


def test_status_is_the_guests_own_last_line():
    text = ('boot noise\nKVMTUNE-STATUS other-vm ok\n'
            'KVMTUNE-STATUS vm-1 error fio: bad job file\r\n')
    assert guests.status(text.replace('\r', ''), 'vm-1') == (
        'error', 'fio: bad job file')
    assert guests.status(text, 'vm-2') is None
    assert guests.status('KVMTUNE-STATUS vm-1 late', 'vm-1') == ('late', '')
    assert guests.status(None, 'vm-1') is None
    # a server's interim status is not a verdict
    assert guests.status('KVMTUNE-STATUS vm-1 serving', 'vm-1') is None


CONSOLE = os.path.join(paths.FIXTURES, 'outputs',
                       'console-tcg-fio-randread-4k.log')
GUEST = '11111111-2222-3333-4444-555555555555'


def console_log():
    with open(CONSOLE, encoding='utf-8', errors='surrogateescape') as f:
        return f.read()


def test_row_from_a_real_tcg_console():
    row = guests.row(console_log(), GUEST, 'client', 'fio-randread-4k',
                     emulated=True)
    assert row.status == 'ok' and row.tool == 'fio'
    assert row.iops == pytest.approx(3104.667, abs=1e-3)
    assert row.emulated is True


def test_a_garbled_frame_is_invalid_with_the_checkers_reason():
    text = console_log().replace('"iops" : 3104.666667',
                                 '"iops" : 9104.666667', 1)
    row = guests.row(text, GUEST, 'client', 'fio-randread-4k', True)
    assert row.status == 'invalid'
    assert 'sha256 does not match' in row.reason


def test_no_status_line_is_no_result():
    row = guests.row('SeaBIOS\nBooting from ROM...\n', GUEST, 'client',
                     'fio-randread-4k', True)
    assert row.status == 'no-result' and 'KVMTUNE-STATUS' in row.reason


def test_a_guest_that_says_nothing_keeps_the_callers_label():
    # the capture is from an image that printed no KVMTUNE-GUEST line
    row = guests.row(console_log(), GUEST, 'client', 'fio-randread-4k',
                     emulated=False)
    assert row.status == 'ok' and row.emulated is False


def test_a_guest_that_says_tcg_is_emulated_whatever_the_caller_says():
    path = os.path.join(os.path.dirname(CONSOLE),
                        'console-tcg-fio-randread-4k-guest-line.log')
    with open(path, encoding='utf-8', errors='surrogateescape') as f:
        text = f.read()
    row = guests.row(text, GUEST, 'client', 'fio-randread-4k',
                     emulated=False)
    assert row.status == 'ok' and row.emulated is True
    assert row.iops > 0


def test_a_held_guests_error_is_its_row():
    path = os.path.join(os.path.dirname(CONSOLE), 'console-tcg-error-hold.log')
    with open(path, encoding='utf-8', errors='surrogateescape') as f:
        text = f.read()
    row = guests.row(text, '33333333-4444-4555-8666-777777777777', 'client',
                     'fio-randwrite-4k', emulated=False)
    assert row.status == 'error'
    assert row.reason == 'refusing /dev/vda: it holds this image'


# Guests started by a signal: the real TCG consoles that
# tests/unit/workloads/test_console.py describes.
NMI_START = test_console.NMI_START
NMI_START_ID = test_console.NMI_START_ID
NMI_LATE = test_console.NMI_LATE
NMI_LATE_ID = test_console.NMI_LATE_ID


def _text(path):
    with open(path, 'rb') as f:
        return f.read().decode()


def test_signal_job_says_nmi_and_carries_no_start_at():
    job = json.loads(guests.job('fio-randread-4k', None, 10,
                                target='/dev/vdb', start='nmi'))
    assert job['start'] == 'nmi' and job['start_at'] is None


def test_a_started_guests_row_has_its_times():
    text = _text(NMI_START)
    assert guests.ready(text, NMI_START_ID)
    row = guests.row(text, NMI_START_ID, 'client', 'fio-randread-4k',
                     False, seen_ready_s=31.25)
    assert row.status == 'ok' and row.iops > 0 and row.emulated
    assert (row.ready_s, row.start_s, row.seen_ready_s) == (
        8.96, 10.43, 31.25)


def test_a_guest_ready_but_never_started_is_no_result_saying_so():
    text = _text(NMI_START)
    waiting = text[:text.index('Uhhuh')]
    assert guests.ready(waiting, NMI_START_ID)
    assert guests.status(waiting, NMI_START_ID) is None
    row = guests.row(waiting, NMI_START_ID, 'client', 'fio-randread-4k',
                     True, seen_ready_s=200.0)
    assert row.status == 'no-result' and row.iops is None
    assert 'never joined the common start' in row.reason
    assert row.ready_s == 8.96 and row.start_s is None


def test_a_guest_without_its_signal_is_late_with_its_reason():
    row = guests.row(_text(NMI_LATE), NMI_LATE_ID, 'client',
                     'fio-randread-4k', True)
    assert row.status == 'late' and row.iops is None
    assert row.reason == ('no start signal (NMI) within 15 s of ready '
                          'at uptime 16.20')
    assert row.ready_s == 16.2


def test_a_booting_guest_is_not_ready():
    text = _text(NMI_START)
    booting = text[:text.index('KVMTUNE-STATUS')]
    assert not guests.ready(booting, NMI_START_ID)
    assert not guests.ready(None, NMI_START_ID)


# A frame whose byte count and sha256 match (the guest sent it
# whole) but whose figures are not figures is an invalid guest, not ok.

def _reframed(text, old, new):
    import hashlib
    import re
    begin = re.search(r'KVMTUNE-RESULT-BEGIN (\S+) (\S+) (\S+) (\d+) '
                      r'([0-9a-f]{64})\n', text)
    end = text.index('\nKVMTUNE-RESULT-END', begin.end())
    payload = text[begin.end():end]
    assert old in payload
    payload = payload.replace(old, new, 1)
    data = payload.encode('utf-8', 'surrogateescape')
    header = (f'KVMTUNE-RESULT-BEGIN {begin.group(1)} {begin.group(2)} '
              f'{begin.group(3)} {len(data)} '
              f'{hashlib.sha256(data).hexdigest()}\n')
    return text[:begin.start()] + header + payload + text[end:]


@pytest.mark.parametrize('value', ['NaN', 'Infinity', '-Infinity', '1e400',
                                   '"inf"', '-3104.666667'])
def test_a_verified_frame_carrying_nan_is_invalid(value):
    text = _reframed(console_log().replace('\r\n', '\n'),
                     '"iops" : 3104.666667', f'"iops" : {value}')
    row = guests.row(text, GUEST, 'client', 'fio-randread-4k', True)
    assert row.status == 'invalid', row
    assert row.iops is None
    assert row.reason
