"""The sanity check (``audit``): estimates against exact values, interval coverage,
the controls and the argument checks; and the pairs that the audits share.

The (epsilon, delta) audits are tested in ``test_auditing_delta.py``, the audits to a
target width in ``test_auditing_width.py``.
"""

import math

import jax
import numpy as np
import pytest
from scipy import stats

from mcdp import (
    MAJORITY_VOTE,
    audit,
    count_outcomes,
    exact_e2,
    get_mechanism,
    loss_estimate,
)
from mcdp.mechanisms import NAN_POLICIES
from mcdp.pairs import make_pair

from conftest import FAIL_PROB, SEED, Z, binomial_region

CELLS = [
    # (mechanism, epsilon, d, draws): the last two have rare events
    ("laplace", 1.0, 8, 200_000),
    ("laplace", 0.1, 32, 100_000),
    ("adept", 1.0, 2, 200_000),
    ("adept", 0.5, 32, 100_000),
    ("adept-l1", 2.0, 8, 100_000),
    ("adept-true-sensitivity", 1.0, 8, 100_000),
    ("adept", 10.0, 1, 2_000_000),  # P[guess 1 | D] = e^-5 / 2 = 3.4e-3
    ("adept", 5.0, 8, 10_000_000),  # P[guess 1 | D] = 6.6e-6: below 1e-4
]


@pytest.mark.parametrize("name,epsilon,d,draws", CELLS)
def test_estimate_matches_exact(name, epsilon, d, draws):
    result = audit(name, epsilon, d, draws, seed=SEED)
    p, q = result.exact_guess1
    # each count of guess 1 inside its binomial region at FAIL_PROB, from the exact
    # tails: the rarest cell expects ~59 hits, where Z standard errors would allow
    # false alarms with probability 1.5e-4
    for row, exact in zip(result.counts, (p, q), strict=True):
        low, high = binomial_region(draws, exact)
        assert low <= row[1] <= high, (row, exact, low, high)
    # and the exact loss inside the interval at confidence 1 - FAIL_PROB (the 95 %
    # interval of the audit misses 5 % of the time: its coverage is tested below)
    wide = loss_estimate(result.counts, 1 - FAIL_PROB)
    assert wide.lower <= result.exact <= wide.upper


def test_rare_event_below_1e4_is_estimated_with_its_counts():
    result = audit("adept", 5.0, 8, 10_000_000, seed=SEED)
    p = result.exact_guess1[0]
    assert p < 1e-4
    expected = p * result.draws
    observed = result.counts[0][1]
    lo, hi = stats.poisson.ppf([FAIL_PROB / 2, 1 - FAIL_PROB / 2], expected)
    assert lo <= observed <= hi
    assert result.violated  # ADePT's claim of 5-DP fails: the loss is ~12


def test_interval_coverage_over_repeated_seeds():
    """R independent runs; the exact loss falls outside the 95 % interval in at most
    as many runs as a binomial(R, 5 %) allows (the intervals are conservative, so the
    check is one-sided), and the intervals are not vacuous: they are at most 1.6x
    as wide as the normal-approximation interval."""
    m = get_mechanism("adept")
    epsilon, d, draws, runs, confidence = 1.0, 2, 4000, 300, 0.95
    params = m.calibrate_sanity_check(epsilon, d)
    exact = exact_e2(m, params, d)
    xs = np.stack([np.zeros(d), np.ones(d)])
    root = jax.random.key(SEED)
    misses, widths = 0, []
    for r in range(runs):
        counts = count_outcomes(
            jax.random.fold_in(root, r), m, MAJORITY_VOTE, xs, params, draws
        )
        est = loss_estimate(counts.tolist(), confidence)
        misses += not est.lower <= exact.loss <= est.upper
        widths.append(est.upper - est.lower)
    assert misses <= stats.binom.isf(FAIL_PROB, runs, 1 - confidence)
    # delta-method width of the dominant term ln(p'/p), both rows at 1 - alpha/2
    p, q = exact.p1, exact.q1
    sd = math.sqrt((1 - p) / (draws * p) + (1 - q) / (draws * q))
    normal_width = 2 * stats.norm.isf((1 - confidence) / 4) * sd
    assert np.median(widths) <= 1.6 * normal_width


def test_none_has_infinite_loss_with_finite_lower_bound():
    result = audit("none", 1.0, 8, 100_000)
    assert result.counts == [[100_000, 0], [0, 100_000]]
    assert result.loss == math.inf and result.exact == math.inf
    assert 9 < result.loss_lower < math.inf and result.violated is None


@pytest.mark.parametrize("d", [1, 8, 64])
def test_random_is_compatible_with_zero_loss(d):
    """p = p' = 1/2: the lower bound is 0 unless a row's interval misses 1/2, which
    an interval at confidence 1 - FAIL_PROB does with probability <= FAIL_PROB."""
    result = audit("random", 1.0, d, 200_000, seed=SEED, confidence=1 - FAIL_PROB)
    assert result.exact == 0.0
    assert result.loss_lower == 0.0  # the intervals of the two rows overlap
    assert result.violated is False


@pytest.mark.parametrize("d", [2, 8])
@pytest.mark.parametrize("policy", NAN_POLICIES)
def test_dptext_infinite_under_every_policy(policy, d):
    result = audit("dptext", 1.0, d, 100_000, nan_policy=policy, seed=SEED)
    assert result.counts[1] == [0, 100_000]  # D' is always recognised
    assert result.loss == math.inf and result.exact == math.inf
    if d == 2:
        # at d = 8 the "nan" policy guesses 0 under D with probability ~5e-5, too
        # rarely for 1e5 draws to prove the violation; at d = 2 every policy is caught
        assert result.violated and result.loss_lower > 1.0


def test_float32_runs_and_agrees_at_moderate_probabilities():
    result = audit("laplace", 1.0, 8, 200_000, seed=SEED, dtype="float32")
    assert not result.x64
    for rate, exact in zip(result.guess1_rate, result.exact_guess1, strict=True):
        assert abs(rate - exact) <= Z * math.sqrt(exact * (1 - exact) / result.draws)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"epsilon": 0.0}, "epsilon > 0"),
        ({"epsilon": math.nan}, "epsilon > 0"),
        ({"epsilon": math.inf}, "epsilon > 0"),
        ({"dim": 0}, "dim"),
        ({"dim": 2.5}, "dim"),
        ({"draws": 0}, "draws"),
        ({"draws": 1.5}, "draws"),
        ({"confidence": 1.0}, "confidence"),
        ({"confidence": 0.0}, "confidence"),
        ({"mechanism": "nope"}, "adept, adept-l1"),
        ({"nan_policy": "drop", "mechanism": "dptext"}, "nan, resample, zero"),
        ({"nan_policy": "zero"}, "only to mechanisms with NaN policies"),
        ({"dtype": "float16"}, "float32, float64"),
    ],
)
def test_api_errors_name_the_argument(kwargs, match):
    args = {"mechanism": "laplace", "epsilon": 1.0, "dim": 2, "draws": 100} | kwargs
    with pytest.raises(ValueError, match=match):
        audit(**args)


# --- the pairs of inputs -------------------------------------------------------------


@pytest.mark.parametrize("dim", [1, 2, 7, 300])
@pytest.mark.parametrize("clip", [0.5, 1.0, 3.0])
def test_make_pair_geometry(dim, clip):
    axis = make_pair("axis", dim, clip)
    assert axis.shape == (2, dim)
    np.testing.assert_allclose(np.linalg.norm(axis, axis=1), clip)
    assert np.linalg.norm(axis[0] - axis[1]) == pytest.approx(2 * clip)
    assert np.count_nonzero(axis[0] - axis[1]) == 1
    diagonal = make_pair("diagonal", dim, clip)
    assert diagonal.shape == (2, dim)
    np.testing.assert_allclose(np.linalg.norm(diagonal, axis=1), clip)
    gap = diagonal[0] - diagonal[1]
    assert np.abs(gap).sum() == pytest.approx(2 * clip * math.sqrt(dim))
    assert np.linalg.norm(gap) == pytest.approx(2 * clip)
    zo = make_pair("zeros-ones", dim, clip)
    np.testing.assert_array_equal(zo, np.stack([np.zeros(dim), np.ones(dim)]))


@pytest.mark.parametrize(
    "args, match",
    [
        (("square", 3), "pair"),
        (("axis", 0), "dim"),
        (("axis", 2.5), "dim"),
        (("axis", 3, 0.0), "clip"),
        (("axis", 3, -1.0), "clip"),
    ],
)
def test_make_pair_rejects_bad_input(args, match):
    with pytest.raises(ValueError, match=match) as info:
        make_pair(*args)
    assert "\n" not in str(info.value)
