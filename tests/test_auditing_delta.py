"""(epsilon, delta) audits (SPEC E4).

Estimated profiles bracketing the exact ones (validity) and close to them (not
vacuous); correct mechanisms not flagged more often than the confidence level allows;
deliberately broken ones flagged; the argument checks of ``audit_delta``. The exact
profiles themselves are tested in ``test_exact.py``, ``delta_bounds`` in
``test_statistics.py``, the attacks and the support test's probabilities in
``test_attacks.py``.

Tolerances come from sampling error with the suite's ``FAIL_PROB`` per assertion;
where one assertion covers several estimates, its multiplier is Bonferroni-corrected
in code.
"""

import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution
from scipy import stats

from mcdp.attacks import lr_thresholds
from mcdp.auditing import PROFILE_EPSILONS, audit_delta
from mcdp.exact import gaussian_delta, laplace_delta
from mcdp.mechanisms import (
    GaussianParams,
    LaplaceParams,
    gaussian_params,
    get_mechanism,
    trlaplace_params,
)
from mcdp.statistics import delta_bounds

from conftest import FAIL_PROB, SEED, Z, trlaplace_slab

LAPLACE = get_mechanism("laplace")
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


# --- 1. estimated profiles bracket the exact ones --------------------------------


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
        attack="lr",
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
        attack="lr",
    )
    _check_known_profile(
        result,
        _laplace_axis_tails(scale, clip),
        lambda e: laplace_delta(e, scale, 2 * clip),
    )


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
        attack="lr",
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


# --- 2. a correct mechanism is not flagged ----------------------------------------

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
            attack="lr",
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


# --- 3. a deliberately broken mechanism is flagged --------------------------------


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
        attack="lr",
    )
    assert result.delta_exact == pytest.approx(truth, rel=1e-12)
    assert result.violated and result.delta_lower > delta


def test_laplace_with_a_quarter_of_the_noise_is_flagged():
    epsilon, dim, clip = 1.0, 4, 1.0
    scale = LAPLACE.calibrate(epsilon, 0.0, dim, clip).scale / 4
    truth = laplace_delta(epsilon, scale, 2 * clip)  # 1 - e^{-1/2} = 0.39
    result = audit_delta(
        "laplace",
        epsilon,
        0.0,
        dim,
        10_000,
        seed=SEED,
        params=LaplaceParams(scale),
        attack="lr",
    )
    assert result.delta_exact == pytest.approx(truth)
    assert result.violated and result.delta_lower > 0.0  # the claim: pure eps-DP


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
    truth = trlaplace_slab(trlaplace_params(*PAPER), 2 * clip)
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
    truth = trlaplace_slab(trlaplace_params(epsilon, delta, dim, clip), 2 * clip)
    assert result.violated and result.delta_lower > 100 * delta
    se = math.sqrt(truth * (1 - truth) / draws)
    assert abs(result.delta_estimate - truth) <= _z(2) * se


# --- 4. the argument checks --------------------------------------------------------


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
