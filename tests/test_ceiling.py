"""The ceiling (mcdp.ceiling): closed forms, exact enumeration, monotonicity in the
draws, never above the exact loss, one-line errors. No randomness: every value is
a function of exact probabilities."""

import itertools
import math

import numpy as np
import pytest
from scipy import optimize, stats

from mcdp import ceiling as ceiling_module
from mcdp.ceiling import bounds, ceiling, cell_events
from mcdp.exact import exact_epsilon
from mcdp.mechanisms import SUITE, get_mechanism, svt_params
from mcdp.mechanisms import _svt_exact as svt_exact
from mcdp.mechanisms.counting import geo_sample_counts
from mcdp.pairs import make_pair

from conftest import binomial_variance

CONFIDENCE, EVENTS = 0.9, 3  # the suite's audits: DP-Sniper's 90 %, three events
DRAWS = (10**5, 10**8, 10**10, 10**13)


def _exact(name: str, pair: str) -> float:
    case = SUITE[name]
    mech = get_mechanism(name)
    params = mech.calibrate(case.epsilon, 0.0, case.dim, 1.0)
    return exact_epsilon(mech, params, make_pair(pair, case.dim))


def _best_over(p, q, draws: int) -> float:
    forward, backward = bounds(p, q, draws, CONFIDENCE, EVENTS)
    return float(max(forward.max(), backward.max()))


def _maximise(value, lo: float, hi: float, grid: int = 4001) -> float:
    """The maximum of a smooth function of one variable: a grid, then a bounded
    search between the best point's neighbours."""
    points = np.linspace(lo, hi, grid)
    values = np.array([value(t) for t in points])
    i = int(np.argmax(values))
    a, b = points[max(i - 1, 0)], points[min(i + 1, grid - 1)]
    found = optimize.minimize_scalar(
        lambda t: -value(t), bounds=(a, b), method="bounded", options={"xatol": 1e-10}
    )
    return max(values[i], -found.fun, value(hi))


# --- closed forms -----------------------------------------------------------------


@pytest.mark.parametrize("name", ["noisy-hist1", "noisy-hist2"])
@pytest.mark.parametrize("draws", [10**7, 2 * 10**8])
def test_one_laplace_coordinate_matches_closed_form(name, draws):
    # one-above: x_1 = 1 vs 0, scale b; the loss (|y - x'| - |y - x|)/b has atoms
    # at +-a (a = 1/b) and density 1/4 e^{-(a - l)/2} between under x, so for t in
    # (-a, a]: P_x[L >= t] = 1 - e^{-(a - t)/2}/2, P_x'[L >= t] = e^{-(a + t)/2}/2
    a = 1 / float(get_mechanism(name).calibrate(0.1, 0.0, 5, 1.0).scale)

    def best(t: float) -> float:
        p = 1 - 0.5 * math.exp(-(a - t) / 2)
        q = 0.5 * math.exp(-(a + t) / 2)
        return _best_over(np.array([p, 1 - p]), np.array([q, 1 - q]), draws)

    expected = _maximise(best, -a * (1 - 1e-9), a)
    got = ceiling(name, "one-above", draws)
    assert got.value == pytest.approx(expected, rel=1e-6, abs=1e-9)
    assert got.method.startswith("closed form")


@pytest.mark.parametrize("pair", ["scalar-0-1", "scalar-1-2"])
def test_truncated_geometric_is_best_over_every_event(pair):
    # six outputs, 64 events: the likelihood ratio's upper sets are the best
    params = get_mechanism("truncated-geometric").calibrate(0.1178, 0.0, 1, 1.0)
    low = int(pair.split("-")[1])
    laws = [geo_sample_counts(c, int(params.k), 5) for c in (low, low + 1)]
    p, q = (np.array(c, float) / sum(c) for c in laws)
    subsets = np.array(list(itertools.product((0, 1), repeat=6)), float)
    for draws in (10**5, 10**7, 10**9):
        expected = _best_over(subsets @ p, subsets @ q, draws)
        got = ceiling("truncated-geometric", pair, draws)
        assert got.value == pytest.approx(expected, rel=1e-12)
        assert got.method == "exact enumeration (integer counts)"


@pytest.mark.parametrize("draws", [10**7, 2 * 10**8])
def test_noisy_max_value_matches_the_maximum_cdf(draws):
    # all-below: x = 1^5 vs 0^5, b = 20; a shift family of log-concave densities,
    # so the best events are thresholds of the maximum's value:
    # P[max < s] = F(s - 1)^5 against F(s)^5
    cdf = stats.laplace(scale=20.0).cdf

    def best(s: float) -> float:
        p, q = cdf(s - 1) ** 5, cdf(s) ** 5
        return _best_over(np.array([p, 1 - p]), np.array([q, 1 - q]), draws)

    expected = _maximise(best, -300.0, 300.0)
    got = ceiling("report-noisy-max3", "all-below", draws)
    assert got.value == pytest.approx(expected, rel=1e-5)


def test_sparse_vector_at_2e8_with_three_events():
    # benchmarks/RESULTS.md's "ceiling at 2e8" (0.0858, 0.0855, 0.1701) took
    # one-sided ends at alpha / (2K); the audit's two-sided intervals at
    # alpha / (2K) give these
    assert round(ceiling("svt1", "x-shuffle", 2 * 10**8).value, 4) == 0.0856
    assert round(ceiling("svt2", "x-shuffle", 2 * 10**8).value, 4) == 0.0853
    assert round(ceiling("svt4", "half-half", 2 * 10**8).value, 4) == 0.1698


def test_svt3_cells_add_up_to_the_flag_probabilities():
    # the value cells of each pattern sum to the probability of its flags (svt1's
    # output with the same scales), for one answer above (cutoff 1) and two
    for cutoff in (1, 2):
        params = svt_params("svt3", 0.1, cutoff, 1.0)
        tx = make_pair("half-half", 10)
        edges = ceiling_module._svt3_edges(params, tx, fine=0.1, span=2.0, far=100)
        rows = svt_exact.outputs(10, cutoff)
        masses = list(ceiling_module._svt3_masses(params, tx, edges))
        for input_index in (0, 1):
            flags = np.exp(
                svt_exact.single_threshold_log_probs(tx[input_index], rows, params)
            )
            sums = np.array([np.sum(m[input_index]) for m in masses])
            np.testing.assert_allclose(sums, flags, rtol=1e-9, atol=1e-15)


def test_rappor_is_a_binomial_of_the_differing_bits():
    # (1) vs (0): 6 differing bits, 3 each way; the loss is a sum of +-l per bit
    got = ceiling("rappor", "scalar-0-1", 10**13)
    assert got.value == pytest.approx(0.30006, abs=2e-4)
    assert got.method == "exact enumeration (6 differing bits)"


def test_cell_events_keep_one_level_together():
    # two cells of the same ratio form one level: 2 levels, 1 cut, 2 events
    events = cell_events([0.25, 0.25, 0.5], [0.125, 0.125, 0.75], "toy")
    np.testing.assert_allclose(events.p, [0.5, 0.5])
    np.testing.assert_allclose(events.q, [0.25, 0.75])
    assert events.upper.tolist() == [True, False]


# --- sanity: monotone in the draws, never above the exact loss ---------------------

FAST = {  # case: pair (the peers' pair unless a cheaper one shows the same)
    "noisy-hist1": "one-above",
    "noisy-hist2": "one-above",
    "report-noisy-max1": "one-below-rest-above",
    "report-noisy-max2": "one-below-rest-above",
    "report-noisy-max3": "all-below",
    "svt1": "x-shuffle",
    "svt2": "x-shuffle",
    "svt4": "half-half",
    "svt6": "x-shuffle",
    "prefix-sum": "all-below",
    "truncated-geometric": "scalar-1-2",
    "laplace-parallel": "scalar-0-1",
    "rappor": "scalar-0-1",
    "one-time-rappor": "scalar-0-1",
}


@pytest.mark.parametrize("name", sorted(FAST))
def test_ceiling_grows_with_draws_up_to_the_exact_loss(name):
    pair = FAST[name]
    exact = _exact(name, pair)
    values = [ceiling(name, pair, n).value for n in DRAWS]
    assert all(b > a for a, b in zip(values, values[1:], strict=False)), values
    assert values[-1] <= exact
    # 1e13 draws reach events of probability 1e-6 (laplace-parallel needs them)
    assert values[-1] >= 0.97 * exact, (values, exact)


@pytest.mark.parametrize(
    "name, pair", [("svt5", "half-half"), ("report-noisy-max4", "all-above-all-below")]
)
def test_infinite_loss_gives_a_ceiling_that_keeps_growing(name, pair):
    assert math.isinf(_exact(name, pair))
    values = [ceiling(name, pair, n).value for n in DRAWS]
    assert all(b > a for a, b in zip(values, values[1:], strict=False)), values
    assert values[-1] > values[1] + 5  # ln(N) growth: 1e8 -> 1e13


def test_more_events_or_more_confidence_lower_the_ceiling():
    base = ceiling("svt1", "x-shuffle", 10**7).value
    assert ceiling("svt1", "x-shuffle", 10**7, num_events=1).value > base
    assert ceiling("svt1", "x-shuffle", 10**7, confidence=0.5).value > base
    assert ceiling("svt1", "x-shuffle", 10**7, confidence=0.99).value < base


def test_spread_is_the_sd_of_the_counted_log_ratio():
    # the delta method against the exact variance of ln(K_x / K_x') at the
    # attaining event's binomial counts: equal to 0.1 % at these counts
    got = ceiling("svt1", "x-shuffle", 10**7)
    exact = math.sqrt(
        binomial_variance(got.draws, got.p, np.log)
        + binomial_variance(got.draws, got.q, np.log)
    )
    assert got.spread == pytest.approx(exact, rel=1e-3)
    assert 0.03 < got.spread / got.value < 0.045  # svt1 at 1e7: 3.8 % of the bound
    # a hundred times the draws: a tenth of the spread
    assert ceiling("svt1", "x-shuffle", 10**9).spread == pytest.approx(
        got.spread / 10, rel=1e-3
    )


def test_spread_is_infinite_for_an_event_impossible_under_one_input():
    got = ceiling("svt5", "half-half", 10**7)
    assert min(got.p, got.q) == 0
    assert got.spread == math.inf


def test_default_pair_is_the_peers_pair():
    assert ceiling("svt4", draws=10**7) == ceiling("svt4", "half-half", 10**7)


# --- errors -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, kwargs, fragment",
    [
        (("nope",), {}, "mechanism"),
        (("svt1", "nope"), {}, "pair"),
        (("noisy-hist1", "scalar-0-1"), {}, "pair"),
        (("svt1", "x-shuffle", 0), {}, "draws"),
        (("svt1", "x-shuffle", 1.5), {}, "draws"),
        (("svt1", "x-shuffle", 10**7), {"confidence": 1.0}, "confidence"),
        (("svt1", "x-shuffle", 10**7), {"num_events": 0}, "num_events"),
        (("laplace-float", "scalar-0-1", 10**7), {}, "laplace-float"),
    ],
)
def test_bad_arguments_give_a_one_line_error(args, kwargs, fragment):
    with pytest.raises(ValueError) as error:
        ceiling(*args, **kwargs)
    message = str(error.value)
    assert fragment in message and "\n" not in message, message


# --- the continuous Sparse Vector cases (seconds each) --------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", ["svt3", "svt34-parallel"])
def test_continuous_sparse_vector_stays_below_its_exact_loss(name):
    exact = _exact(name, "half-half")  # 0.3 and 0.4874
    values = [ceiling(name, "half-half", n).value for n in (10**6, 10**8, 10**13)]
    assert values[0] < values[1] < values[2] <= exact
    assert values[2] >= 0.97 * exact
