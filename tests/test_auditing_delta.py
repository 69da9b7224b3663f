"""(epsilon, delta) audits (SPEC E4).

Exact profiles against dp_accounting; estimated profiles bracketing the exact ones
(validity) and close to them (not vacuous); correct mechanisms not flagged more often
than the confidence level allows; deliberately broken ones flagged; the support
test's probabilities against the noise density integrated by scipy; and
``delta_bounds``, the attacks, the pairs and the argument checks by hand.

Tolerances come from sampling error with the suite's ``FAIL_PROB`` per assertion;
where one assertion covers several estimates, its multiplier is Bonferroni-corrected
in code.
"""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution, privacy_loss_mechanism
from scipy import integrate, stats

from mcdp.attacks import SUPPORT_TEST, likelihood_ratio_attack, lr_thresholds
from mcdp.auditing import PROFILE_EPSILONS, audit_delta, make_pair
from mcdp.exact import exact_delta, gaussian_delta, laplace_delta
from mcdp.mechanisms import (
    GaussianParams,
    LaplaceParams,
    gaussian_params,
    get_mechanism,
    trlaplace_params,
)
from mcdp.mechanisms.trlaplace import trlaplace_cdf
from mcdp.sampling import count_outcomes
from mcdp.statistics import clopper_pearson, delta_bounds

from conftest import FAIL_PROB, SEED, Z

GAUSSIAN = get_mechanism("gaussian")
LAPLACE = get_mechanism("laplace")
TRLAPLACE = get_mechanism("trlaplace")
MIN_COUNT = 50  # expected hits per cell before a normal approximation is trusted


def _z(num_checks: int) -> float:
    """Two-sided multiplier for ``num_checks`` estimates in one assertion."""
    return float(stats.norm.isf(FAIL_PROB / (2 * num_checks)))


def _profile_thresholds(result) -> np.ndarray:
    """The lr attack's thresholds in an audit with the default profile."""
    thresholds = lr_thresholds(sorted({float(e) for e in PROFILE_EPSILONS} | {1.0}))
    assert len(thresholds) + 1 == len(result.counts[0])
    return thresholds


def _hoeffding(num_rates: int, draws: int) -> float:
    """Half-width u with P[|p_hat - p| >= u] <= FAIL_PROB for all ``num_rates``
    binomial rates at once (Hoeffding: 2 exp(-2 N u^2) each, Bonferroni)."""
    return math.sqrt(math.log(2 * num_rates / FAIL_PROB) / (2 * draws))


# --- 1. exact profiles against dp_accounting ------------------------------------

EPSILONS = [0.0, 0.05, 0.3, 1.0, 2.0, 5.0, 10.0, 20.0]


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


def _laplace_diagonal_oracle(scale, clip, dim):
    """Pessimistic (upper) and optimistic (lower) dp_accounting PLDs of d iid Laplace
    coordinates each shifted by 2C/sqrt(d)."""
    shift = 2 * clip / math.sqrt(dim)
    upper = privacy_loss_distribution.from_laplace_mechanism(
        parameter=scale, sensitivity=shift, value_discretization_interval=1e-4
    ).self_compose(dim)
    lower = privacy_loss_distribution.from_laplace_mechanism(
        parameter=scale,
        sensitivity=shift,
        pessimistic_estimate=False,
        value_discretization_interval=1e-4,
        use_connect_dots=False,
    ).self_compose(dim)
    return upper, lower


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


# --- 2. estimated profiles bracket the exact ones --------------------------------


def _gaussian_tails(mu):
    """P[L >= t] under x and x': L ~ N(mu, 2 mu) and N(-mu, 2 mu)."""
    sd = math.sqrt(2 * mu)
    return lambda t: (stats.norm.sf((t - mu) / sd), stats.norm.sf((t + mu) / sd))


def _laplace_axis_tails(scale, clip):
    """P[L >= t] for x = +C e1, x' = -C e1: L = clip(2 y1 / b, -2C/b, 2C/b)."""
    top = 2 * clip / scale

    def tails(t):
        if t > top:
            return 0.0, 0.0
        if t <= -top:
            return 1.0, 1.0
        cut = t * scale / 2  # L >= t iff y1 >= cut
        lap = stats.laplace(scale=scale)
        return lap.sf(cut - clip), lap.sf(cut + clip)

    return tails


def _check_known_profile(result, tails, exact):
    """Validity, bracketing and closeness of an lr audit whose tail probabilities
    P_a[L >= t] are known for every threshold t.

    * ``delta_lower <= exact <= delta_upper`` at every profile epsilon (the audit ran
      at confidence 1 - FAIL_PROB; the NP event {L >= eps} is one of its events, so
      the attack's delta is the exact one);
    * at the NP event, |delta_hat(S*) - exact| <= z SE with SE from the exact
      tails, Bonferroni over the epsilons checked;
    * the reported estimate is a maximum over events, biased upward: it is at least
      delta_hat(S*) (deterministic) and at most exact + u (1 + e^eps), u Hoeffding's
      half-width for all 2K tail rates at once.
    """
    n = result.draws
    thresholds = _profile_thresholds(result)
    rate = delta_bounds(result.counts).rate
    u = _hoeffding(2 * len(thresholds), n)
    checks = []
    for row in result.profile:
        eps = row.epsilon
        truth = exact(eps)
        if row.delta_exact is not None:
            assert row.delta_exact == pytest.approx(truth, rel=1e-9, abs=1e-15)
        assert row.delta_lower <= truth + 1e-12, row
        assert row.delta_upper >= truth - 1e-12, row
        assert row.delta_lower <= row.delta_estimate <= row.delta_upper
        (k,) = np.flatnonzero(thresholds == eps)
        p, q = tails(eps)
        factor = math.exp(eps)
        assert p - factor * q == pytest.approx(truth, abs=1e-12)  # NP event is optimal
        star = rate[0, k] - factor * rate[1, k]
        assert row.delta_estimate >= star - 1e-12
        assert row.delta_estimate <= truth + u * (1 + factor), row
        if min(p, 1 - p, q, 1 - q) * n >= MIN_COUNT and truth > 0.01:
            se = math.sqrt((p * (1 - p) + factor**2 * q * (1 - q)) / n)
            checks.append((eps, star, truth, se))
    assert len(checks) >= 5  # not vacuous: several epsilons with a sizeable delta
    z = _z(len(checks))
    for eps, star, truth, se in checks:
        assert abs(star - truth) <= z * se, (eps, star, truth, se)


@pytest.mark.parametrize("pair, dim", [("axis", 8), ("diagonal", 50)])
def test_gaussian_profile_brackets_exact(pair, dim):
    clip, sigma = 1.0, 1.0  # Delta_2 = 2: delta(0) = 0.68, delta(3) = 0.18
    result = audit_delta(
        "gaussian",
        1.0,
        1e-3,
        dim,
        100_000,
        pair=pair,
        clip=clip,
        seed=SEED,
        confidence=1 - FAIL_PROB,
        params=GaussianParams(clip, sigma),
    )
    mu = (2 * clip) ** 2 / (2 * sigma**2)
    _check_known_profile(
        result, _gaussian_tails(mu), lambda e: gaussian_delta(e, sigma, 2 * clip)
    )


def test_laplace_axis_profile_brackets_exact():
    clip, scale = 1.0, 0.45  # loss in [-4.44, 4.44], not on a threshold
    result = audit_delta(
        "laplace",
        1.0,
        0.0,
        8,
        100_000,
        pair="axis",
        clip=clip,
        seed=SEED,
        confidence=1 - FAIL_PROB,
        params=LaplaceParams(scale),
    )
    _check_known_profile(
        result,
        _laplace_axis_tails(scale, clip),
        lambda e: laplace_delta(e, scale, 2 * clip),
    )


def test_laplace_diagonal_profile_within_dp_accounting_bounds():
    """d iid coordinates, no closed form: dp_accounting's pessimistic and optimistic
    compositions bracket the true profile. ``delta_lower`` must stay below the upper
    one; the estimate at the NP event {L >= eps} is unbiased for the true delta, so
    it lies within z SE (plug-in SE, Bonferroni over epsilons) of the bracket."""
    clip, scale, dim, n = 1.0, 2.0, 16, 100_000  # loss in [-4, 4]
    result = audit_delta(
        "laplace",
        1.0,
        0.0,
        dim,
        n,
        pair="diagonal",
        clip=clip,
        seed=SEED,
        confidence=1 - FAIL_PROB,
        params=LaplaceParams(scale),
    )
    upper_pld, lower_pld = _laplace_diagonal_oracle(scale, clip, dim)
    thresholds = _profile_thresholds(result)
    rate = delta_bounds(result.counts).rate
    u = _hoeffding(2 * len(thresholds), n)
    checks = []
    for row in result.profile:
        eps, factor = row.epsilon, math.exp(row.epsilon)
        high = float(upper_pld.get_delta_for_epsilon(eps))
        low = float(lower_pld.get_delta_for_epsilon(eps))
        assert low <= high
        assert row.delta_exact is None
        assert row.delta_lower <= high + 1e-12, row
        assert row.delta_upper >= low - 1e-12, row
        assert row.delta_estimate <= high + u * (1 + factor), row
        (k,) = np.flatnonzero(thresholds == eps)
        p, q = rate[:, k]
        star = p - factor * q
        assert row.delta_estimate >= star - 1e-12
        if min(p, 1 - p, q, 1 - q) * n >= MIN_COUNT and low > 0.01:
            se = math.sqrt((p * (1 - p) + factor**2 * q * (1 - q)) / n)
            checks.append((eps, star, low, high, se))
    assert len(checks) >= 5
    z = _z(len(checks))
    for eps, star, low, high, se in checks:
        assert low - z * se <= star <= high + z * se, (eps, star, low, high, se)


# --- 3. a correct mechanism is not flagged ----------------------------------------

R = 40  # independent audits per case


def _false_alarm_limit(repeats: int, confidence: float) -> int:
    """Each audit flags a correct claim with probability <= 1 - confidence; more than
    this many flags out of ``repeats`` has probability <= FAIL_PROB."""
    return int(stats.binom.isf(FAIL_PROB, repeats, 1 - confidence))


def _count_false_alarms(repeats, mechanism, epsilon, delta, pair, dim, params, draws):
    confidence = 0.95
    flagged = []
    for r in range(repeats):
        result = audit_delta(
            mechanism,
            epsilon,
            delta,
            dim,
            draws,
            pair=pair,
            seed=repeats * SEED + r,
            confidence=confidence,
            params=params,
            profile_epsilons=(),
        )
        if result.delta_exact is not None:
            assert result.delta_exact <= delta + 1e-12  # the claim is correct
        assert result.violated == (result.delta_lower > delta)
        flagged.append(result.violated)
    assert sum(flagged) <= _false_alarm_limit(repeats, confidence), flagged


@pytest.mark.parametrize(
    "mechanism, epsilon, delta, pair, dim, params, draws",
    [
        # pure eps-DP at its calibration: loss in [-eps/sqrt(8), eps/sqrt(8)]
        ("laplace", 1.0, 0.0, "axis", 8, None, 1 << 17),
        # nearly tight: scale 2% above the calibration, loss in [-0.98, 0.98]
        ("laplace", 1.0, 0.0, "diagonal", 4, LaplaceParams(4 * 1.02), 1 << 18),
        # the classic calibration (eps <= 1): its delta is far above the true one
        ("gaussian", 1.0, 1e-5, "axis", 8, None, 1 << 17),
        # the tightest correct claim: delta = the exact delta of the pair
        (
            "gaussian",
            0.5,
            gaussian_delta(0.5, 1.0, 2.0),
            "diagonal",
            8,
            GaussianParams(1.0, 1.0),
            1 << 17,
        ),
    ],
)
def test_correct_mechanism_is_not_flagged(
    mechanism, epsilon, delta, pair, dim, params, draws
):
    _count_false_alarms(R, mechanism, epsilon, delta, pair, dim, params, draws)


@pytest.mark.slow
def test_tightest_gaussian_claim_many_seeds():
    """The tightest correct Gaussian claim over 200 seeds."""
    params = GaussianParams(1.0, 1.0)
    delta = gaussian_delta(0.5, 1.0, 2.0)
    _count_false_alarms(200, "gaussian", 0.5, delta, "diagonal", 8, params, 1 << 17)


@pytest.mark.parametrize(
    "pair, dim, draws", [("axis", 1, 1 << 20), ("diagonal", 4, 1 << 18)]
)
def test_tight_laplace_is_not_flagged(pair, dim, draws):
    """Laplace at exactly its calibrated scale on the pairs where the claim is
    tight: the atom {L = eps} has P_x = e^eps P_x' exactly, the hardest case for the
    bound's validity."""
    _count_false_alarms(5, "laplace", 1.0, 0.0, pair, dim, None, draws)


# --- 4. a deliberately broken mechanism is flagged --------------------------------


def _cp_multiplier(num_thresholds: int, confidence: float) -> float:
    """The normal quantile behind the audit's Bonferroni-corrected CP intervals."""
    return float(stats.norm.isf((1 - confidence) / (4 * num_thresholds)))


@pytest.mark.parametrize(
    "pair, dim",
    [
        ("axis", 8),
        ("diagonal", 50),
        pytest.param("diagonal", 300, marks=pytest.mark.slow),
    ],
)
def test_gaussian_with_half_the_noise_is_flagged(pair, dim):
    """sigma/2 at the paper's delta = 1/1200: true delta(1) ~ 0.009, 10x the claim.
    The design check asserts that the expected lower bound clears the claim by Z
    standard errors (and 10 % for CP's width over Wald), so a miss has probability
    below FAIL_PROB."""
    epsilon, delta, clip, draws = 1.0, 1 / 1200, 1.0, 1 << 18
    sigma = gaussian_params(epsilon, delta, clip).sigma / 2
    truth = gaussian_delta(epsilon, sigma, 2 * clip)
    mu = (2 * clip) ** 2 / (2 * sigma**2)
    p, q = _gaussian_tails(mu)(epsilon)
    factor = math.exp(epsilon)
    thresholds = lr_thresholds(sorted({*PROFILE_EPSILONS, epsilon}))
    sd = (math.sqrt(p * (1 - p)), math.sqrt(q * (1 - q)))
    cp = 1.1 * _cp_multiplier(len(thresholds), 0.95) * (sd[0] + factor * sd[1])
    se = math.hypot(sd[0], factor * sd[1])
    assert truth - (cp + Z * se) / math.sqrt(draws) > delta  # enough draws
    result = audit_delta(
        "gaussian",
        epsilon,
        delta,
        dim,
        draws,
        pair=pair,
        clip=clip,
        seed=SEED,
        params=GaussianParams(clip, sigma),
    )
    assert result.delta_exact == pytest.approx(truth, rel=1e-12)
    assert result.violated and result.delta_lower > delta


def test_laplace_with_a_quarter_of_the_noise_is_flagged():
    epsilon, dim, clip = 1.0, 4, 1.0
    scale = LAPLACE.calibrate(epsilon, 0.0, dim, clip).scale / 4
    truth = laplace_delta(epsilon, scale, 2 * clip)  # 1 - e^{-1/2} = 0.39
    result = audit_delta(
        "laplace", epsilon, 0.0, dim, 10_000, seed=SEED, params=LaplaceParams(scale)
    )
    assert result.delta_exact == pytest.approx(truth)
    assert result.violated and result.delta_lower > 0.0  # the claim: pure eps-DP


def _trlaplace_slab(params, shift: float) -> float:
    """P[eta > A - shift] for eta with density exp(-alpha |t|) / B on [-A, A], by
    quadrature of the density (B too), independently of mcdp's closed forms."""
    alpha, bound = float(params.alpha), float(params.bound)
    lo = bound - shift
    if lo <= -bound:
        return 1.0

    def density(t):
        return math.exp(-alpha * abs(t))

    def mass(a, b):
        points = [0.0] if a < 0 < b else None
        value, _ = integrate.quad(density, a, b, points=points, epsabs=0, epsrel=1e-12)
        return value

    return mass(lo, bound) / mass(-bound, bound)


PAPER = (1.0, 1 / 1200, 300, 1.0)  # (epsilon, delta = 1/(4d), d, C)


@pytest.mark.parametrize("attack", ["support", "lr"])
def test_trlaplace_is_flagged_at_the_paper_setting(attack):
    """On the axis pair the finite privacy loss is at most alpha 2C = eps/sqrt(d) <
    eps, so the exact delta(eps) is the slab P[eta_1 > A - 2C] ~ delta^(1/d) ~ 0.96,
    the NP event is {output outside supp(x')}, and the estimate is the larger of two
    independent binomial rates of that slab (one per order)."""
    epsilon, delta, dim, clip = PAPER
    draws = 20_000
    result = audit_delta(
        "trlaplace",
        epsilon,
        delta,
        dim,
        draws,
        attack=attack,
        clip=clip,
        seed=SEED,
        confidence=1 - FAIL_PROB,  # so that the bound's validity is checkable too
    )
    truth = _trlaplace_slab(trlaplace_params(*PAPER), 2 * clip)
    assert result.violated and result.delta_lower > 100 * delta
    assert result.delta_lower <= truth
    se = math.sqrt(truth * (1 - truth) / draws)
    assert abs(result.delta_estimate - truth) <= _z(2) * se


@pytest.mark.slow
@pytest.mark.parametrize(
    "epsilon, dim",
    [(eps, 300) for eps in (0.05, 0.1, 0.2, 0.5, 1, 5)] + [(10, 500), (20, 1700)],
)
def test_trlaplace_is_flagged_on_the_paper_grid(epsilon, dim):
    delta, clip, draws = 1 / (4 * dim), 1.0, 4096
    result = audit_delta(
        "trlaplace", epsilon, delta, dim, draws, attack="support", clip=clip, seed=SEED
    )
    truth = _trlaplace_slab(trlaplace_params(epsilon, delta, dim, clip), 2 * clip)
    assert result.violated and result.delta_lower > 100 * delta
    se = math.sqrt(truth * (1 - truth) / draws)
    assert abs(result.delta_estimate - truth) <= _z(2) * se


# --- 5. the support test's probabilities -------------------------------------------


@pytest.mark.parametrize(
    "case, pair",
    [
        (PAPER, "axis"),
        ((1.0, 0.01, 4, 0.5), "axis"),
        ((1.0, 0.01, 4, 0.5), "diagonal"),
        ((1.0, 1 / 200, 50, 1.0), "diagonal"),
    ],
)
def test_support_test_probabilities(key, case, pair):
    """Under x the output is never outside its own support; it leaves supp(x') iff
    some coordinate with shift s > 0 has eta_i > A - s, so P[outcome 2 | x] =
    1 - (1 - q)^m with q = P[eta > A - s] and m shifted coordinates (1 for axis,
    d for diagonal); symmetrically for outcome 0 under x'."""
    epsilon, delta, dim, clip = case
    params = trlaplace_params(*case)
    xs = make_pair(pair, dim, clip)
    shift, shifted = (2 * clip, 1) if pair == "axis" else (2 * clip / dim**0.5, dim)
    q = _trlaplace_slab(params, shift)
    assert q == pytest.approx(1 - trlaplace_cdf(params.bound - shift, params), 1e-9)
    p = 1 - (1 - q) ** shifted
    draws = 20_000 if dim > 100 else 50_000
    aux = (xs[0], xs[1], float(params.bound) * (1 + 1e-12))
    counts = count_outcomes(
        key, TRLAPLACE, SUPPORT_TEST, xs, params, draws, dtype="float64", aux=aux
    )
    assert counts[0, 0] == 0 and counts[1, 2] == 0  # never outside its own support
    assert np.all(counts.sum(axis=1) == draws)
    se = math.sqrt(p * (1 - p) / draws)
    assert abs(counts[0, 2] / draws - p) <= Z * se, (counts, p)
    assert abs(counts[1, 0] / draws - p) <= Z * se, (counts, p)


# --- 6. delta_bounds, the attacks, the pairs, the argument checks -----------------


def test_delta_bounds_are_bonferroni_clopper_pearson():
    counts = [[5, 3, 2, 10], [1, 4, 5, 0]]  # n = 20 and 10, K = 3
    confidence, k_max = 0.9, 3
    b = delta_bounds(counts, confidence)
    level = 1 - (1 - confidence) / (2 * k_max)  # per interval
    for row, c in enumerate(counts):
        n = sum(c)
        for k in range(1, k_max + 1):
            tail = sum(c[k:])
            lo, hi = clopper_pearson(tail, n, level)
            assert b.lower[row, k - 1] == pytest.approx(lo, rel=1e-9, abs=1e-15)
            assert b.upper[row, k - 1] == pytest.approx(hi, rel=1e-9)
            assert b.rate[row, k - 1] == tail / n
    # at eps = 0 the complements add nothing: the upper sets in both orders
    est, low, high = b.delta(0.0)
    p = [[15 / 20, 12 / 20, 10 / 20], [9 / 10, 5 / 10, 0.0]]
    want = max(
        0,
        *(p[0][k] - p[1][k] for k in range(3)),
        *(p[1][k] - p[0][k] for k in range(3)),
    )
    assert est == pytest.approx(want)
    assert low <= est <= high


@pytest.mark.parametrize("n", [1, 10, 1000])
def test_delta_bounds_zero_cells(n):
    alpha = 0.05
    cut = (alpha / 2 / 2) ** (1 / n)  # K = 1: each interval at 1 - alpha/2
    b = delta_bounds([[0, n], [n, 0]], 1 - alpha)
    assert b.lower[0, 0] == pytest.approx(cut) and b.upper[0, 0] == 1.0
    assert b.lower[1, 0] == 0.0 and b.upper[1, 0] == pytest.approx(1 - cut)
    for eps in (0.0, 0.5, 3.0):
        est, low, high = b.delta(eps)
        assert est == 1.0 and high == 1.0  # a perfect distinguisher
        assert low == pytest.approx(max(0.0, cut - math.exp(eps) * (1 - cut)))
    # the middle outcome only: nothing distinguishes the inputs
    b = delta_bounds([[0, n, 0], [0, n, 0]], 1 - alpha)
    assert b.delta(0.0)[:2] == (0.0, 0.0)


def test_delta_bounds_impossible_cells():
    counts = [[0, 30, 70], [40, 60, 0]]  # support test: 2 never under x', 0 not under x
    plain = delta_bounds(counts)
    known = delta_bounds(counts, impossible=((1, 2), (0, 0)))
    assert known.upper[1, 1] == 0.0 and known.lower[0, 0] == 1.0
    assert plain.upper[1, 1] > 0.0 and plain.lower[0, 0] < 1.0
    # the declared support makes the bound independent of e^eps
    assert known.delta(20.0)[1] == pytest.approx(known.lower[0, 1])
    assert plain.delta(20.0)[1] == 0.0
    # a nonzero count in a declared-impossible cell keeps the empirical bound
    leaky = delta_bounds([[0, 30, 70], [40, 59, 1]], impossible=((1, 2),))
    assert leaky.upper[1, 1] > 0.0


def _random_counts(rng, k_max):
    return rng.integers(0, 50, size=(2, k_max + 1))


def test_delta_is_monotone_in_epsilon_and_ordered():
    rng = np.random.default_rng(SEED)
    grid = np.linspace(0, 5, 26)
    for k_max in (1, 2, 7):
        for _ in range(5):
            b = delta_bounds(_random_counts(rng, k_max))
            values = np.array([b.delta(e) for e in grid])  # (eps, [est, lo, hi])
            assert np.all(np.diff(values, axis=0) <= 1e-15)
            assert np.all(values[:, 1] <= values[:, 0] + 1e-15)
            assert np.all(values[:, 0] <= values[:, 2] + 1e-15)
            assert np.all((values >= 0) & (values <= 1))


def test_delta_is_symmetric_under_complements_and_swaps():
    """Upper sets of reversed outcomes are the lower sets ({o' >= k} = {o < K+1-k})
    and swapping the rows swaps the orders; both are in the maximum, so the delta
    is unchanged (the lower bounds up to Beta(a, b) = 1 - Beta(b, a) rounding)."""
    rng = np.random.default_rng(SEED + 1)
    for k_max in (1, 3, 6):
        for _ in range(5):
            counts = _random_counts(rng, k_max)
            for eps in (0.0, 0.4, 2.0):
                ref = delta_bounds(counts).delta(eps)
                for other in (counts[::-1], counts[:, ::-1], counts[::-1, ::-1]):
                    got = delta_bounds(other).delta(eps)
                    assert got == pytest.approx(ref, rel=1e-9, abs=1e-12)


def test_delta_from_lower_sets():
    """P_x[o >= 1] = 0.5, P_x'[o >= 1] = 0.99: for eps > 0 only the complement
    {o < 1} in the order (x, x') gives a positive delta, 0.5 - e^eps 0.01; swapping
    the rows moves it to the order (x', x)."""
    counts = np.array([[50, 50], [1, 99]])
    for eps in (math.log(2), math.log(40)):
        want = 0.5 - math.exp(eps) * 0.01
        assert delta_bounds(counts).delta(eps)[0] == pytest.approx(want)
        assert delta_bounds(counts[::-1]).delta(eps)[0] == pytest.approx(want)
    assert delta_bounds(counts).delta(math.log(50))[0] == 0.0


@pytest.mark.parametrize("shape", [(2,), (3, 3), (2, 1), (1, 2)])
def test_delta_bounds_rejects_bad_shapes(shape):
    with pytest.raises(ValueError, match="shape") as info:
        delta_bounds(np.ones(shape, dtype=int))
    assert "\n" not in str(info.value)


def test_lr_thresholds():
    eps = [0.0, 0.1, 1.0, 3.0]
    t = lr_thresholds(eps)
    assert np.all(np.diff(t) > 0)
    for e in eps:
        assert e in t and -e in t
    assert t[0] == -3.0 and t[-1] == 3.0
    assert np.all(np.isin(np.round(np.linspace(-3, 3, 49), 12), t))
    assert lr_thresholds([]).tolist() == np.round(np.linspace(-1, 1, 49), 12).tolist()


def test_lr_attack_counts_thresholds_reached():
    """The attack's outcome is the number of thresholds at or below the exact loss,
    here against a NumPy evaluation of the Gaussian loss."""
    rng = np.random.default_rng(SEED)
    thresholds = lr_thresholds([0.5, 1.0, 2.0])
    attack = likelihood_ratio_attack(GAUSSIAN, len(thresholds))
    assert attack.num_outcomes == len(thresholds) + 1
    assert likelihood_ratio_attack(GAUSSIAN, len(thresholds)) is attack  # cached
    x, x_prime = make_pair("diagonal", 5)
    sigma = 0.8
    y = rng.normal(size=(200, 5)) * 1.5
    loss = (np.sum((y - x_prime) ** 2, -1) - np.sum((y - x) ** 2, -1)) / (2 * sigma**2)
    with jax.enable_x64(True):
        aux = (jnp.asarray(x), jnp.asarray(x_prime), GaussianParams(1.0, sigma))
        got = attack.guess(jnp.asarray(y), (*aux, jnp.asarray(thresholds)))
        got = np.asarray(got)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.searchsorted(thresholds, loss, "right"))


def test_support_guess_by_hand():
    y = np.array(
        [[2.0, 0.0], [-2.0, 0.0], [0.0, 0.0], [0.0, 2.0], [2.6, 0.0], [2.5, 1.5]]
    )
    with jax.enable_x64(True):
        aux = (jnp.array([1.0, 0.0]), jnp.array([-1.0, 0.0]), jnp.asarray(1.5))
        got = np.asarray(SUPPORT_TEST.guess(jnp.asarray(y), aux))
    # only x, only x', both, neither, neither, only x (on the closed edge)
    np.testing.assert_array_equal(got, [2, 0, 1, 1, 1, 2])


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


@pytest.mark.parametrize(
    "mechanism, kwargs, match",
    [
        ("laplace", {"epsilon": 0.0}, "epsilon"),
        ("laplace", {"epsilon": -1.0}, "epsilon"),
        ("laplace", {"epsilon": math.inf}, "epsilon"),
        ("laplace", {"delta": -0.1}, "delta"),
        ("laplace", {"delta": 1.0}, "delta"),
        ("laplace", {"delta": 1.5}, "delta"),
        ("laplace", {"delta": math.nan}, "delta"),
        ("laplace", {"pair": "square"}, "pair"),
        ("laplace", {"pair": np.zeros((2, 5))}, "shape"),
        ("laplace", {"pair": np.full((2, 3), np.nan)}, "finite"),
        ("laplace", {"attack": "oracle"}, "attack"),
        ("laplace", {"attack": "support"}, "bounded noise"),
        ("gaussian", {"attack": "support", "delta": 1e-5}, "bounded noise"),
        ("dptext", {"attack": "lr", "pair": "zeros-ones"}, "known density"),
        ("none", {"attack": "lr"}, "known density"),
        ("laplace", {"draws": 0}, "draws"),
        ("laplace", {"confidence": 1.0}, "confidence"),
        ("laplace", {"dtype": "float16"}, "dtype"),
        ("nonsense", {}, "mechanism"),
    ],
)
def test_audit_delta_rejects_bad_input(mechanism, kwargs, match):
    args = {"epsilon": 1.0, "delta": 0.0, "dim": 3, "draws": 100} | kwargs
    with pytest.raises(ValueError, match=match) as info:
        audit_delta(mechanism, **args)
    assert "\n" not in str(info.value)
