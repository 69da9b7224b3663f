"""Clopper-Pearson intervals, the loss interval, the width predictor
(``expected_width``, ``draws_for_width``, ``draws_needed``) and the (epsilon, delta)
bounds of an attack's events (``delta_bounds``), by hand and against closed forms."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from mcdp.exact import exact_e2
from mcdp.mechanisms import get_mechanism
from mcdp.sampling import BLOCK_DRAWS
from mcdp.statistics import (
    SEARCH_LIMIT,
    clopper_pearson,
    delta_bounds,
    draws_for_width,
    draws_needed,
    expected_width,
    loss_estimate,
    loss_from_log_probabilities,
    loss_from_probabilities,
)

from conftest import SEED


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


# --- the width predictor -------------------------------------------------------


def _exact(name, epsilon, dim):
    m = get_mechanism(name)
    return exact_e2(m, m.calibrate_sanity_check(epsilon, dim), dim)


@pytest.mark.parametrize(
    "counts",
    [[[700, 300], [560, 440]], [[99415, 585], [1505, 98495]], [[9, 1], [2, 8]]],
)
def test_expected_width_at_integer_counts_is_the_estimate_width(counts):
    n = sum(counts[0])
    est = loss_estimate(counts, 0.9)
    width = expected_width(counts[0][1] / n, counts[1][1] / n, n, 0.9)
    assert width == pytest.approx(est.upper - est.lower, rel=1e-12)


@pytest.mark.parametrize(
    "name,epsilon,dim,width",
    [
        ("adept", 5.0, 8, 0.5),  # P[guess 1 | D] = 5.9e-6
        ("adept", 1.0, 2, 0.1),
        ("laplace", 1.0, 8, 0.1),
        ("random", 1.0, 8, 0.05),  # exact loss 0: the lower end stays at 0
    ],
)
def test_draws_for_width_is_the_smallest_multiple_that_reaches_the_width(
    name, epsilon, dim, width
):
    exact = _exact(name, epsilon, dim)
    p, q = exact.p1, exact.q1
    n = draws_for_width(p, q, width, 0.95, step=BLOCK_DRAWS)
    assert n % BLOCK_DRAWS == 0 and n > BLOCK_DRAWS
    assert expected_width(p, q, n, 0.95) <= width
    assert expected_width(p, q, n - BLOCK_DRAWS, 0.95) > width
    assert expected_width(p, q, n // 2, 0.95) > width
    # a tighter confidence or a narrower target needs more draws
    assert draws_for_width(p, q, width, 0.99, step=BLOCK_DRAWS) > n
    assert draws_for_width(p, q, width / 2, 0.95, step=BLOCK_DRAWS) > 3 * n


def test_draws_for_width_of_an_infinite_loss_is_infinite():
    exact = _exact("none", 1.0, 8)
    assert exact.loss == math.inf
    assert draws_for_width(exact.p1, exact.q1, 10.0) == math.inf
    # a finite loss whose rare cell is out of reach of the search
    assert draws_for_width(1e-16, 0.5, 1.0) == math.inf
    assert SEARCH_LIMIT < draws_for_width(1e-16, 0.5, 1.0, limit=SEARCH_LIMIT << 10)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"p": -0.1}, "p in"),
        ({"p_prime": 1.5}, "p_prime in"),
        ({"target_width": 0.0}, "target_width > 0"),
        ({"target_width": math.nan}, "target_width > 0"),
    ],
)
def test_draws_for_width_rejects_bad_arguments(kwargs, match):
    args = {"p": 0.1, "p_prime": 0.5, "target_width": 0.1} | kwargs
    with pytest.raises(ValueError, match=match):
        draws_for_width(**args)


def test_draws_needed_replaces_a_zero_cell_by_its_bound():
    """ADePT, epsilon 5, d 8: 2e5 draws usually see no guess 1 under D (P = 5.9e-6).
    The prediction then uses the Clopper-Pearson upper end of that cell and is a
    lower bound on the exact prediction."""
    n = 200_000
    needed = draws_needed([[n, 0], [40, n - 40]], 0.5, 0.95, step=BLOCK_DRAWS)
    assert needed.lower_bound
    assert needed.p == pytest.approx(1 - 0.0125 ** (1 / n), rel=1e-9)
    assert needed.p_prime == (n - 40) / n
    exact = _exact("adept", 5.0, 8)
    exact_needed = draws_for_width(exact.p1, exact.q1, 0.5, step=BLOCK_DRAWS)
    assert n < needed.draws < exact_needed
    # a row that never guesses 0 takes the lower end of its proportion instead
    mirrored = draws_needed([[n - 40, 40], [0, n]], 0.5, 0.95, step=BLOCK_DRAWS)
    assert mirrored.lower_bound and mirrored.p_prime == 1 - needed.p
    # without zero cells the counts' proportions are used as they are
    plain = draws_needed([[700, 300], [560, 440]], 0.1)
    assert not plain.lower_bound and (plain.p, plain.p_prime) == (0.3, 0.44)
    assert plain.draws == draws_for_width(0.3, 0.44, 0.1)


# --- the (epsilon, delta) bounds of an attack's events --------------------------


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
