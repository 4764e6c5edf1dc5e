"""Statistics for small, noisy samples: the canary gate's arithmetic.

Pure Python, no numpy (a compute host's install has none): the median and
the MAD, Mann-Whitney's U test (exact distribution without ties, else the
normal approximation with the tie and continuity corrections, as
``scipy.stats.mannwhitneyu`` computes them), its floor on p (with n per
side the smallest two-sided p is ``2 / C(2n, n)``: 3 per side 0.1, 4 per
side 0.029, 5 per side 0.0079; golang/perf:benchmath/anone.go ``uTestMinP``
says the same), the Hodges-Lehmann shift and its Mann-Whitney interval,
and the bootstrap interval of a difference-in-differences ratio of medians
(canary after / canary before) / (control after / control before).

The bootstrap draws the median of each resample from its exact
distribution: a resample of n values drawn with replacement from the
sorted sample has its median at order statistic i (odd n), or at the mean
of the order statistics i <= j (even n), with probabilities that depend on
n alone (binomial and multinomial counts of the draws at or below each
position). ``median_table(n)`` computes them once per n; a replicate is
then one weighted draw per group instead of n draws and a sort, and as the
draws depend on n alone they are made once per sizes and seed and reused
by every record (common random numbers), which is what makes 1,000 hosts
x 2 metrics a few seconds (benchmarks/canary_analysis.py). The result is
the ordinary nonparametric percentile bootstrap of the median, drawn
exactly (up to table entries below 1e-9).
"""

from collections.abc import Callable
from collections.abc import Sequence
import functools
import math
import operator
import random
import statistics
from typing import Any

# Iglewicz and Hoaglin's modified z-score: 0.6745 (x - median) / MAD, an
# outlier above 3.5 ("How to Detect and Handle Outliers", ASQC 1993).
MAD_SCALE = 0.6745
OUTLIER_Z = 3.5

# Up to these sizes per side, without ties, the U test's p is exact.
EXACT_MAX = 50


def median(xs: Sequence[float]) -> float:
    """The median (the mean of the two middle values for an even count)."""
    s = sorted(xs)
    n = len(s)
    if not n:
        raise ValueError('the median of no values')
    mid = n // 2
    return s[mid] if n % 2 else (s[mid - 1] + s[mid]) / 2


def mad(xs: Sequence[float]) -> float:
    """The median absolute deviation from the median (unscaled)."""
    m = median(xs)
    return median([abs(x - m) for x in xs])


def robust_z(xs: Sequence[float]) -> list[float]:
    """Each value's modified z-score, 0.6745 (x - median) / MAD; all zero
    when the MAD is zero and the value is the median, infinite (signed)
    when the MAD is zero and it is not."""
    m, d = median(xs), mad(xs)
    if d == 0:
        return [0.0 if x == m else math.copysign(math.inf, x - m)
                for x in xs]
    return [MAD_SCALE * (x - m) / d for x in xs]


def _ranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """Mid-ranks of ``values`` (1-based) and the sizes of their tie
    groups."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    ties = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and \
                values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


def mann_whitney_u(x: Sequence[float], y: Sequence[float]) -> float:
    """U of ``x``: the pairs (xi, yj) with xi > yj, a tie counting 1/2."""
    ranks, _ = _ranks(list(x) + list(y))
    n1 = len(x)
    return sum(ranks[:n1]) - n1 * (n1 + 1) / 2


@functools.lru_cache(maxsize=256)
def _u_counts(n1: int, n2: int) -> tuple[int, ...]:
    """How many of the C(n1+n2, n1) orderings give each U = 0..n1*n2: the
    coefficients of the Gaussian binomial [n1+n2 choose n1]_q."""
    # f[m][u]: orderings of m x-values and j y-values with U = u; with
    # no y-value yet, one ordering and U = 0
    size = n1 * n2 + 1
    f = [[1] + [0] * (size - 1) for _ in range(n1 + 1)]
    for j in range(1, n2 + 1):
        # adding a y-value: an x may now stand above it (U + 1 per x)
        new = [[0] * size for _ in range(n1 + 1)]
        new[0][0] = 1
        for m in range(1, n1 + 1):
            prev_same, prev_less = f[m], new[m - 1]
            row = new[m]
            for u in range(size):
                # the last of the m + j values is a y (U unchanged) or
                # an x above all j y-values (U + j)
                v = prev_same[u]
                if u >= j:
                    v += prev_less[u - j]
                row[u] = v
        f = new
    return tuple(f[n1])


def _u_cdf(n1: int, n2: int, u: float) -> float:
    """P(U <= u) under the null, exact (no ties)."""
    counts = _u_counts(n1, n2)
    top = math.floor(u + 1e-9)
    if top < 0:
        return 0.0
    return sum(counts[:top + 1]) / math.comb(n1 + n2, n1)


def _normal_sf(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2))


def normal_quantile(p: float) -> float:
    """The standard normal's quantile (the standard library's)."""
    if not 0 < p < 1:
        raise ValueError(f'a probability strictly between 0 and 1: {p}')
    return statistics.NormalDist().inv_cdf(p)


def mann_whitney_p(x: Sequence[float], y: Sequence[float],
                   exact: bool | None = None) -> float:
    """The two-sided p of Mann-Whitney's U test of ``x`` against ``y``.

    ``exact`` None: exact when there are no ties and both sides hold at
    most EXACT_MAX values, else the normal approximation with the tie
    correction and the continuity correction (scipy.stats.mannwhitneyu's
    method 'exact' and 'asymptotic', use_continuity=True)."""
    n1, n2 = len(x), len(y)
    if not n1 or not n2:
        raise ValueError('the U test needs values on both sides')
    values = list(x) + list(y)
    ranks, ties = _ranks(values)
    u = sum(ranks[:n1]) - n1 * (n1 + 1) / 2
    tied = any(t > 1 for t in ties)
    if exact is None:
        exact = not tied and max(n1, n2) <= EXACT_MAX
    if exact:
        # symmetric distribution: the tail of the larger of U and n1n2-U
        big = max(u, n1 * n2 - u)
        p = 2 * (1 - _u_cdf(n1, n2, big - 1))
        return min(1.0, p)
    n = n1 + n2
    mu = n1 * n2 / 2
    var = n1 * n2 / 12 * ((n + 1) - sum(t ** 3 - t for t in ties)
                          / (n * (n - 1)))
    if var <= 0:
        return 1.0
    big = max(u, n1 * n2 - u)
    z = (big - mu - 0.5) / math.sqrt(var)
    return min(1.0, 2 * _normal_sf(z))


def p_floor(n1: int, n2: int) -> float:
    """The smallest two-sided p Mann-Whitney's test can give with n1 and
    n2 values: every x above every y, 2 / C(n1 + n2, n1)."""
    return min(1.0, 2 / math.comb(n1 + n2, n1))


def samples_needed(confidence: float) -> int:
    """The fewest values per side for a gate at ``confidence``: U's floor
    on p at or below 1 - confidence, and an order-statistic interval of a
    median (2 x 0.5^n <= 1 - confidence) that is finite (benchstat's
    ``medianSamples``: 6 for 95 %)."""
    alpha = 1 - confidence
    n = 1
    while p_floor(n, n) > alpha or 2 * 0.5 ** n > alpha:
        n += 1
    return n


def hodges_lehmann(x: Sequence[float], y: Sequence[float]) -> float:
    """The Hodges-Lehmann shift of ``x`` against ``y``: the median of the
    pairwise differences xi - yj."""
    return median([a - b for a in x for b in y])


def hodges_lehmann_interval(x: Sequence[float], y: Sequence[float],
                            confidence: float
                            ) -> tuple[float, float] | None:
    """The Mann-Whitney interval of the shift: the k-th smallest and k-th
    largest pairwise difference, k from U's exact distribution (no ties,
    up to EXACT_MAX a side) or its normal approximation; None when the
    samples cannot reach ``confidence`` (U's floor)."""
    n1, n2 = len(x), len(y)
    alpha = 1 - confidence
    diffs = sorted(a - b for a in x for b in y)
    _, ties = _ranks(list(x) + list(y))
    if max(n1, n2) <= EXACT_MAX and all(t == 1 for t in ties):
        # the largest k with P(U <= k - 1) <= alpha / 2
        k = 0
        while _u_cdf(n1, n2, k) <= alpha / 2:
            k += 1
    else:
        z = normal_quantile(1 - alpha / 2)
        k = math.floor(n1 * n2 / 2 - z * math.sqrt(
            n1 * n2 * (n1 + n2 + 1) / 12))
    if k < 1:
        return None
    return diffs[k - 1], diffs[n1 * n2 - k]


def _binom_pmf(k: int, n: int, p: float) -> float:
    if p <= 0:
        return 1.0 if k == 0 else 0.0
    if p >= 1:
        return 1.0 if k == n else 0.0
    if k < 0 or k > n:
        return 0.0
    return math.exp(math.lgamma(n + 1) - math.lgamma(k + 1)
                    - math.lgamma(n - k + 1) + k * math.log(p)
                    + (n - k) * math.log1p(-p))


def _binom_sf(k: int, n: int, p: float) -> float:
    """P(Binom(n, p) >= k)."""
    return sum(_binom_pmf(i, n, p) for i in range(max(k, 0), n + 1))


# probabilities below this are left out of a median table: a value drawn
# less than once in 10^9 resamples (the table is renormalised)
_NEGLIGIBLE = 1e-9


@functools.lru_cache(maxsize=64)
def median_table(n: int) -> tuple[tuple[tuple[int, int], ...],
                                  tuple[float, ...]]:
    """The exact distribution of the median of a bootstrap resample of n
    sorted values: the order-statistic pairs (i, j), 0-based (i == j for
    odd n), and their cumulative probabilities."""
    if n < 1:
        raise ValueError('a median table needs a value')
    pairs: list[tuple[int, int]] = []
    probs: list[float] = []
    if n % 2:
        m = (n + 1) // 2
        below = 0.0
        for i in range(1, n + 1):
            at_or_below = _binom_sf(m, n, i / n)
            if at_or_below - below > _NEGLIGIBLE:
                pairs.append((i - 1, i - 1))
                probs.append(at_or_below - below)
            below = at_or_below
    else:
        k = n // 2
        for i in range(1, n + 1):
            # N: the draws at positions 1..i-1 (a < k of them); c: those
            # at position i, Binom(n - a, 1 / (n - i + 1))
            both = exact_k = 0.0
            q = 1 / (n - i + 1)
            for a in range(k):
                w = _binom_pmf(a, n, (i - 1) / n)
                if w < _NEGLIGIBLE:
                    continue
                both += w * _binom_sf(k + 1 - a, n - a, q)
                exact_k += w * _binom_pmf(k - a, n - a, q)
            if both > _NEGLIGIBLE:
                pairs.append((i - 1, i - 1))
                probs.append(both)
            rest = n - i
            if exact_k <= _NEGLIGIBLE or rest == 0:
                continue
            # the other n - k draws fall above i, uniformly: the first of
            # them is at i + d
            for d in range(1, rest + 1):
                p = exact_k * (((rest - d + 1) / rest) ** (n - k)
                               - ((rest - d) / rest) ** (n - k))
                if p > _NEGLIGIBLE:
                    pairs.append((i - 1, i - 1 + d))
                    probs.append(p)
    total = 0.0
    cumulative = []
    for p in probs:
        total += p
        cumulative.append(total)
    return tuple(pairs), tuple(c / total for c in cumulative)


_HALF = 0.5


@functools.lru_cache(maxsize=64)
def _pair_getters(n: int) -> tuple[Callable[[Sequence[float]], Any],
                                   Callable[[Sequence[float]], Any]]:
    """itemgetters of the first and the second order statistic of each
    entry of median_table(n)."""
    pairs, _ = median_table(n)
    if len(pairs) == 1:
        # an itemgetter of one index returns the item, not a tuple
        (i, j), = pairs
        return (lambda s: (s[i],)), (lambda s: (s[j],))
    return (operator.itemgetter(*(i for i, _ in pairs)),
            operator.itemgetter(*(j for _, j in pairs)))


def _support(xs: Sequence[float]) -> list[float]:
    """log of each value a resample's median of ``xs`` can take, in the
    order of median_table(len(xs))."""
    s = sorted(xs)
    first, second = _pair_getters(len(s))
    return list(map(math.log, map(_HALF.__mul__,
                                  map(operator.add, first(s), second(s)))))


@functools.lru_cache(maxsize=32)
def _draws(sizes: tuple[int, ...], resamples: int, seed: int
           ) -> tuple[Callable[[Sequence[float]], tuple[float, ...]], ...]:
    """Per sample size, ``resamples`` positions in its median table,
    drawn with its probabilities from ``random.Random(seed)``, as
    itemgetters: the draws depend on the sizes and the seed only, so
    they are made once and every record of those sizes reuses them
    (common random numbers: each record's interval is still its own
    bootstrap; only the Monte Carlo noise is shared)."""
    rng = random.Random(seed)
    out = []
    for n in sizes:
        pairs, cumulative = median_table(n)
        picks = rng.choices(range(len(pairs)), cum_weights=cumulative,
                            k=resamples)
        out.append(operator.itemgetter(*picks))
    return tuple(out)


def bootstrap_log_medians(xs: Sequence[float], draws: int,
                          rng: random.Random) -> list[float]:
    """``draws`` bootstrap replicates of log(median(xs)), drawn from the
    exact distribution of a resample's median (median_table)."""
    _, cumulative = median_table(len(xs))
    return rng.choices(_support(xs), cum_weights=cumulative, k=draws)


def did_ratio(canary_before: Sequence[float],
              canary_after: Sequence[float],
              control_before: Sequence[float],
              control_after: Sequence[float]) -> float:
    """(median canary after / median canary before) / (median control
    after / median control before)."""
    return ((median(canary_after) / median(canary_before))
            / (median(control_after) / median(control_before)))


def did_interval(canary_before: Sequence[float],
                 canary_after: Sequence[float],
                 control_before: Sequence[float],
                 control_after: Sequence[float], confidence: float,
                 resamples: int = 2000, seed: int = 0
                 ) -> tuple[float, float]:
    """The percentile bootstrap interval of did_ratio at ``confidence``:
    each of the four samples resampled on its own, ``resamples`` times,
    from ``random.Random(seed)`` (the same samples and seed, the same
    interval; the draws are shared by every call with the same sizes and
    seed, _draws). Every value must be positive."""
    for xs in (canary_before, canary_after, control_before, control_after):
        if not xs:
            raise ValueError('a sample without values')
        if min(xs) <= 0:
            raise ValueError('a ratio of medians needs positive values')
    if resamples < 2:
        raise ValueError('a bootstrap needs at least 2 resamples')
    groups = (canary_after, canary_before, control_before, control_after)
    getters = _draws(tuple(len(g) for g in groups), resamples, seed)
    ca, cb, tb, ta = (get(_support(g)) for get, g in zip(getters, groups))
    # log DiD = (log ca - log cb) - (log ta - log tb)
    logs = sorted(map(operator.sub, map(operator.sub, ca, cb),
                      map(operator.sub, ta, tb)))
    alpha = 1 - confidence
    lo = max(0, math.floor(alpha / 2 * resamples))
    hi = min(resamples - 1, math.ceil((1 - alpha / 2) * resamples) - 1)
    return math.exp(logs[lo]), math.exp(logs[hi])
