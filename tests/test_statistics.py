import itertools
import math

import numpy as np
import pytest
from scipy import stats

from mcdp.statistics import (
    clopper_pearson,
    loss_estimate,
    loss_from_log_probabilities,
    loss_from_probabilities,
)


@pytest.mark.parametrize("n", [1, 10, 1000, 10**9])
def test_clopper_pearson_edges_closed_form(n):
    alpha = 0.05
    lo, hi = clopper_pearson(0, n, 1 - alpha)
    assert lo == 0.0
    assert hi == pytest.approx(1 - (alpha / 2) ** (1 / n), rel=1e-9)
    lo, hi = clopper_pearson(n, n, 1 - alpha)
    assert hi == 1.0
    assert lo == pytest.approx((alpha / 2) ** (1 / n), rel=1e-9)


def test_clopper_pearson_keeps_relative_precision_for_rare_events():
    """At 2**40 draws the ends are ~1e-12: closed form for k = 0, and for k = 5 the
    gamma limit of the beta quantiles (Poisson-Gamma duality)."""
    n, alpha = 1 << 40, 0.05
    _, hi = clopper_pearson(0, n, 1 - alpha)
    assert hi == pytest.approx(-math.expm1(math.log(alpha / 2) / n), rel=1e-9)
    lo, hi = clopper_pearson(5, n, 1 - alpha)
    assert lo == pytest.approx(stats.gamma.ppf(alpha / 2, 5) / n, rel=1e-6)
    assert hi == pytest.approx(stats.gamma.ppf(1 - alpha / 2, 6) / n, rel=1e-6)


@pytest.mark.parametrize("k,n", [(1, 10), (5, 10), (37, 1000), (123456, 10**7)])
def test_clopper_pearson_beta_quantiles(k, n):
    lo, hi = clopper_pearson(k, n, 0.9)
    assert lo == pytest.approx(stats.beta.ppf(0.05, k, n - k + 1), rel=1e-9)
    assert hi == pytest.approx(stats.beta.ppf(0.95, k + 1, n - k), rel=1e-9)


def test_clopper_pearson_rejects_bad_counts():
    with pytest.raises(ValueError, match="k <= n"):
        clopper_pearson(11, 10, 0.95)


def test_loss_from_probabilities_hand_values():
    assert loss_from_probabilities(0.25, 0.5) == pytest.approx(math.log(2))
    assert loss_from_probabilities(0.5, 0.5) == 0.0
    assert loss_from_probabilities(0.0, 0.3) == math.inf
    assert (
        loss_from_probabilities(0.0, 0.0) == 0.0
    )  # guess 1 never happens: no evidence
    assert loss_from_probabilities(1.0, 1.0) == 0.0


def test_loss_from_log_probabilities_survives_underflow():
    # probabilities below the smallest double stay exact in log space
    loss = loss_from_log_probabilities((-2000.0, 0.0), (-1990.0, 0.0))
    assert loss == pytest.approx(10.0)
    assert loss_from_log_probabilities((-math.inf, 0.0), (-5.0, -0.01)) == math.inf


def test_zero_cell_gives_infinite_estimate_and_finite_lower_bound():
    n, alpha = 10**6, 0.05
    est = loss_estimate([[n, 0], [0, n]], 1 - alpha)
    assert est.value == math.inf and est.upper == math.inf
    # each row at 1 - alpha/2: p in [0, hi], p' in [1 - hi, 1]; the nearest corner
    hi = 1 - (alpha / 4) ** (1 / n)
    assert est.lower == pytest.approx(math.log((1 - hi) / hi), rel=1e-7)
    assert math.isfinite(est.lower) and est.lower > 10


def _brute_force_range(p_box, q_box, steps=400):
    ps = np.linspace(*p_box, steps)
    qs = np.linspace(*q_box, steps)
    values = [loss_from_probabilities(p, q) for p, q in itertools.product(ps, qs)]
    return min(values), max(values)


@pytest.mark.parametrize(
    "counts",
    [
        [[700, 300], [560, 440]],
        [[990, 10], [900, 100]],
        [[500, 500], [510, 490]],
        [[40, 960], [2, 998]],
    ],
)
def test_loss_interval_is_the_range_over_the_rectangle(counts):
    """The closed-form interval against a naive grid search over the CP rectangle."""
    est = loss_estimate(counts, 0.95)
    n = sum(counts[0])
    p_box = clopper_pearson(counts[0][1], n, 0.975)
    q_box = clopper_pearson(counts[1][1], sum(counts[1]), 0.975)
    low, high = _brute_force_range(p_box, q_box)
    assert est.lower <= low + 1e-12
    assert est.lower >= low - 0.02 * max(high, 1e-3) or est.lower == 0.0
    assert est.upper == pytest.approx(high, rel=1e-9)
    assert est.lower <= est.value <= est.upper


def test_overlapping_intervals_give_zero_lower_bound():
    est = loss_estimate([[5000, 5000], [5010, 4990]], 0.95)
    assert est.lower == 0.0 and est.upper > est.value > 0
