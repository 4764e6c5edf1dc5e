"""Console extraction on a real TCG guest's serial log
(tests/fixtures/outputs/console-tcg-fio-randread-4k.log: SeaBIOS escape
sequences, CRLF line ends, kernel lines) and on damaged copies of it."""

import hashlib
import os

import pytest

from kvmtune.errors import KvmtuneError
from kvmtune.workloads import console
from kvmtune.workloads import parsers
from tests import paths

FIXTURE = os.path.join(paths.FIXTURES, 'outputs',
                       'console-tcg-fio-randread-4k.log')
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
    with pytest.raises(KvmtuneError,
                       match='6648 bytes where the guest sent 6640'):
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


def test_old_image_says_nothing_of_itself(log):
    # the fio capture above is from an image that printed no
    # KVMTUNE-GUEST line: the caller's label stands
    assert console.guest(log, ID) is None
    assert console.net(log, ID) is None
    assert console.emulated(log, ID, False) is False
    assert console.emulated(log, ID, True) is True


@pytest.mark.parametrize('line,accel,emulated_if_caller_said_no', [
    ('accel=tcg clocksource=tsc hypervisor=TCGTCGTCGTCG', 'tcg', True),
    ('accel=kvm clocksource=kvm-clock hypervisor=KVMKVMKVM', 'kvm', False),
    ('accel=unknown clocksource=tsc hypervisor=none', 'unknown', False),
    # a garbled value is not taken for a verdict
    ('accel=tc clocksource=tsc', 'unknown', False),
])
def test_guest_line(line, accel, emulated_if_caller_said_no):
    text = f'\x1b[2J{console.GUEST} {ID} {line}\r\nmore\r\n'
    said = console.guest(text, ID)
    assert said['accel'] == accel
    assert console.emulated(text, ID, False) is emulated_if_caller_said_no
    # a guest saying kvm never clears the caller's label
    assert console.emulated(text, ID, True) is True
    assert console.guest(text, 'aaaaaaaa-0000-0000-0000-000000000000') is None


def test_net_line():
    text = (f'{console.NET} {ID} eth0 10.233.0.2/24 from=network_data '
            'mtu=1400\r\n')
    assert console.net(text, ID) == {'device': 'eth0',
                                     'address': '10.233.0.2/24',
                                     'from': 'network_data', 'mtu': '1400'}
    assert console.net(f'{console.NET} {ID}\r\n', ID) is None


OUTPUTS = os.path.join(paths.FIXTURES, 'outputs')


def capture(name):
    with open(os.path.join(OUTPUTS, name), 'rb') as f:
        return f.read().decode('utf-8', 'surrogateescape')


def test_real_tcg_guest_says_so():
    # console-tcg-fio-randread-4k-guest-line.log: a guest of the current
    # image booted here under QEMU TCG (kvmtune bench local's argv)
    text = capture('console-tcg-fio-randread-4k-guest-line.log')
    assert console.guest(text, ID) == {'accel': 'tcg', 'clocksource': 'tsc',
                                       'hypervisor': 'TCGTCGTCGTCG'}
    assert console.emulated(text, ID, False) is True
    (payload,) = console.extract(text, ID)
    assert payload['workload'] == 'fio-randread-4k'
    assert console.net(text, ID) is None   # no NIC


def test_real_network_data_pair():
    server = capture('console-tcg-iperf3-network-data-server.log')
    client = capture('console-tcg-iperf3-network-data-client.log')
    sid = '44444444-5555-4666-8777-000000000000'
    cid = '44444444-5555-4666-8777-000000000001'
    assert console.net(server, sid) == {'device': 'eth0',
                                        'address': '10.233.8.1/24',
                                        'from': 'network_data',
                                        'mtu': '1400'}
    assert console.net(client, cid)['address'] == '10.233.8.2/24'
    assert console.status(server, sid) == ('ok', '')
    (payload,) = console.extract(client, cid)
    result = parsers.parse(payload['tool'], payload['raw'],
                           emulated=console.emulated(client, cid, False))
    assert result['gbit_s'] > 0 and result['emulated'] is True


@pytest.mark.parametrize('name,instance', [
    ('console-tcg-error-hold.log', '33333333-4444-4555-8666-777777777777'),
    ('console-tcg-error-no-hold.log', '33333333-4444-4555-8666-888888888888'),
])
def test_real_refusal_reads_the_same_held_or_not(name, instance):
    # held: the console ends at the status (the guest stayed up); not
    # held: the kernel's power-down line follows
    text = capture(name)
    assert console.status(text, instance) == (
        'error', 'refusing /dev/vda: it holds this image')
    assert console.guest(text, instance)['accel'] == 'tcg'
    assert ('reboot: Power down' in text) is name.endswith('no-hold.log')


# A guest started by signal says when it was ready and started.
# Real consoles of TCG guests (QEMU, benchmark image, job "start": "nmi"):
# one that got its NMI (kernel lines "Uhhuh. NMI received" before the
# result frame), one that never got it (start_timeout 15).
NMI_START = os.path.join(paths.FIXTURES, 'outputs',
                         'console-tcg-fio-randread-4k-nmi-start.log')
NMI_START_ID = '55dd03cd-baf5-4240-9f4b-8b3332eb21d9'
NMI_LATE = os.path.join(paths.FIXTURES, 'outputs',
                        'console-tcg-nmi-no-signal-late.log')
NMI_LATE_ID = 'abb60676-54d3-48d3-aebf-28a36b154186'


def _read(path):
    with open(path, 'rb') as f:
        return f.read().decode()


def test_signalled_guest_says_ready_then_start_then_its_verified_result():
    log = _read(NMI_START)
    assert console.status(log, NMI_START_ID) == (
        'ok', 'ready=8.96 start=10.43 start_time=1795375500 end=17.69')
    assert console.timing(log, NMI_START_ID) == {
        'ready': 8.96, 'time': 1795375498.0, 'start': 10.43,
        'start_time': 1795375500.0, 'end': 17.69}
    # the kernel's NMI lines come before the frame: the payload verifies
    (payload,) = console.extract(log, NMI_START_ID)
    assert parsers.parse('fio', payload['raw'])['iops'] > 0


def test_a_guest_waiting_for_its_signal_is_ready_not_done():
    log = _read(NMI_START)
    waiting = log[:log.index('Uhhuh')]      # as the scenario saw it
    assert console.status(waiting, NMI_START_ID) == (
        'ready', 'uptime=8.96 time=1795375498')
    assert console.timing(waiting, NMI_START_ID) == {
        'ready': 8.96, 'time': 1795375498.0}
    with pytest.raises(KvmtuneError, match='no KVMTUNE-RESULT-BEGIN'):
        console.extract(waiting, NMI_START_ID)


def test_a_guest_never_signalled_reports_late_with_its_ready_time():
    log = _read(NMI_LATE)
    assert console.status(log, NMI_LATE_ID) == (
        'late', 'no start signal (NMI) within 15 s of ready at uptime 16.20')
    assert console.timing(log, NMI_LATE_ID) == {
        'ready': 16.2, 'time': 1795375552.0}
    with pytest.raises(KvmtuneError, match='guest reported late'):
        console.extract(log, NMI_LATE_ID)


@pytest.mark.parametrize('words', [
    'ready=8.9x start=10', 'ready=-1 start=1e3', 'ready= start=nan',
    'ready=1.2.3 start=inf'])
def test_timing_drops_what_is_not_a_plain_number(words):
    text = f'{console.STATUS} {ID} ok {words}\r\n'
    assert console.status(text, ID)[0] == 'ok'
    assert all(v >= 0 for v in console.timing(text, ID).values())
    assert 'ready' not in console.timing(text, ID)


def test_old_image_states_no_times(log):
    assert console.timing(log, ID) == {}


def test_a_byte_count_of_thousands_of_digits_is_no_frame_not_a_crash():
    """int() of a 5,000-digit count raised ValueError, which Rally's
    scenario does not catch."""
    from kvmtune.errors import KvmtuneError
    from kvmtune.workloads import console
    text = ('KVMTUNE-RESULT-BEGIN vm-1 fio-randread-4k fio ' + '9' * 5000
            + ' ' + 'a' * 64 + '\n{}\nKVMTUNE-RESULT-END vm-1\n'
            'KVMTUNE-STATUS vm-1 ok\n')
    with pytest.raises(KvmtuneError, match='no KVMTUNE-RESULT-BEGIN'):
        console.extract(text, 'vm-1')
