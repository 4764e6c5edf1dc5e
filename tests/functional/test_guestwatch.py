"""The host's watch over a real QEMU guest (tests/guestwatch.py): a
planted hang is killed from the host within its bound and reported with
its last console line, and the tier goes on.

The guest is a 512-byte boot sector (assembled below, byte by byte) that
SeaBIOS loads under TCG: it prints what the nested test's L1 prints up to
``l2=starting`` on its serial port and then, the planted hang, stops
(``cli; hlt``: no interrupt can wake it, 0 % CPU), as the stuck L1 did.
Two more guests show what is not a hang: one that keeps printing, and one
that prints nothing but computes (a busy loop), which only the outer
bound ends. No cloud; about 30 s in all (mostly the stall bound).
"""

import shutil
import struct
import subprocess

import pytest

from tests import guestwatch

pytestmark = pytest.mark.skipif(
    shutil.which('qemu-system-x86_64') is None,
    reason='no qemu-system-x86_64 (kvmtune cloud install brings it)')

ORIGIN = 0x7C00     # where the BIOS loads a boot sector
BANNER = b'kvmtune guest\r\nl1=up\r\nl2=starting timeout=605\r\n\0'
# 16-bit real mode, at ORIGIN: ds = 0, dx = COM1, print the string at si
# (the 0-terminated message placed after the tail), then the tail
PRINT = bytes([0x31, 0xC0,              # 0:  xor ax, ax
               0x8E, 0xD8,              # 2:  mov ds, ax
               0xBA, 0xF8, 0x03,        # 4:  mov dx, 0x3f8
               0xBE, 0x00, 0x00,        # 7:  mov si, <message>
               0xAC,                    # 10: lodsb
               0x84, 0xC0,              # 11: test al, al
               0x74, 0x03,              # 13: jz 18 (the tail)
               0xEE,                    # 15: out dx, al
               0xEB, 0xF8])             # 16: jmp 10
TAILS = {
    # the planted hang: interrupts off, halt (and halt again if woken)
    'hang': bytes([0xFA, 0xF4, 0xEB, 0xFD]),
    # computing, silent: jmp $
    'spin': bytes([0xEB, 0xFE]),
    # print "tick" again after a delay loop of bx * 65535 rounds:
    #   18: mov bx, 0x0100; 21: mov cx, 0xffff; 24: loop 24;
    #   26: dec bx; 27: jnz 21; 29: mov si, <tick>; 32: jmp 10
    'tick': bytes([0xBB, 0x00, 0x01, 0xB9, 0xFF, 0xFF, 0xE2, 0xFE, 0x4B,
                   0x75, 0xF8, 0xBE, 0x00, 0x00, 0xEB, 0xE8]),
}


def boot_sector(tail):
    """The boot sector: PRINT, ``tail``, then the message(s)."""
    code = bytearray(PRINT + TAILS[tail])
    message = ORIGIN + len(code)
    code[8:10] = struct.pack('<H', message)
    code += BANNER
    if tail == 'tick':
        code[30:32] = struct.pack('<H', ORIGIN + len(code))
        code += b'tick\r\n\0'
    assert len(code) <= 510
    return bytes(code.ljust(510, b'\0')) + b'\x55\xaa'


@pytest.fixture
def qemu(tmp_path):
    """Start a guest booting boot_sector(tail) under TCG; its console and
    CPU sources. Killed at the end whatever happened."""
    started = []

    def start(tail):
        disk = tmp_path / f'{tail}.img'
        disk.write_bytes(boot_sector(tail))
        console = tmp_path / f'{tail}.console'
        proc = subprocess.Popen(
            ['qemu-system-x86_64', '-machine', 'pc,accel=tcg', '-m', '16',
             '-nodefaults', '-display', 'none', '-no-reboot',
             '-serial', f'file:{console}',
             '-drive', f'file={disk},format=raw,if=ide'],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        started.append(proc)
        return (proc, guestwatch.file_console(console),
                guestwatch.proc_cpu_seconds(proc.pid), proc.kill)
    yield start
    for proc in started:
        proc.kill()
        proc.wait()


def test_a_planted_hang_after_l2_starting_is_killed_and_reported(qemu):
    proc, console, cpu, kill = qemu('hang')
    outcome = guestwatch.watch(console, cpu, kill,
                               lambda text: 'l2=ok' in text,
                               stall_s=10, timeout=120, interval=1)
    print(f'\n{outcome.report("planted hang")}')
    assert outcome.state == 'stalled', outcome.report()
    assert outcome.last_line == 'l2=starting timeout=605'
    # the host's kill, at the stall bound after the last progress (plus
    # a poll interval, and slack for a busy 2-core host)
    assert proc.wait(30) == -9
    assert 10 <= outcome.quiet_s < 15      # hang bound


def test_a_guest_that_keeps_printing_runs_to_its_end(qemu):
    proc, console, cpu, kill = qemu('tick')
    outcome = guestwatch.watch(console, cpu, kill,
                               lambda text: text.count('tick') >= 5,
                               stall_s=10, timeout=120, interval=1)
    print(f'\n{outcome.report("ticking guest")}')
    assert outcome.state == 'done', outcome.report()
    assert proc.poll() is None      # not killed


def test_a_silent_guest_that_computes_is_ended_by_the_outer_bound(qemu):
    proc, console, cpu, kill = qemu('spin')
    outcome = guestwatch.watch(console, cpu, kill, lambda text: False,
                               stall_s=5, timeout=12, interval=1)
    print(f'\n{outcome.report("spinning guest")}')
    assert outcome.state == 'timeout', outcome.report()
    assert outcome.cpu_s > 5 * guestwatch.MIN_CPU_SHARE
    assert proc.wait(30) == -9
