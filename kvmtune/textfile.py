"""node_exporter textfiles: the one writer (and reader) of kvmtune's metrics.

node_exporter's textfile collector reads the ``*.prom`` files of
``--collector.textfile.directory`` in the Prometheus text format
(node_exporter README, "Textfile Collector"). It skips a whole file whose
samples carry timestamps, so times are gauges of their own, and a reader
must never see half a file: the file is written beside itself and renamed
(kvmtune.fileio). Names follow the Prometheus naming guide
(https://prometheus.io/docs/practices/naming/): the unit in the name,
``_total`` only on counters, and every per-host series has a ``hostname``
label equal to the Nova service host, the label openstack-exporter gives
``openstack_nova_agent_state``, so rules join the two ``on(hostname)``
(doc/source/admin/monitoring.md).

Every command's file also says when the command last ran and last
succeeded, per host:

``kvmtune_last_run_timestamp_seconds{command,hostname}``
    when it last ran to the end (and wrote this file);
``kvmtune_last_success_timestamp_seconds{command,hostname}``
    when it last succeeded (verify: exit 0, nothing drifted and something
    checked; capacity: every count made), carried over from the file it
    replaces, 0 if never.

A file has one writer: one command (a file another command or program
wrote is refused, not overwritten) at a time (a second writer holding it is
refused at once: kvmtune.fileio.lock(wait=False)).
"""

from collections.abc import Iterable
from collections.abc import Mapping
import dataclasses
import math
import os
import re
import time

from kvmtune.errors import InputError
from kvmtune import fileio

LAST_RUN = 'kvmtune_last_run_timestamp_seconds'
LAST_SUCCESS = 'kvmtune_last_success_timestamp_seconds'
# the gauge that says which command wrote a file, also in a file an
# earlier kvmtune wrote (whose names are kept for one release)
_OWNERS = {LAST_RUN: None,
           'kvmtune_verify_last_run_timestamp_seconds': 'verify',
           'kvmtune_capacity_last_run_timestamp_seconds': 'capacity'}
FIX = ('give --prometheus a file of its own (NAME.prom) in a directory you '
       'can write: node_exporter\'s --collector.textfile.directory (admin '
       'guide, "Monitoring with Prometheus")')

Labels = Mapping[str, object]


@dataclasses.dataclass
class Family:
    """One metric: its name, type (gauge, counter), HELP and samples."""
    name: str
    help: str
    samples: list[tuple[Labels, float]] = dataclasses.field(
        default_factory=list)
    type: str = 'gauge'

    def add(self, value: float, **labels: object) -> None:
        self.samples.append((labels, value))


def _escape(value: object) -> str:
    """A label value escaped as the text format wants: backslash, double
    quote and line feed."""
    return (str('' if value is None else value).replace('\\', '\\\\')
            .replace('"', '\\"').replace('\n', '\\n'))


def labels(**pairs: object) -> str:
    """``{name="value",...}`` in the text format, values escaped."""
    return '{' + ','.join(f'{name}="{_escape(value)}"'
                          for name, value in pairs.items()) + '}'


def _number(value: float) -> str:
    if isinstance(value, bool) or (isinstance(value, int)):
        return str(int(value))
    if math.isnan(value):
        return 'NaN'
    if math.isinf(value):
        return '+Inf' if value > 0 else '-Inf'
    return str(int(value)) if value.is_integer() else repr(value)


def render(families: Iterable[Family]) -> str:
    """The text format of ``families``, no sample timestamps."""
    lines = []
    for family in families:
        lines += [f'# HELP {family.name} ' + ' '.join(family.help.split()),
                  f'# TYPE {family.name} {family.type}']
        lines += [family.name + (labels(**dict(pairs)) if pairs else '') +
                  ' ' + _number(value) for pairs, value in family.samples]
    return '\n'.join(lines) + '\n'


_SAMPLE = re.compile(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)\s*$')
_PAIR = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?')


def _unescape(value: str) -> str:
    return re.sub(r'\\(.)', lambda m: '\n' if m.group(1) == 'n'
                  else m.group(1), value)


def parse(text: str) -> list[tuple[str, dict[str, str], float]]:
    """(name, labels, value) of every sample of a text-format file; lines
    that are not samples of that format are skipped."""
    found = []
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if line.startswith('#') or not match:
            continue
        name, body, value = match.groups()
        pairs = {key: _unescape(raw)
                 for key, raw in _PAIR.findall(body or '')}
        try:
            found.append((name, pairs, float(value)))
        except ValueError:
            continue
    return found


def _owner(path: str,
           samples: list[tuple[str, dict[str, str], float]]) -> str | None:
    """The kvmtune command that wrote the file (None: it has no series,
    nothing to lose); InputError for another program's series."""
    for name, pairs, _ in samples:
        if name in _OWNERS:
            return _OWNERS[name] or pairs.get('command')
    if samples:
        raise InputError('was not written by kvmtune (another program\'s '
                         'textfile?); nothing was written', source=path,
                         fix=FIX)
    return None


def _previous(path: str, command: str) -> dict[str, float]:
    """{hostname: last success} of ``command`` in the file it replaces;
    InputError when another command or program wrote that file."""
    try:
        with open(path, 'rb') as f:
            text = f.read(8 << 20).decode('utf-8', 'replace')
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise InputError(f'cannot read it: {exc.strerror}; nothing was '
                         'written', source=path, fix=FIX) from None
    samples = parse(text)
    owner = _owner(path, samples)
    if owner not in (None, command):
        raise InputError(f'is kvmtune {owner}\'s file: a second writer '
                         'would replace its series; nothing was written',
                         source=path, fix=FIX)
    return {pairs.get('hostname', ''): value
            for name, pairs, value in samples
            if name == LAST_SUCCESS and pairs.get('command') == command}


def timestamps(command: str, success: Mapping[str, bool], now: float,
               previous: Mapping[str, float]) -> list[Family]:
    """The last-run and last-success gauges of ``command`` for each
    hostname of ``success`` ({hostname: did it succeed}; '' for a
    cloud-wide command, which then has no hostname label)."""
    run = Family(LAST_RUN, 'When the kvmtune command last ran to the end '
                 '(Unix time).')
    ok = Family(LAST_SUCCESS, 'When the kvmtune command last succeeded '
                '(verify: in sync, something checked; capacity: every '
                'count made; 0: never).')
    for hostname in sorted(success):
        where = {'command': command}
        if hostname:
            where['hostname'] = hostname
        run.add(now, **where)
        ok.add(now if success[hostname] else previous.get(hostname, 0),
               **where)
    return [run, ok]


def write(path: str, command: str, families: list[Family],
          success: Mapping[str, bool], now: float | None = None) -> None:
    """Write ``families`` and ``command``'s timestamps to the textfile
    ``path``, atomically, as its one writer."""
    now = time.time() if now is None else now
    if not path.endswith('.prom'):
        raise InputError('the textfile collector reads only *.prom files',
                         source=path, key='--prometheus', fix=FIX)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        os.stat(directory)
    except FileNotFoundError:
        raise InputError(f'its directory {directory} does not exist; '
                         'nothing was written', source=path,
                         key='--prometheus', fix=FIX) from None
    except OSError as exc:
        raise InputError(f'its directory {directory} is not reachable '
                         f'({exc.strerror}); nothing was written',
                         source=path, key='--prometheus', fix=FIX) from None
    fileio.check_writable(path, fix=FIX)
    with fileio.lock(path, wait=False):
        previous = _previous(path, command)
        text = render(families + timestamps(command, success, now,
                                            previous))
        fileio.write_atomic(path, text, mode=0o644, source=path, fix=FIX)
