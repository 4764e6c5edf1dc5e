"""The host's watch over a guest (tests/guestwatch.py) on fake sources: a
script of (console text, CPU seconds) per poll and a fake clock. The real
QEMU guests are in tests/functional/test_guestwatch.py."""

import pytest

from tests import guestwatch


class Guest:
    """A guest that shows ``script[i]`` = (console, cpu seconds) at its
    i-th look, the last one forever; time moves only when the watcher
    sleeps."""

    def __init__(self, script):
        self.script = list(script)
        self.looks = 0
        self.now = 0.0
        self.killed_at = None

    def _step(self):
        return self.script[min(self.looks, len(self.script) - 1)]

    def console(self):
        return self._step()[0]

    def cpu(self):
        value = self._step()[1]
        self.looks += 1
        return value

    def kill(self):
        self.killed_at = self.now

    def sleep(self, seconds):
        self.now += seconds

    def watch(self, done, **bounds):
        return guestwatch.watch(self.console, self.cpu, self.kill, done,
                                clock=lambda: self.now, sleep=self.sleep,
                                interval=5, **bounds)


NESTED = 'l1=up\nmodule=kvm_amd loaded=yes\nl2=starting timeout=605\n'


def test_a_guest_stuck_after_l2_starting_is_killed_within_its_bound():
    # the CI run's L1: it printed l2=starting, then nothing, at 0 % CPU
    guest = Guest([('l1=up\n', 10.0), (NESTED, 20.0), (NESTED, 20.01)])
    outcome = guest.watch(lambda text: 'l2=ok' in text, stall_s=60,
                          timeout=900)
    assert outcome.state == 'stalled'
    assert guest.killed_at is not None
    # last progress at t=5 (the console changed), the bound 60 s after it
    assert guest.killed_at == outcome.waited_s == 65
    assert outcome.last_line == 'l2=starting timeout=605'
    assert outcome.report('L1') == (
        "L1: stalled (no console output and under 5% of a CPU for 60 s); "
        "killed by the host after 65 s; its last console line: "
        "'l2=starting timeout=605'")


def test_a_quiet_guest_that_computes_is_not_killed():
    # L1 running L2 says nothing for minutes but uses its CPU
    script = [(NESTED, 20.0 + 4.0 * i) for i in range(60)]
    script.append((NESTED + 'l2=ok l2_accel=kvm\n', 260.0))
    guest = Guest(script)
    outcome = guest.watch(lambda text: 'l2=ok' in text, stall_s=60,
                          timeout=900)
    assert outcome.state == 'done' and guest.killed_at is None
    assert outcome.waited_s == 300


def test_a_guest_that_keeps_printing_is_not_killed_without_cpu_figures():
    script = [('tick\n' * i, None) for i in range(1, 40)]
    guest = Guest(script)
    outcome = guest.watch(lambda text: text.count('tick') >= 30, stall_s=6,
                          timeout=900)
    assert outcome.state == 'done' and guest.killed_at is None


def test_a_trickle_of_cpu_below_the_share_is_no_progress():
    # an idle kernel's timer ticks: 1 % of a CPU
    guest = Guest([(NESTED, 20.0 + 0.05 * i) for i in range(100)])
    outcome = guest.watch(lambda text: False, stall_s=60, timeout=900)
    assert outcome.state == 'stalled' and outcome.waited_s == 60


def test_the_outer_bound_ends_a_busy_guest_that_never_finishes():
    guest = Guest([('booting\n', 5.0 * i) for i in range(1000)])
    outcome = guest.watch(lambda text: False, stall_s=60, timeout=300)
    assert outcome.state == 'timeout' and guest.killed_at == 300
    assert 'still running at the 300 s bound' in outcome.report()
    assert outcome.last_line == 'booting'


def test_done_at_the_first_look_waits_for_nothing():
    guest = Guest([(NESTED + 'l2=ok\n', 1.0)])
    outcome = guest.watch(lambda text: 'l2=ok' in text, stall_s=60,
                          timeout=900)
    assert (outcome.state, outcome.waited_s) == ('done', 0)
    assert outcome.report('L1') == 'L1: done after 0 s'


@pytest.mark.parametrize('stat,expected', [
    # utime 250 and stime 50 ticks (fields 14 and 15 of proc(5))
    ('42 (qemu-system-x86) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0',
     300),
    # a comm with a space and a parenthesis in it
    ('42 (a) b) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 0 0', 10),
])
def test_proc_cpu_seconds_reads_utime_and_stime(
        tmp_path, monkeypatch, stat, expected):
    import builtins

    real_open = builtins.open
    path = tmp_path / 'stat'
    path.write_text(stat)
    monkeypatch.setattr(builtins, 'open', lambda p, *a, **k: real_open(
        path if p == '/proc/42/stat' else p, *a, **k))
    assert guestwatch.proc_cpu_seconds(42)() == \
        expected / guestwatch.CLK_TCK


def test_proc_cpu_seconds_of_a_process_gone_is_none():
    assert guestwatch.proc_cpu_seconds(2 ** 22 + 12345)() is None


def test_file_console_reads_what_was_written_and_empty_before(tmp_path):
    path = tmp_path / 'console.log'
    read = guestwatch.file_console(path)
    assert read() == ''
    path.write_bytes(b'l1=up\n\xff\n')
    assert read() == 'l1=up\n\ufffd\n'
