"""The nova.conf files of a host for ``kvmtune host capture``, without
their secrets.

Which files: those nova-compute parses, in oslo.config's order
(kvmtune.tuning.novaconf.effective.sources): its own command line when a
nova-compute runs under the root (``/proc/<pid>/cmdline``,
kvmtune.tuning.novaconf.dropin.running_cmdlines), else oslo.config's
defaults for a service started without arguments (nova.conf,
nova-compute.conf and their ``.conf.d`` directories in /etc/nova and /etc).

Without secrets: an option whose value must never be shown
(kvmtune.tuning.novaconf.diff: its name looks like a secret, Nova defines
it with ``secret=True``, or its value has the shape of one,
kvmtune.errors.mask_secrets) is not copied at all; its lines become one
comment naming it. A comment line that holds something shaped like a
secret goes too. Removed, not masked: a capture must never hold a value
that could be taken for the real one. The planned options kvmtune reads
back (cpu sets, reserved pages, filters, [libvirt] modes) are none of
these, so the capture answers ``rollout --check`` and ``nova-conf apply
--dry-run`` as the host does.
"""

from collections.abc import Collection
import os

from kvmtune.errors import InputError
from kvmtune import inputs
from kvmtune.tuning.novaconf import diff
from kvmtune.tuning.novaconf import dropin
from kvmtune.tuning.novaconf import effective
from kvmtune.tuning.novaconf import inifile
from kvmtune.tuning.novaconf import validate

# The largest nova.conf copied; Nova's full sample is about 250 kB.
MAX_BYTES = 1 << 20
# No more files than this (a conf.d directory of thousands is no host's).
MAX_FILES = 64
REMOVED = '# {key}: removed by kvmtune host capture (a secret)'
# Paths a capture never copies from, whatever a command line names.
_NOT_FILES = ('/dev/', '/proc/', '/sys/')


def compute_argv(root: str) -> list[str]:
    """The argv of the nova-compute running under ``root``, or a bare
    ``nova-compute`` (oslo.config's defaults) when none is seen."""
    found = dropin.running_cmdlines(os.path.join(root, 'proc'))
    if 'compute' in found:
        return found['compute'][0]
    return ['nova-compute']


def paths(root: str) -> list[str]:
    """The nova.conf files nova-compute reads on the host ``root``
    (absolute host paths, at most MAX_FILES, none under /dev, /proc,
    /sys)."""
    reader = effective.Reader(root)
    seen: list[str] = []
    for source in effective.sources(compute_argv(root), reader):
        path = os.path.normpath(os.path.join('/', source.path))
        if path.startswith(_NOT_FILES) or path in seen:
            continue
        seen.append(path)
    return seen[:MAX_FILES]


def scrub(text: str, secrets: Collection[tuple[str, str]] | None = None
          ) -> tuple[str, list[str]]:
    """(``text`` without its secret-bearing lines, the ``[section] key``
    of each option removed). ``secrets`` as diff.is_secret takes it."""
    ini = inifile.IniFile(text)
    shown = diff.shown_lines(ini, secrets)
    drop: dict[int, str | None] = {}
    removed: list[str] = []
    for block in ini.blocks:
        for entry in block.entries:
            lines = range(entry.first, entry.last + 1)
            if all(shown[i] == ini.lines[i].text for i in lines):
                continue
            key = f'[{block.section}] {entry.key}'
            removed.append(key)
            for index in lines:
                drop[index] = None
            drop[entry.first] = REMOVED.format(key=key)
    for index, line in enumerate(ini.lines):
        if index not in drop and shown[index] != line.text:
            drop[index] = None      # a comment shaped like a secret
    out = []
    for index, line in enumerate(ini.lines):
        if index in drop:
            if drop[index] is not None:
                out.append(f'{drop[index]}{line.end or ini.newline()}')
            continue
        out.append(line.text + line.end)
    return ''.join(out), removed


def read(root: str, secrets: Collection[tuple[str, str]] | None = None
         ) -> tuple[dict[str, bytes], dict[str, str]]:
    """({host path: scrubbed bytes}, {host path: why it was not copied})
    of the nova.conf files nova-compute reads under ``root``. A file that
    is not there is simply left out; one that is no regular file, too
    large, not UTF-8 or not something oslo.config reads is left out with
    the reason (a capture holds no file it could not clean)."""
    inside = None if os.path.realpath(root) == '/' else \
        os.path.realpath(root)
    copied: dict[str, bytes] = {}
    refused: dict[str, str] = {}
    for path in paths(root):
        full = os.path.join(root, path.lstrip('/'))
        try:
            text = inputs.decode(inputs.read_bytes(
                full, max_bytes=MAX_BYTES, source=path, inside=inside), path)
        except InputError as exc:
            if exc.problem != 'no such file':
                refused[path] = exc.problem
            continue
        try:
            clean, _ = scrub(text, secrets)
        except inifile.ParseError as exc:
            refused[path] = f'not read by oslo.config ({exc})'
            continue
        copied[path] = clean.encode()
    return copied, refused


def nova_secrets() -> set[tuple[str, str]]:
    """{(group, option)} Nova defines with secret=True, when a Python with
    Nova is found (kvmtune.tuning.novaconf.validate); else empty, and the
    names and shapes of kvmtune.tuning.novaconf.diff decide alone."""
    try:
        answer = validate.check_with_nova({})
    except InputError:
        return set()
    return {(group, option) for group, option in answer.get('secrets') or ()}
