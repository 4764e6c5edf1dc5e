"""kvmtune.stats against known values, scipy.stats' own figures
(tests/fixtures/canary/scipy_reference.json, made by scipy with the script
beside it) and coverage on seeded synthetic data."""

import collections
import itertools
import json
import math
import os
import random

import pytest

from kvmtune import stats
from tests import paths

REFERENCE = os.path.join(paths.FIXTURES, 'canary', 'scipy_reference.json')


def _reference():
    with open(REFERENCE) as f:
        return json.load(f)['cases']


@pytest.mark.parametrize('n, floor', [(3, 0.1), (4, 0.0286), (5, 0.0079)])
def test_the_u_test_floors_on_p(n, floor):
    assert stats.p_floor(n, n) == pytest.approx(floor, abs=5e-5)
    # the floor is what perfectly separated samples give
    x = [float(i) for i in range(n)]
    y = [float(i + n) for i in range(n)]
    assert stats.mann_whitney_p(x, y) == pytest.approx(stats.p_floor(n, n))
    assert stats.mann_whitney_p(y, x) == pytest.approx(stats.p_floor(n, n))


def test_three_per_side_never_reach_five_percent():
    rng = random.Random(1)
    for _ in range(200):
        x = [rng.gauss(0, 1) for _ in range(3)]
        y = [rng.gauss(5, 1) for _ in range(3)]
        assert stats.mann_whitney_p(x, y) >= 0.1 - 1e-12


@pytest.mark.parametrize('confidence, n', [(0.90, 5), (0.95, 6),
                                           (0.98, 7), (0.99, 8)])
def test_samples_needed(confidence, n):
    assert stats.samples_needed(confidence) == n
    alpha = 1 - confidence
    assert stats.p_floor(n, n) <= alpha
    assert (stats.p_floor(n - 1, n - 1) > alpha
            or 2 * 0.5 ** (n - 1) > alpha)


@pytest.mark.parametrize('case', _reference(),
                         ids=lambda c: f"{len(c['x'])}x{len(c['y'])}")
def test_against_scipy(case):
    x, y = case['x'], case['y']
    assert stats.mann_whitney_u(x, y) == pytest.approx(case['u'])
    assert stats.mann_whitney_p(x, y, exact=False) == pytest.approx(
        case['asymptotic'], rel=1e-9, abs=1e-12)
    if 'exact' in case:
        assert stats.mann_whitney_p(x, y, exact=True) == pytest.approx(
            case['exact'], rel=1e-9, abs=1e-12)
    assert stats.hodges_lehmann(x, y) == pytest.approx(case['hl_numpy'])


def test_the_reference_holds_exact_and_tied_cases():
    cases = _reference()
    assert sum('exact' in c for c in cases) >= 20
    assert sum('exact' not in c for c in cases) >= 5


def test_the_exact_p_is_not_the_normal_one_for_small_samples():
    """A check that can fail: the two methods differ at 4 per side."""
    x, y = [1.0, 2.0, 3.0, 5.0], [4.0, 6.0, 7.0, 8.0]
    assert stats.mann_whitney_p(x, y, exact=True) != pytest.approx(
        stats.mann_whitney_p(x, y, exact=False), rel=1e-3)


@pytest.mark.parametrize('n', range(1, 7))
def test_the_median_table_is_the_enumerated_bootstrap(n):
    xs = [float(2 ** i) for i in range(n)]  # every mean of two distinct
    counts = collections.Counter(
        stats.median([xs[i] for i in t])
        for t in itertools.product(range(n), repeat=n))
    pairs, cumulative = stats.median_table(n)
    probs = [b - a for a, b in zip((0.0,) + cumulative, cumulative)]
    table = collections.Counter()
    for (i, j), p in zip(pairs, probs):
        table[(xs[i] + xs[j]) / 2] += p
    assert set(table) == set(counts)
    for value, count in counts.items():
        assert table[value] == pytest.approx(count / n ** n, abs=1e-12)


def test_the_median_table_sums_to_one_for_larger_samples():
    for n in (29, 30, 60):
        _, cumulative = stats.median_table(n)
        assert cumulative[-1] == pytest.approx(1.0)
        assert list(cumulative) == sorted(cumulative)


def _lognormal(rng, m, n, sigma=0.1):
    return [m * math.exp(rng.gauss(0, sigma)) for _ in range(n)]


@pytest.mark.parametrize('n', [6, 15, 30])
def test_the_did_interval_covers_the_true_ratio(n):
    """At least ~93 % of nominal-95 % intervals hold the true ratio over
    300 seeded trials (canary +10 %, control -5 % drift)."""
    rng = random.Random(48)
    true = (110 / 100) / (190 / 200)
    hits = 0
    for trial in range(300):
        lo, hi = stats.did_interval(
            _lognormal(rng, 100, n), _lognormal(rng, 110, n),
            _lognormal(rng, 200, n), _lognormal(rng, 190, n),
            0.95, resamples=1000, seed=trial)
        hits += lo <= true <= hi
    assert hits / 300 >= 0.93


def test_the_hodges_lehmann_interval_covers_the_shift():
    rng = random.Random(5)
    hits = 0
    for _ in range(300):
        x = [rng.gauss(1, 1) for _ in range(8)]
        y = [rng.gauss(0, 1) for _ in range(9)]
        lo, hi = stats.hodges_lehmann_interval(x, y, 0.95)
        hits += lo <= 1 <= hi
    assert hits / 300 >= 0.93


def test_the_hodges_lehmann_interval_needs_enough_samples():
    assert stats.hodges_lehmann_interval([1, 2, 3], [4, 5, 6], 0.95) is None
    lo, hi = stats.hodges_lehmann_interval([1, 2, 3, 4], [5, 6, 7, 8], 0.95)
    assert (lo, hi) == (-7, -1)


def test_a_drift_on_both_sides_leaves_the_ratio_at_one():
    rng = random.Random(2)
    before = _lognormal(rng, 100, 20)
    control = _lognormal(rng, 90, 20)
    drift = 0.7
    ratio = stats.did_ratio(before, [v * drift for v in before],
                            control, [v * drift for v in control])
    assert ratio == pytest.approx(1.0)
    lo, hi = stats.did_interval(before, [v * drift for v in before],
                                control, [v * drift for v in control], 0.95)
    assert lo <= 1 <= hi


def test_the_did_interval_is_seeded():
    rng = random.Random(3)
    groups = [_lognormal(rng, 100, 10) for _ in range(4)]
    assert (stats.did_interval(*groups, 0.95, seed=4)
            == stats.did_interval(*groups, 0.95, seed=4))
    assert (stats.did_interval(*groups, 0.95, seed=4)
            != stats.did_interval(*groups, 0.95, seed=5))


def test_the_did_interval_refuses_what_it_cannot_take():
    with pytest.raises(ValueError, match='positive'):
        stats.did_interval([1, 0], [1, 2], [1, 2], [1, 2], 0.95)
    with pytest.raises(ValueError, match='without values'):
        stats.did_interval([], [1, 2], [1, 2], [1, 2], 0.95)


def test_median_mad_and_robust_z():
    assert stats.median([3, 1, 2]) == 2
    assert stats.median([4, 1, 2, 3]) == 2.5
    assert stats.mad([1, 2, 3, 4, 100]) == 1
    z = stats.robust_z([10, 10.5, 9.5, 10.2, 9.8, 20])
    assert abs(z[-1]) > stats.OUTLIER_Z
    assert all(abs(v) < stats.OUTLIER_Z for v in z[:-1])
    assert stats.robust_z([5, 5, 5, 6]) == [0, 0, 0, math.inf]
    with pytest.raises(ValueError):
        stats.median([])


@pytest.mark.parametrize('p, z', [(0.975, 1.959963984540054),
                                  (0.5, 0.0), (0.01, -2.326347874040841),
                                  (0.999, 3.090232306167813)])
def test_normal_quantile(p, z):
    assert stats.normal_quantile(p) == pytest.approx(z, abs=1e-9)


def test_the_did_interval_is_the_plain_bootstrap():
    """Against the textbook bootstrap (resample each group, take the
    medians, sort the ratios): the same interval within Monte Carlo
    noise."""
    rng = random.Random(11)
    groups = [_lognormal(rng, m, n, 0.1) for m, n in
              ((100, 12), (110, 13), (200, 12), (190, 14))]
    plain = []
    for _ in range(4000):
        cb, ca, tb, ta = (stats.median(rng.choices(g, k=len(g)))
                          for g in groups)
        plain.append((ca / cb) / (ta / tb))
    plain.sort()
    lo, hi = stats.did_interval(*groups, 0.95, resamples=4000)
    assert lo == pytest.approx(plain[100], rel=0.015)
    assert hi == pytest.approx(plain[3899], rel=0.015)
    # and not the interval of other data: the check can fail
    other = stats.did_interval(groups[0], groups[1], groups[2],
                               [v * 1.05 for v in groups[3]], 0.95,
                               resamples=4000)
    assert other[0] != pytest.approx(plain[100], rel=0.015)


def test_normal_quantile_refuses_what_is_not_a_probability():
    for p in (0, 1, -0.5):
        with pytest.raises(ValueError):
            stats.normal_quantile(p)
