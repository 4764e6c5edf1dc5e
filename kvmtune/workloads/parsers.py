"""One parser per tool, each returning the result shape of design.md 6::

    {"tool", "workload", "iops", "bw_bytes_s",
     "lat_ns": {"mean", "p50", "p95", "p99"}, "gbit_s", "tps", "events_s",
     "cpu_pct", "emulated"}

A figure the tool did not measure is None; output that cannot be read
raises KvmtuneError rather than yield a number.
"""

from collections.abc import Callable
import math
import re
from typing import Any
from typing import cast

from kvmtune.errors import KvmtuneError
from kvmtune import inputs

_ANSI = re.compile(r'\x1b\[[0-9;]*m')


# One tool run's figures (the shape above).
Result = dict[str, Any]


def _shape(tool: str, workload: str | None, emulated: bool | None,
           **values: Any) -> Result:
    result = {'tool': tool, 'workload': workload, 'iops': None,
              'bw_bytes_s': None,
              'lat_ns': {'mean': None, 'p50': None, 'p95': None,
                         'p99': None},
              'gbit_s': None, 'tps': None, 'events_s': None,
              'cpu_pct': None, 'emulated': emulated}
    result.update(values)
    return result


def _json(tool: str, raw: str) -> dict[str, Any]:
    # NaN, Infinity and 1e400 are refused here, nesting is bounded.
    try:
        doc = inputs.parse_json(raw, f'{tool} output')
    except KvmtuneError as exc:
        raise KvmtuneError(f'{tool} output is not JSON kvmtune accepts '
                           f'({exc.problem})',
                           fix='the tool failed or the output was cut') \
            from None
    if not isinstance(doc, dict):
        raise KvmtuneError(f'{tool} output is not a JSON object')
    return doc


def _need(mapping: Any, *keys: str, tool: str) -> Any:
    value = mapping
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            raise KvmtuneError(f'{tool} output lacks {".".join(keys)}')
        value = value[key]
    return value


def _num(mapping: Any, *keys: str, tool: str,
         minimum: float | None = 0.0) -> float:
    """A finite number (>= minimum) at ``keys``; never NaN or inf."""
    return inputs.number(_need(mapping, *keys, tool=tool),
                         source=f'{tool} output', key='.'.join(keys),
                         minimum=minimum)


def parse_fio(raw: str, workload: str | None = None,
              emulated: bool | None = None) -> Result:
    """fio --output-format=json (--group_reporting: one job entry).

    Latency is fio's completion latency (clat): mean and percentiles.
    """
    doc = _json('fio', raw)
    jobs = _need(doc, 'jobs', tool='fio')
    if not jobs:
        raise KvmtuneError('fio output has no jobs')
    iops = bw = usr = sys_ = 0.0
    ios = []
    for job in jobs:
        if job.get('error'):
            raise KvmtuneError(f'fio job {job.get("jobname")} failed with '
                               f'error {job["error"]}')
        for direction in ('read', 'write', 'trim'):
            stats = _need(job, direction, tool='fio')
            iops += _num(stats, 'iops', tool='fio')
            bw += _num(stats, 'bw_bytes', tool='fio')
            count = _num(stats, 'total_ios', tool='fio')
            if count:
                clat = _need(stats, 'clat_ns', tool='fio')
                ios.append((count, clat, _num(clat, 'mean', tool='fio')))
        usr += _num(job, 'usr_cpu', tool='fio')
        sys_ += _num(job, 'sys_cpu', tool='fio')
    if not ios:
        raise KvmtuneError('fio completed no I/O')
    total = sum(n for n, _, _ in ios)
    lat = {'mean': sum(n * mean for n, _, mean in ios) / total,
           'p50': None, 'p95': None, 'p99': None}
    if len(ios) == 1:  # percentiles of one direction only: never mixed
        pct = ios[0][1].get('percentile', {})
        for key, point in (('p50', '50.000000'), ('p95', '95.000000'),
                           ('p99', '99.000000')):
            lat[key] = (_num(pct, point, tool='fio')
                        if isinstance(pct, dict) and point in pct else None)
    return _shape('fio', workload or jobs[0].get('jobname'), emulated,
                  iops=iops, bw_bytes_s=bw, lat_ns=lat,
                  cpu_pct=(usr + sys_) / len(jobs))


def parse_iperf3(raw: str, workload: str | None = None,
                 emulated: bool | None = None) -> Result:
    """iperf3 -J: received rate, sender CPU, TCP round-trip time."""
    doc = _json('iperf3', raw)
    if doc.get('error'):
        raise KvmtuneError(f'iperf3: {doc["error"]}')
    end = _need(doc, 'end', tool='iperf3')
    udp = _need(doc, 'start', 'test_start', 'protocol',
                tool='iperf3') == 'UDP'
    received = end.get('sum_received') or _need(end, 'sum', tool='iperf3')
    bps = _num(received, 'bits_per_second', tool='iperf3')
    rtts = [_num(s, 'sender', 'mean_rtt', tool='iperf3')
            for s in end.get('streams', [])
            if 'mean_rtt' in s.get('sender', {})]
    extra = {}
    if udp:
        summary = _need(end, 'sum', tool='iperf3')
        extra = {name: (_num(summary, key, tool='iperf3')
                        if summary.get(key) is not None else None)
                 for name, key in (('lost_pct', 'lost_percent'),
                                   ('jitter_ms', 'jitter_ms'))}
    return _shape(
        'iperf3', workload, emulated, bw_bytes_s=bps / 8,
        gbit_s=bps / 1e9,
        lat_ns={'mean': 1000.0 * sum(rtts) / len(rtts) if rtts else None,
                'p50': None, 'p95': None, 'p99': None},
        cpu_pct=_num(end, 'cpu_utilization_percent', 'host_total',
                     tool='iperf3'), **extra)


# Each figure is the whole rest of its line (then checked to be a finite
# number): a line cut inside a number ("419.56" -> "41") must not match.
_SOCKPERF = {
    'valid': re.compile(r'\[Valid Duration\] RunTime=(\S+) sec; '
                        r'SentMessages=(\d+); ReceivedMessages=(\d+)\s*$',
                        re.M),
    'rtt': re.compile(r'Summary: Round trip is (\S+) usec\s*$', re.M),
    'pct': re.compile(r'---> percentile (\S+) =\s*(\S+)\s*$', re.M),
    # The last line sockperf prints: without it the output was cut.
    'end': re.compile(r'---> <MIN> observation =\s*(\S+)[ \t]*\r?\n', re.M),
}


def parse_sockperf(raw: str, workload: str | None = None,
                   emulated: bool | None = None) -> Result:
    """sockperf ping-pong --full-rtt: one message in flight, so
    transactions/s = received replies / valid run time (netperf RR)."""
    text = _ANSI.sub('', raw).replace('\r\n', '\n')
    valid = _SOCKPERF['valid'].search(text)
    rtt = _SOCKPERF['rtt'].search(text)
    if not valid or not rtt:
        missing = 'Valid Duration' if not valid else 'Round trip summary'
        raise KvmtuneError(f'sockperf output lacks its {missing} line',
                           fix='run ping-pong with --full-rtt to the end')
    if not _SOCKPERF['end'].search(text):
        raise KvmtuneError('sockperf output is cut: its last line (<MIN> '
                           'observation) is missing or incomplete',
                           fix='the output was truncated; run it again')
    source = 'sockperf output'
    seconds = inputs.number(valid.group(1), source=source,
                            key='Valid Duration RunTime')
    replies = int(valid.group(3))
    if seconds <= 0 or replies == 0:
        raise KvmtuneError('sockperf measured no round trip')
    pct = {inputs.number(p, source=source, key='percentile'):
           inputs.number(v, source=source, key=f'percentile {p}') * 1000
           for p, v in _SOCKPERF['pct'].findall(text)}
    mean = inputs.number(rtt.group(1), source=source, key='Round trip')
    return _shape(
        'sockperf', workload, emulated, tps=replies / seconds,
        lat_ns={'mean': mean * 1000, 'p50': pct.get(50.0),
                'p95': pct.get(95.0), 'p99': pct.get(99.0)},
        p90_ns=pct.get(90.0))


_SYSBENCH = {
    'threads': re.compile(r'^Number of threads: (\d+)\s*$', re.M),
    'cpu': re.compile(r'^\s*events per second:\s*([0-9.]+)\s*$', re.M),
    'memory': re.compile(r'^([0-9.]+) MiB transferred \(\s*([0-9.]+) '
                         r'MiB/sec\)\s*$', re.M),
    'time': re.compile(r'^\s*total time:\s*([0-9.]+)s\s*$', re.M),
    'events': re.compile(r'^\s*total number of events:\s*(\d+)\s*$',
                         re.M),
    'latency': re.compile(r'^\s*(min|avg|max|95th percentile):\s*'
                          r'([0-9.]+)\s*$', re.M),
}


def _finite(tool: str, what: str, text: Any) -> float:
    """A finite, non-negative number read from the tool's output."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        value = float('nan')
    if not math.isfinite(value) or value < 0:
        raise KvmtuneError(f'{tool} output has a bad {what}: {text!r}')
    return value


def parse_sysbench(raw: str, workload: str | None = None,
                   emulated: bool | None = None) -> Result:
    """sysbench 1.0 ``cpu`` or ``memory`` ... ``run`` (text output).

    cpu: ``events_s`` = events (prime searches) per second over all
    threads, the CPU-bound figure; memory: ``bw_bytes_s`` from the MiB/s
    transferred over all threads. Latency is per event (sysbench prints
    milliseconds with two decimals): mean, 95th percentile and
    ``lat_max_ns``. A run with no event, no summary or a figure that is
    not a finite non-negative number raises.
    """
    text = _ANSI.sub('', raw).replace('\r', '')
    cpu = _SYSBENCH['cpu'].search(text)
    memory = _SYSBENCH['memory'].search(text)
    # Match objects, None checked below (missing)
    found: dict[str, Any] = {k: _SYSBENCH[k].search(text)
                             for k in ('threads', 'time', 'events')}
    missing = [k for k, v in found.items() if v is None]
    if (cpu is None) == (memory is None) or missing:
        names = {'threads': 'Number of threads', 'time': 'total time',
                 'events': 'total number of events'}
        what = (names[missing[0]] if missing else
                'figure (events per second or MiB/sec)')
        raise KvmtuneError(f'sysbench output lacks its {what} line',
                           fix='run sysbench cpu or memory ... run to '
                               'the end')
    seconds = _finite('sysbench', 'total time', found['time'].group(1))
    events = int(found['events'].group(1))
    if seconds <= 0 or events == 0:
        raise KvmtuneError('sysbench ran no event',
                           fix='check --time and the test options')
    lat = {name: _finite('sysbench', f'latency {name}', value) * 1e6
           for name, value in _SYSBENCH['latency'].findall(text)}
    if 'avg' not in lat:
        raise KvmtuneError('sysbench output lacks its Latency avg line')
    figures = {}
    if cpu is not None:
        figures['events_s'] = _finite('sysbench', 'events per second',
                                      cpu.group(1))
    else:
        figures['bw_bytes_s'] = _finite(  # memory matched: cpu did not
            'sysbench', 'MiB/sec',
            cast(re.Match[str], memory).group(2)) * 1048576.0
    if not any(figures.values()):
        raise KvmtuneError('sysbench measured a rate of 0')
    return _shape(
        'sysbench', workload, emulated,
        lat_ns={'mean': lat['avg'], 'p50': None,
                'p95': lat.get('95th percentile'), 'p99': None},
        lat_max_ns=lat.get('max'), threads=int(found['threads'].group(1)),
        seconds=seconds, events=events,
        **figures)


PARSERS: dict[str, Callable[..., Result]] = {
    'fio': parse_fio, 'iperf3': parse_iperf3,
    'sockperf': parse_sockperf, 'sysbench': parse_sysbench}


def parse(tool: str, raw: object, workload: str | None = None,
          emulated: bool | None = None) -> Result:
    """The result of ``tool``'s output ``raw``; KvmtuneError (never
    KeyError, TypeError, ...: in Rally that would kill the iteration instead
    of recording an invalid guest) for anything that is not a result."""
    if tool not in PARSERS:
        raise KvmtuneError(f'no parser for tool {tool!r}',
                           fix=f'one of {", ".join(sorted(PARSERS))}')
    if not isinstance(raw, str):
        raise KvmtuneError(f'{tool} output is {type(raw).__name__}, not '
                           'text')
    try:
        result = PARSERS[tool](raw, workload=workload, emulated=emulated)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError,
            ZeroDivisionError, OverflowError, RecursionError) as exc:
        raise KvmtuneError(f'{tool} output has an unexpected shape '
                           f'({type(exc).__name__}: {exc})'[:200],
                           fix='the tool failed or its output was cut') \
            from None
    _check_figures(tool, result)
    return result


def _check_figures(tool: str, result: dict[str, Any], key: str = '') -> None:
    """Every figure of a result finite and not negative (or None)."""
    for name, value in result.items():
        where = f'{key}{name}'
        if isinstance(value, dict):
            _check_figures(tool, value, where + '.')
        elif isinstance(value, (int, float)) and not isinstance(value,
                                                                bool):
            inputs.number(value, source=f'{tool} result', key=where)
