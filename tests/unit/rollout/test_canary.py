"""The canary gate's judge: pass, fail and inconclusive on seeded sample
sets; a drift on both hosts does not fail it; three a side never pass."""

import math
import random

import pytest

from kvmtune.rollout import canary
from kvmtune.tuning.measure import parse_band


def _sample(rng, median, n, sigma=0.05):
    return [median * math.exp(rng.gauss(0, sigma)) for _ in range(n)]


def samples(seed, n, canary_change, control_change=1.0, drift=1.0,
            sigma=0.05):
    """Canary and control at 1000 and 800 before; after, each moved by
    its change, both by ``drift``."""
    rng = random.Random(seed)
    return {'canary': {'before': _sample(rng, 1000, n, sigma),
                       'after': _sample(rng, 1000 * canary_change * drift,
                                        n, sigma)},
            'control': {'before': _sample(rng, 800, n, sigma),
                        'after': _sample(rng, 800 * control_change * drift,
                                         n, sigma)}}


BAND = parse_band('>= -5%')


def test_a_clear_gain_passes():
    out = canary.judge(samples(1, 20, 1.15), BAND, 0.95, seed=1)
    assert out['verdict'] == 'pass'
    low, high = out['interval']
    assert 0.95 <= low <= out['estimate'] <= high
    assert out['estimate'] == pytest.approx(1.15, abs=0.05)
    assert 'lies within >= -5%' in out['reason']
    assert out['p_canary'] < 0.001


def test_a_clear_loss_fails():
    out = canary.judge(samples(2, 20, 0.80), BAND, 0.95, seed=2)
    assert out['verdict'] == 'fail'
    assert out['interval'][1] < 0.95
    assert 'outside >= -5%' in out['reason']


def test_noise_on_the_edge_is_inconclusive():
    out = canary.judge(samples(3, 8, 0.95, sigma=0.15), BAND, 0.95, seed=3)
    assert out['verdict'] == 'inconclusive'
    low, high = out['interval']
    assert low < 0.95 < high
    assert '--accept' in out['reason']


@pytest.mark.parametrize('drift', [0.6, 0.8, 1.3])
def test_a_drift_on_both_hosts_does_not_fail_the_gate(drift):
    """Both hosts slower (or faster) after, the canary unchanged against
    its control: never fail; with 30 a side of 2 % noise, pass."""
    for seed in range(20):
        noisy = canary.judge(samples(seed, 30, 1.0, drift=drift), BAND,
                             0.95, seed=seed)
        assert noisy['verdict'] != 'fail', noisy['reason']
        assert noisy['estimate'] == pytest.approx(1.0, abs=0.08)
        quiet = canary.judge(samples(seed, 30, 1.0, drift=drift, sigma=0.02),
                             BAND, 0.95, seed=seed)
        assert quiet['verdict'] == 'pass', quiet['reason']


def test_the_same_drift_on_the_canary_alone_would_fail():
    """The check can fail: without the control's drift the canary's
    before/after is judged a loss."""
    out = canary.judge(samples(4, 30, 0.8), BAND, 0.95, seed=4)
    assert out['verdict'] == 'fail'


@pytest.mark.parametrize('n', [1, 3, 5])
def test_three_a_side_never_pass(n):
    for seed in range(30):
        out = canary.judge(samples(seed, n, 2.0), BAND, 0.95, seed=seed)
        assert out['verdict'] == 'refused'
        assert 'at least 6 values' in out['reason']
        assert out['interval'] is None


def test_the_floor_is_named():
    out = canary.judge(samples(0, 3, 2.0), BAND, 0.95)
    assert "smallest p with 3 a side is 0.1" in out['reason']


def test_a_value_that_is_not_positive_is_an_error():
    data = samples(5, 10, 1.1)
    data['control']['after'][3] = 0.0
    out = canary.judge(data, BAND, 0.95)
    assert out['verdict'] == 'error'
    assert 'control after holds 0.0' in out['reason']


def test_a_latency_band():
    band = parse_band('<= +5%')
    assert canary.judge(samples(6, 20, 0.9), band, 0.95)['verdict'] == \
        'pass'
    assert canary.judge(samples(7, 20, 1.2), band, 0.95)['verdict'] == \
        'fail'


def test_worst():
    assert canary.worst(['pass', 'inconclusive', 'pass']) == 'inconclusive'
    assert canary.worst(['pass', 'fail', 'error']) == 'fail'
    assert canary.worst([]) == 'pending'
    assert canary.worst(['pass']) == 'pass'


def test_the_same_samples_give_the_same_record():
    data = samples(8, 12, 1.05)
    assert canary.judge(data, BAND, 0.95, seed=9) == \
        canary.judge(data, BAND, 0.95, seed=9)
