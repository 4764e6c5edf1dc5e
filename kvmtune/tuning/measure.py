"""A profile's ``measure`` section: what the rollout's canary gate
measures, and the practical band each metric's change must meet.

::

    measure:
      workloads: [fio-randread, iperf3]   # booted on canary and control
      band:                               # metric: the change it must meet
        iops: ">= -5%"                    # no worse than -5 %
        gbit_s: ">= +10%"                 # at least +10 %
        lat_ns.p99: "<= +5%"              # at most 5 % slower
      samples: 10        # values per host and moment (VMs x repeats)
      max_samples: 30    # inconclusive: more, up to this, then a person
      confidence: 0.95   # of the interval judged against the band

The change is the difference-in-differences ratio of medians (canary
after / canary before) / (control after / control before) minus one
(kvmtune.stats.did_ratio). A band is met (pass) when the whole interval
lies inside it, missed (fail) when the whole interval lies outside, and
otherwise inconclusive: the samples cannot tell.

A section whose samples cannot reach its confidence is refused here, at
load, naming the samples it needs (Mann-Whitney's floor on p, and a finite
interval for a median: kvmtune.stats.samples_needed): a gate that cannot
fail is not run.
"""

import dataclasses
import re
from typing import Any

from kvmtune.errors import InputError
from kvmtune import stats

KEYS = ('workloads', 'band', 'samples', 'max_samples', 'confidence')
PASS, FAIL, INCONCLUSIVE = 'pass', 'fail', 'inconclusive'
DEFAULT_CONFIDENCE = 0.95
# the figures a guest run reports (doc/design.md 9.4's unit set)
METRICS = ('iops', 'bw_bytes_s', 'gbit_s', 'tps', 'events_s',
           'lat_ns.mean', 'lat_ns.p50', 'lat_ns.p95', 'lat_ns.p99',
           'lat_ns.max', 'cpu_pct', 'seconds')
_BAND = re.compile(r'\s*(>=|<=)\s*([+-]?\d+(?:\.\d+)?)\s*%\s*$')
_BAND_FIX = ('write ">= -5%" (no worse than -5 %), ">= +10%" (at least '
             '+10 %) or "<= +5%" (at most +5 %, for a latency)')


@dataclasses.dataclass(frozen=True)
class Band:
    """``>= P%`` or ``<= P%`` on the change (ratio - 1)."""
    op: str
    percent: float

    @property
    def limit(self) -> float:
        """The band's edge as a ratio: ``>= -5%`` is 0.95."""
        return 1 + self.percent / 100

    def __str__(self) -> str:
        return f'{self.op} {self.percent:+g}%'

    def judge(self, low: float, high: float) -> str:
        """pass when the interval [low, high] of the ratio lies inside the
        band, fail when it lies outside, else inconclusive."""
        inside, outside = ((low >= self.limit, high < self.limit)
                           if self.op == '>=' else
                           (high <= self.limit, low > self.limit))
        return PASS if inside else FAIL if outside else INCONCLUSIVE


def parse_band(text: object, source: str | None = None,
               key: str | None = None) -> Band:
    if not isinstance(text, str):
        raise InputError(f'a band is a quoted string, not {text!r}',
                         source=source, key=key, fix=_BAND_FIX)
    match = _BAND.match(text)
    if not match:
        raise InputError(f'{text!r} is not a band', source=source, key=key,
                         fix=_BAND_FIX)
    percent = float(match.group(2))
    if percent <= -100:
        raise InputError(f'{text!r}: a change cannot reach -100 %',
                         source=source, key=key, fix=_BAND_FIX)
    return Band(match.group(1), percent)


@dataclasses.dataclass(frozen=True)
class Measure:
    """A profile's parsed ``measure`` section."""
    workloads: tuple[str, ...]
    bands: dict[str, Band]
    samples: int
    max_samples: int
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        return {'workloads': list(self.workloads),
                'band': {m: str(b) for m, b in self.bands.items()},
                'samples': self.samples, 'max_samples': self.max_samples,
                'confidence': self.confidence}


def _int(data: dict[str, Any], key: str, default: int, source: str) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f'{value!r} is not a positive whole number',
                         source=source, key=f'measure.{key}',
                         fix='give a count of values per host and moment')
    return value


def parse(data: object, source: str) -> Measure:
    """The ``measure`` mapping of the profile file ``source``, checked;
    InputError (one line, the key named) for anything else."""
    if not isinstance(data, dict):
        raise InputError('measure must be a mapping', source=source,
                         key='measure', fix='give workloads and band (see '
                         'doc/source/admin/canary.md)')
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise InputError(f'unknown key {unknown[0]!r}', source=source,
                         key='measure', fix='measure has: ' + ', '.join(KEYS))
    workloads = data.get('workloads')
    if (not isinstance(workloads, list) or not workloads
            or not all(isinstance(w, str) and w.strip() for w in workloads)):
        raise InputError('workloads must be a list of workload names',
                         source=source, key='measure.workloads',
                         fix='name the workloads to boot, e.g. '
                             '[fio-randread]')
    bands = data.get('band')
    if not isinstance(bands, dict) or not bands:
        raise InputError('band must map each judged metric to its band',
                         source=source, key='measure.band',
                         fix='e.g. band: {iops: ">= -5%"}')
    parsed = {}
    for metric, text in bands.items():
        if metric not in METRICS:
            raise InputError(f'unknown metric {metric!r}', source=source,
                             key='measure.band',
                             fix='one of: ' + ', '.join(METRICS))
        parsed[metric] = parse_band(text, source, f'measure.band.{metric}')
    confidence = data.get('confidence', DEFAULT_CONFIDENCE)
    if (isinstance(confidence, bool)
            or not isinstance(confidence, (int, float))
            or not 0.5 <= confidence < 1):
        raise InputError(f'confidence {confidence!r} is not in [0.5, 1)',
                         source=source, key='measure.confidence',
                         fix='write e.g. 0.95')
    needed = stats.samples_needed(confidence)
    samples = _int(data, 'samples', needed, source)
    if samples < needed:
        raise InputError(
            f'{samples} values per host and moment cannot reach '
            f'{confidence:.0%} (the U test\'s smallest p with {samples} a '
            f'side is {stats.p_floor(samples, samples):.2g}): the gate '
            'could never fail or pass on its samples', source=source,
            key='measure.samples',
            fix=f'measure at least {needed} values (VMs x repeats) per '
                'host and moment')
    max_samples = _int(data, 'max_samples', 3 * samples, source)
    if max_samples < samples:
        raise InputError(f'max_samples {max_samples} is below samples '
                         f'{samples}', source=source,
                         key='measure.max_samples',
                         fix=f'give at least {samples}')
    return Measure(tuple(workloads), parsed, samples, max_samples,
                   float(confidence))
