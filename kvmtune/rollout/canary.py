"""The canary gate's judge: one host's metric, measured on the tuned host
(the canary) and on an untuned host of its hardware class (the control)
at the same moments, before and after the change.

The statistic is the difference-in-differences ratio of medians (canary
after / canary before) / (control after / control before)
(kvmtune.stats.did_ratio): whatever moved both hosts between the two
moments (time of day, a neighbour's load, a storage backend's cache) is
divided out, which a before/after comparison on the canary alone cannot
do (the SRE workbook's "time is one of the biggest sources of change";
/work/shared/CANARY-NOTES.md section 1). Its interval is the percentile
bootstrap of that ratio (kvmtune.stats.did_interval), judged against the
profile's band (kvmtune.tuning.measure.Band): the whole interval inside
is pass, outside is fail, across the edge is inconclusive. A sample
smaller than the confidence needs is refused, not judged: three values a
side never pass on significance.

The verdicts: ``pass``, ``fail``, ``inconclusive``, ``refused`` (too few
values for the confidence), ``error`` (a value that is not a positive
number), and, before the four samples are complete, ``pending``.
"""

from collections.abc import Mapping
from collections.abc import Sequence
import math
from typing import Any

from kvmtune import stats
from kvmtune.tuning.measure import Band
from kvmtune.tuning.measure import FAIL
from kvmtune.tuning.measure import INCONCLUSIVE
from kvmtune.tuning.measure import PASS

STATISTIC = 'did-ratio-of-medians'
REFUSED, ERROR, PENDING = 'refused', 'error', 'pending'
VERDICTS = (PASS, FAIL, INCONCLUSIVE, REFUSED, ERROR, PENDING)
# worst first: a host's verdict is its worst metric's
SEVERITY = (FAIL, ERROR, REFUSED, INCONCLUSIVE, PENDING, PASS)
SIDES = ('canary', 'control')
MOMENTS = ('before', 'after')
DEFAULT_RESAMPLES = 2000
# one seed for every record: the same samples give the same interval when
# the analysis is made again (report, resume), and records of the same
# sizes share their bootstrap draws (kvmtune.stats._draws)
SEED = 48

Samples = Mapping[str, Mapping[str, Sequence[float]]]


def worst(verdicts: Sequence[str]) -> str:
    """The worst of ``verdicts`` (SEVERITY); pending for none."""
    if not verdicts:
        return PENDING
    return min(verdicts, key=SEVERITY.index)


def _bad_value(samples: Samples) -> str | None:
    for side in SIDES:
        for moment in MOMENTS:
            for value in samples[side][moment]:
                if (isinstance(value, bool)
                        or not isinstance(value, (int, float))
                        or not math.isfinite(value) or value <= 0):
                    return f'{side} {moment} holds {value!r}'
    return None


def _pct(ratio: float) -> str:
    return f'{(ratio - 1) * 100:+.1f} %'


def judge(samples: Samples, band: Band, confidence: float, *,
          seed: int = SEED, resamples: int = DEFAULT_RESAMPLES
          ) -> dict[str, Any]:
    """The analysis of one metric: ``samples[side][moment]`` (side
    canary or control, moment before or after) -> the record's
    statistic, estimate, interval, p-values, verdict and reason."""
    counts = {f'{side} {moment}': len(samples[side][moment])
              for side in SIDES for moment in MOMENTS}
    out: dict[str, Any] = {
        'statistic': STATISTIC, 'confidence': confidence, 'band': str(band),
        'seed': seed, 'resamples': resamples, 'estimate': None,
        'interval': None, 'p_canary': None, 'p_control': None}
    needed = stats.samples_needed(confidence)
    short = {k: n for k, n in counts.items() if n < needed}
    if short:
        what, n = min(short.items(), key=lambda kv: kv[1])
        out['verdict'] = REFUSED
        out['reason'] = (
            f'{what} has {n} values: below {needed} a side no interval '
            f'reaches {confidence:.0%} (the U test\'s smallest p with {n} '
            f'a side is {stats.p_floor(n, n) if n else 1:.2g}); measure at '
            f'least {needed} values (VMs x repeats) per host and moment')
        return out
    bad = _bad_value(samples)
    if bad:
        out['verdict'] = ERROR
        out['reason'] = (f'{bad}: a ratio of medians needs positive '
                         'finite values; measure again')
        return out
    cb, ca = samples['canary']['before'], samples['canary']['after']
    tb, ta = samples['control']['before'], samples['control']['after']
    estimate = stats.did_ratio(cb, ca, tb, ta)
    low, high = stats.did_interval(cb, ca, tb, ta, confidence,
                                   resamples=resamples, seed=seed)
    verdict = band.judge(low, high)
    out.update(estimate=estimate, interval=[low, high],
               p_canary=stats.mann_whitney_p(ca, cb),
               p_control=stats.mann_whitney_p(ta, tb), verdict=verdict)
    figure = (f'change {_pct(estimate)}, {confidence:.0%} interval '
              f'[{_pct(low)}, {_pct(high)}]')
    if verdict == PASS:
        out['reason'] = f'{figure} lies within {band}'
    elif verdict == FAIL:
        out['reason'] = (f'{figure} lies outside {band}: the change is '
                         'worse than the profile allows')
    else:
        out['reason'] = (f'{figure} crosses the edge of {band}: the samples '
                         'cannot tell; measure more, or decide (--accept)')
    return out
