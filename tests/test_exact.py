"""Exact references: the majority vote's probabilities (``exact_e2``) against the
binomial law, enumeration and closed forms; the (epsilon, delta) profiles
(``gaussian_delta``, ``laplace_delta``, ``exact_delta``) against dp_accounting."""

import itertools
import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_mechanism
from scipy import special, stats

from mcdp.exact import (
    exact_delta,
    exact_e2,
    gaussian_delta,
    laplace_delta,
    log_majority,
)
from mcdp.mechanisms import (
    MECHANISMS,
    NAN_POLICIES,
    GaussianParams,
    LaplaceParams,
    get_mechanism,
    trlaplace_params,
)
from mcdp.pairs import make_pair


@pytest.mark.parametrize("d", [1, 2, 7, 8, 32])
@pytest.mark.parametrize("q", [0.01, 0.3, 0.5, 0.9])
def test_log_majority_matches_binomial(d, q):
    up, down = log_majority(np.full(d, math.log(q)), np.full(d, math.log1p(-q)))
    k = d // 2  # guess 1 iff K > d/2, i.e. K >= floor(d/2) + 1
    assert math.exp(up) == pytest.approx(stats.binom.sf(k, d, q), rel=1e-10, abs=1e-300)
    assert math.exp(down) == pytest.approx(stats.binom.cdf(k, d, q), rel=1e-10)


def test_log_majority_matches_enumeration_for_unequal_probabilities():
    q = np.array([0.1, 0.5, 0.7, 0.2, 0.95, 0.33])
    total = 0.0
    for bits in itertools.product([0, 1], repeat=q.size):
        bits = np.array(bits)
        if 2 * bits.sum() > q.size:
            total += np.prod(np.where(bits, q, 1 - q))
    up, _ = log_majority(np.log(q), np.log1p(-q))
    assert math.exp(up) == pytest.approx(total, rel=1e-12)


def test_log_majority_stays_finite_below_double_underflow():
    d, log_q = 128, -30.0  # P[K > 64] ~ C(128, 65) e^{-1950}: far below 1e-308
    up, down = log_majority(np.full(d, log_q), np.full(d, math.log1p(-math.exp(log_q))))
    leading = (
        special.gammaln(d + 1) - special.gammaln(66) - special.gammaln(64) + 65 * log_q
    )
    assert math.isfinite(up) and up == pytest.approx(leading, rel=1e-9)
    assert down == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 10.0])
def test_laplace_d1_closed_form(epsilon):
    """d = 1, b = 1/epsilon: p = P[eta >= 1/2] = e^{-eps/2}/2, p' = 1 - p."""
    m = get_mechanism("laplace")
    exact = exact_e2(m, m.calibrate_sanity_check(epsilon, 1), 1)
    p = 0.5 * math.exp(-epsilon / 2)
    assert exact.p1 == pytest.approx(p, rel=1e-12)
    assert exact.q1 == pytest.approx(1 - p, rel=1e-12)
    assert exact.loss == pytest.approx(math.log((1 - p) / p), rel=1e-12)
    assert exact.loss <= epsilon  # the attack cannot beat the guarantee


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 10.0])
@pytest.mark.parametrize("d", [1, 2, 8, 32, 128])
def test_correct_mechanisms_stay_within_epsilon(epsilon, d):
    for name in ("laplace", "adept-l1", "adept-true-sensitivity"):
        m = get_mechanism(name)
        assert exact_e2(m, m.calibrate_sanity_check(epsilon, d), d).loss <= epsilon * (
            1 + 1e-12
        )


def test_adept_exceeds_epsilon_for_d_above_1():
    m = get_mechanism("adept")
    for d in (2, 8, 32):
        assert exact_e2(m, m.calibrate_sanity_check(1.0, d), d).loss > 1.0


def test_adept_e2_rare_event_stays_finite():
    m = get_mechanism("adept")
    exact = exact_e2(m, m.calibrate_sanity_check(10.0, 128), 128)
    assert exact.p1 < 1e-120  # 65 of 128 coordinates above 1/2 under D: never seen
    assert math.isfinite(exact.loss) and exact.loss == pytest.approx(-exact.log_p1)


def test_controls():
    none, rand = get_mechanism("none"), get_mechanism("random")
    assert exact_e2(none, none.calibrate_sanity_check(1.0, 8), 8).loss == math.inf
    assert exact_e2(rand, rand.calibrate_sanity_check(1.0, 8), 8).loss == 0.0


@pytest.mark.parametrize("policy", NAN_POLICIES)
def test_dptext_is_infinite_under_every_policy(policy):
    m = get_mechanism("dptext")
    for d in (1, 8, 128):
        exact = exact_e2(m, m.calibrate_sanity_check(1.0, d, nan_policy=policy), d)
        assert exact.loss == math.inf
        assert exact.q1 == 1.0  # D' = 1^d is always guessed as 1


def test_every_registered_mechanism_has_an_exact_reference():
    # every mechanism that the sanity check can calibrate (the suite's cannot:
    # 0^d and 1^d are not neighbours under their relations)
    for m in MECHANISMS.values():
        if m.calibrate_sanity_check is not None:
            assert exact_e2(m, m.calibrate_sanity_check(1.0, 4), 4) is not None
    assert sum(m.calibrate_sanity_check is not None for m in MECHANISMS.values()) == 9


# --- exact (epsilon, delta) profiles against dp_accounting -----------------------

EPSILONS = [0.0, 0.05, 0.3, 1.0, 2.0, 5.0, 10.0, 20.0]
GAUSSIAN = get_mechanism("gaussian")
LAPLACE = get_mechanism("laplace")
TRLAPLACE = get_mechanism("trlaplace")


@pytest.mark.parametrize(
    "sigma, distance", list(itertools.product([0.3, 1.0, 4.0, 20.0], [0.1, 1.0, 2.0]))
)
def test_gaussian_delta_matches_dp_accounting(sigma, distance):
    oracle = privacy_loss_mechanism.GaussianPrivacyLoss(
        standard_deviation=sigma, sensitivity=distance
    )
    for eps in EPSILONS:
        want = oracle.get_delta_for_epsilon(eps)
        assert gaussian_delta(eps, sigma, distance) == pytest.approx(
            want, rel=1e-9, abs=1e-15
        )


@pytest.mark.parametrize(
    "scale, distance", list(itertools.product([0.3, 1.0, 4.0], [0.1, 1.0, 2.0, 5.0]))
)
def test_laplace_delta_matches_dp_accounting(scale, distance):
    oracle = privacy_loss_mechanism.LaplacePrivacyLoss(
        parameter=scale, sensitivity=distance
    )
    for eps in EPSILONS:
        want = oracle.get_delta_for_epsilon(eps)
        assert laplace_delta(eps, scale, distance) == pytest.approx(
            want, rel=1e-9, abs=1e-15
        )


def test_exact_profiles_at_their_limits():
    assert gaussian_delta(1.0, 1.0, 0.0) == 0.0  # identical inputs
    assert laplace_delta(0.0, 1.0, 0.0) == 0.0
    assert laplace_delta(2.0, 1.0, 2.0) == 0.0  # pure epsilon-DP at eps = Delta/b
    # eps = 0: total variation distance, 2 Phi(Delta / 2 sigma) - 1
    assert gaussian_delta(0.0, 2.0, 1.0) == pytest.approx(
        2 * stats.norm.cdf(0.25) - 1, rel=1e-12
    )
    # huge epsilon: no underflow to a negative or NaN value
    assert 0.0 <= gaussian_delta(200.0, 1.0, 2.0) < 1e-300


def test_exact_delta_dispatch():
    axis, diagonal = make_pair("axis", 4), make_pair("diagonal", 4)
    g = GaussianParams(clip=1.0, sigma=1.5)
    for pair in (axis, diagonal):
        assert exact_delta(GAUSSIAN, g, pair, 0.5) == gaussian_delta(0.5, 1.5, 2.0)
    lap = LaplaceParams(scale=0.7)
    assert exact_delta(LAPLACE, lap, axis, 0.5) == laplace_delta(0.5, 0.7, 2.0)
    assert exact_delta(LAPLACE, lap, diagonal, 0.5) is None  # d > 1 coordinates
    assert exact_delta(TRLAPLACE, trlaplace_params(1.0, 0.01, 4, 1.0), axis, 1) is None
    # Gaussian inputs are clipped first: 3 e1 vs -3 e1 at C = 1 are 2 apart
    assert exact_delta(GAUSSIAN, g, 3 * axis, 0.5) == gaussian_delta(0.5, 1.5, 2.0)
