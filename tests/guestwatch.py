"""A guest's progress watched from the host, so a stuck guest cannot hold
the tier.

A watchdog inside a guest cannot fire when that guest is itself stuck. In
one CI run the nested test's L1 (QEMU's emulated SVM, under TCG) stopped
after printing ``l2=starting``, idle at 0 % CPU for over ten minutes; its
own L2 timeout never printed, and the test waited out its whole bound.
Here the host watches what it can read without the guest's help: what
the guest printed (its console) and the CPU time the guest's QEMU used.
A guest that printed nothing new and used less than ``min_cpu_share`` of
one CPU for ``stall_s`` seconds makes no progress: the host kills it and
the wait ends ``stalled``, with the last line it printed. The outer
bound ``timeout`` ends any wait (``timeout``, the guest killed too).

Sources, pluggable so the logic is tested on fake ones
(tests/unit/test_guestwatch.py) and used on real guests:

- ``file_console(path)``, ``proc_cpu_seconds(pid)``: a QEMU this test
  started (its serial console a file);
- ``virsh_cpu_seconds(domain)``, ``virsh_destroy(domain)``: a libvirt
  domain, such as a Nova server's (its console from Nova's API).

The bounds are hang bounds, not speeds: ``stall_s`` is long beside the
quiet spells a working guest has.
"""

import dataclasses
import os
import re
import subprocess
import time

# A working guest under TCG on a busy 2-core host keeps at least this
# share of one CPU while it computes; a halted one uses almost none.
MIN_CPU_SHARE = 0.05
CLK_TCK = os.sysconf('SC_CLK_TCK')


@dataclasses.dataclass
class Outcome:
    """How a watched wait ended: ``done`` (the guest said what was
    awaited), ``stalled`` (no progress for the stall bound: killed) or
    ``timeout`` (the outer bound: killed)."""
    state: str
    console: str
    waited_s: float
    quiet_s: float
    cpu_s: float | None

    @property
    def last_line(self):
        lines = [line for line in self.console.splitlines() if line.strip()]
        return lines[-1].strip() if lines else ''

    def report(self, what='guest'):
        """One line for the test's output and its failure message."""
        if self.state == 'done':
            return f'{what}: done after {self.waited_s:.0f} s'
        why = (f'no console output and under {MIN_CPU_SHARE:.0%} of a '
               f'CPU for {self.quiet_s:.0f} s' if self.state == 'stalled'
               else f'still running at the {self.waited_s:.0f} s bound')
        return (f'{what}: {self.state} ({why}); killed by the host after '
                f'{self.waited_s:.0f} s; its last console line: '
                f'{self.last_line!r}')


def watch(console, cpu_seconds, kill, done, *, stall_s, timeout,
          interval=5.0, min_cpu_share=MIN_CPU_SHARE, clock=time.monotonic,
          sleep=time.sleep):
    """Wait until ``done(console_text)``; kill a guest that stalls or
    outlives ``timeout``.

    :param console: () -> the guest's console text so far
    :param cpu_seconds: () -> CPU seconds its QEMU used, or None when
        unknown (then only the console counts as progress)
    :param kill: () -> None, stops the guest (the host's, not the
        guest's doing)
    :param done: (console text) -> True once the awaited result is there
    :returns: Outcome
    """
    started = clock()
    text = console()
    cpu = cpu_seconds()
    # progress is measured from the last time the guest showed some
    quiet_since, cpu_since = started, cpu
    while True:
        now = clock()
        if done(text):
            return Outcome('done', text, now - started, now - quiet_since,
                           cpu)
        if now - started >= timeout:
            kill()
            return Outcome('timeout', console() or text, now - started,
                           now - quiet_since, cpu)
        if now - quiet_since >= stall_s:
            kill()
            return Outcome('stalled', console() or text, now - started,
                           now - quiet_since, cpu)
        sleep(interval)
        new_text = console()
        new_cpu = cpu_seconds()
        now = clock()
        busy = (new_cpu is not None and cpu_since is not None and
                new_cpu - cpu_since >= min_cpu_share * max(
                    now - quiet_since, interval))
        if new_text != text or busy:
            quiet_since, cpu_since = now, new_cpu
        text, cpu = new_text, new_cpu


# --- sources -------------------------------------------------------------

def file_console(path):
    """A console written to a file (QEMU -serial file:...)."""
    def read():
        try:
            with open(path, errors='replace') as f:
                return f.read()
        except FileNotFoundError:
            return ''
    return read


def proc_cpu_seconds(pid):
    """CPU seconds (user + system, all threads) of process ``pid``; None
    once it is gone."""
    def read():
        try:
            with open(f'/proc/{pid}/stat') as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except (OSError, IndexError):
            return None
        return (int(fields[11]) + int(fields[12])) / CLK_TCK
    return read


def virsh_cpu_seconds(domain):
    """CPU seconds of a libvirt domain (``virsh domstats --cpu-total``,
    cpu.time in ns); None when virsh cannot tell."""
    def read():
        out = subprocess.run(['virsh', 'domstats', '--cpu-total', domain],
                             capture_output=True, text=True, timeout=60)
        match = re.search(r'^\s*cpu\.time=(\d+)$', out.stdout, re.M)
        return int(match.group(1)) / 1e9 if match else None
    return read


def virsh_destroy(domain):
    """Stop a libvirt domain at once (the host pulls its plug)."""
    def kill():
        subprocess.run(['virsh', 'destroy', domain], capture_output=True,
                       timeout=60)
    return kill
