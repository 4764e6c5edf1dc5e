"""Console extraction on a real TCG guest's serial log
(tests/fixtures/outputs/console-tcg-fio-randread-4k.log: SeaBIOS escape
sequences, CRLF line ends, kernel lines) and on damaged copies of it."""

import hashlib
import os

import pytest

from kvmtune.errors import KvmtuneError
from kvmtune.workloads import console
from kvmtune.workloads import parsers

FIXTURE = os.path.join(os.path.dirname(__file__), '..', 'fixtures',
                       'outputs', 'console-tcg-fio-randread-4k.log')
ID = '11111111-2222-3333-4444-555555555555'


@pytest.fixture
def log():
    with open(FIXTURE, 'rb') as f:
        return f.read().decode()


def frame(instance, payload, size=None, digest=None, end=True):
    data = payload.encode()
    head = (f'{console.BEGIN} {instance} fio-randread-4k fio '
            f'{len(data) if size is None else size} '
            f'{digest or hashlib.sha256(data).hexdigest()}\r\n')
    body = payload.replace('\n', '\r\n') + '\r\n'
    tail = f'{console.END} {instance}\r\n' if end else ''
    return head + body + tail + f'{console.STATUS} {instance} ok\r\n'


def test_real_console_verifies_and_parses(log):
    (payload,) = console.extract(log, ID)
    assert payload['workload'] == 'fio-randread-4k'
    assert payload['tool'] == 'fio'
    assert len(payload['raw'].encode()) == payload['bytes']
    assert hashlib.sha256(payload['raw'].encode()).hexdigest() == \
        payload['sha256']
    result = parsers.parse(payload['tool'], payload['raw'], emulated=True)
    assert result['iops'] > 0 and result['emulated'] is True
    assert console.status(log, ID) == ('ok', '')


def test_bytes_input_is_accepted(log):
    assert console.extract(log.encode(), ID)[0]['raw'] == \
        console.extract(log, ID)[0]['raw']


def test_other_instance_has_no_result(log):
    with pytest.raises(KvmtuneError, match='no KVMTUNE-RESULT-BEGIN'):
        console.extract(log, 'aaaaaaaa-0000-0000-0000-000000000000')


def test_truncated_console_misses_the_end_marker(log):
    cut = log[:log.index(console.END) - 200]
    with pytest.raises(KvmtuneError, match='KVMTUNE-RESULT-END missing'):
        console.extract(cut, ID)


def test_garbled_digit_fails_the_checksum(log):
    at = log.index('"iops" : ') + len('"iops" : ')
    digit = log[at]
    garbled = log[:at] + ('7' if digit != '7' else '8') + log[at + 1:]
    with pytest.raises(KvmtuneError, match='sha256 does not match'):
        console.extract(garbled, ID)


def test_lost_characters_fail_the_byte_count(log):
    at = log.index('"jobs"')
    with pytest.raises(KvmtuneError, match='bytes where the guest sent'):
        console.extract(log[:at] + log[at + 3:], ID)


def test_kernel_line_between_payload_lines_is_removed(log):
    at = log.index('"jobs"')
    at = log.rindex('\n', 0, at) + 1
    mixed = (log[:at] + '[   12.345678] virtio_blk virtio1: [vdb] 524288 '
             '512-byte logical blocks\r\n' + log[at:])
    assert console.extract(mixed, ID) == console.extract(log, ID)


def test_kernel_line_inside_a_payload_line_is_removed(log):
    at = log.index('"jobs"') + 3
    mixed = log[:at] + '[   13.000001] random: crng init done\n' + log[at:]
    assert console.extract(mixed, ID)[0]['raw'] == \
        console.extract(log, ID)[0]['raw']


def test_interleaved_non_kernel_text_is_an_error(log):
    at = log.index('"jobs"')
    at = log.rindex('\n', 0, at) + 1
    mixed = log[:at] + 'login: \r\n' + log[at:]
    with pytest.raises(KvmtuneError):
        console.extract(mixed, ID)


def test_wrong_header_checksum_is_an_error():
    text = frame(ID, '{"a": 1}\n', digest='0' * 64)
    with pytest.raises(KvmtuneError, match='sha256'):
        console.extract(text, ID)


def test_payload_without_trailing_newline_round_trips():
    text = frame(ID, 'no newline at the end')
    assert console.extract(text, ID)[0]['raw'] == 'no newline at the end'


def test_two_guests_on_one_text_are_told_apart():
    other = 'bbbbbbbb-0000-0000-0000-000000000000'
    text = frame(other, 'theirs\n') + frame(ID, 'mine\n')
    assert console.extract(text, ID)[0]['raw'] == 'mine\n'
    assert console.extract(text, other)[0]['raw'] == 'theirs\n'


@pytest.mark.parametrize('state,reason', [
    ('late', 'ready at 1795294076, start_at 1795294072'),
    ('error', 'fio exited 1: fio: pid=0, err=2/file:filesetup.c'),
])
def test_guest_reported_failure_is_raised_with_its_reason(state, reason):
    text = f'boot\r\n{console.STATUS} {ID} {state} {reason}\r\n'
    assert console.status(text, ID) == (state, reason)
    with pytest.raises(KvmtuneError, match=f'guest reported {state}'):
        console.extract(text, ID)
