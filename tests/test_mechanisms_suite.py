"""The benchmark suite: each sampler against its definition, each exact loss
against an independent computation, the registry and the pairs against their
contracts, and one audit per broken family end to end.

Stochastic assertions use the fixed key of conftest and FAIL_PROB each (KS and χ²
p-values, Clopper–Pearson bounds at confidence 1 - FAIL_PROB)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats

import mcdp
from mcdp.mechanisms import (
    MECHANISMS,
    SUITE,
    NoisyMaxParams,
    counting,
    get_mechanism,
    noisy_max,
    svt_params,
)
from mcdp.mechanisms import _svt_exact as svt_exact
from mcdp.mechanisms import sparse_vector as sv
from mcdp.pairs import PAIRS, PATTERNS, SCALAR_PAIRS, make_pair

from conftest import FAIL_PROB

N = 200_000
SUITE_NAMES = [
    "noisy-hist1",
    "noisy-hist2",
    "report-noisy-max1",
    "report-noisy-max2",
    "report-noisy-max3",
    "report-noisy-max4",
    "svt1",
    "svt2",
    "svt3",
    "svt4",
    "svt5",
    "svt6",
    "svt34-parallel",
    "prefix-sum",
    "truncated-geometric",
    "laplace-parallel",
    # tests/test_mechanisms_suite_rows.py checks these five against their definitions
    "rappor",
    "one-time-rappor",
    "numerical-svt",
    "laplace-float",
    "snapping",
]
NO_CLAIM = {"rappor", "one-time-rappor"}  # DP-Sniper audits RAPPOR without a claim
FLOAT64_ONLY = {"laplace-float", "snapping"}  # NumPy's float64 uniforms k / 2^53
BROKEN = {
    "noisy-hist2",
    "report-noisy-max3",
    "report-noisy-max4",
    "svt3",
    "svt4",
    "svt5",
    "svt6",
    "svt34-parallel",
    "prefix-sum",
    "laplace-float",
}


def _params(name, epsilon=None, dim=None):
    case = SUITE[name]
    return MECHANISMS[name].calibrate(
        case.epsilon if epsilon is None else epsilon, 0.0, dim or case.dim, 1.0
    )


def _sample(name, key, x, params, use_jit=False):
    sample = MECHANISMS[name].sample
    with jax.enable_x64(True):
        f = jax.jit(sample) if use_jit else sample
        return np.asarray(f(key, jnp.asarray(x, jnp.float64), params))


def _batch(row, n=N):
    return np.broadcast_to(np.asarray(row, float), (n, len(row)))


# --- the registry and the table -------------------------------------------------


def test_registry_holds_exactly_the_suite():
    assert sorted(SUITE) == sorted(SUITE_NAMES)
    assert set(SUITE_NAMES) <= set(MECHANISMS)
    for name in SUITE_NAMES:
        m = get_mechanism(name)
        assert m.name == name
        assert m.claim == (None if name in NO_CLAIM else "epsilon-DP")
        assert bool(m.flaw) == (name in BROKEN), name
        assert m.calibrate is not None and m.exact_epsilon is not None
        assert m.calibrate_sanity_check is None  # 0^d, 1^d are not neighbours here
    with_density = {n for n in SUITE_NAMES if MECHANISMS[n].privacy_loss}
    assert with_density == {
        "noisy-hist1",
        "noisy-hist2",
        "prefix-sum",
        "truncated-geometric",
        "laplace-parallel",
        "rappor",
        "one-time-rappor",
        "svt1",
        "svt3",
        "svt4",
        "svt6",
        "svt34-parallel",
        "numerical-svt",
    }


def test_suite_table():
    for name, case in SUITE.items():
        assert case.mechanism == name
        if name != "truncated-geometric":
            assert case.epsilon == 0.1
    assert SUITE["truncated-geometric"].epsilon == pytest.approx(math.log(1.125))
    assert SUITE["svt1"].dim == SUITE["prefix-sum"].dim == 10
    assert SUITE["report-noisy-max1"].dim == SUITE["noisy-hist1"].dim == 5
    assert SUITE["laplace-parallel"].pairs == SCALAR_PAIRS
    assert SUITE["noisy-hist2"].pairs == (
        "one-above",
        "one-above-swapped",
        "one-below",
        "one-below-swapped",
    )
    assert len(SUITE["svt6"].pairs) == 2 * len(PATTERNS)
    for case in SUITE.values():
        assert set(case.pairs) <= set(PAIRS)


def test_suite_table_epsilon_of_the_truncated_geometric():
    # GeoSample(0.1, 5): k = ceil(ln 20) = 3, claimed ln(1 + 1/8)
    assert counting.geo_sample_params(0.1) == (3, 5)
    assert _params("truncated-geometric") == (3, 5)
    assert counting.truncated_geometric_params(0.1).k == 4  # ln(1 + 1/16) <= 0.1
    for k in range(8):
        assert counting.truncated_geometric_params(math.log1p(2.0**-k)).k == k


# --- the pairs ------------------------------------------------------------------

FIVE = {
    "one-above": ([1, 1, 1, 1, 1], [0, 1, 1, 1, 1]),
    "one-below": ([1, 1, 1, 1, 1], [2, 1, 1, 1, 1]),
    "one-above-rest-below": ([1, 1, 1, 1, 1], [2, 0, 0, 0, 0]),
    "one-below-rest-above": ([1, 1, 1, 1, 1], [0, 2, 2, 2, 2]),
    "half-half": ([1, 1, 1, 1, 1], [2, 2, 0, 0, 0]),
    "all-above-all-below": ([1, 1, 1, 1, 1], [2, 2, 2, 2, 2]),
    "all-below": ([1, 1, 1, 1, 1], [0, 0, 0, 0, 0]),
    "x-shuffle": ([1, 1, 0, 0, 0], [0, 0, 1, 1, 1]),
}


@pytest.mark.parametrize("name", PATTERNS)
def test_patterns_as_dp_sniper_generates_them(name):
    np.testing.assert_array_equal(make_pair(name, 5), np.array(FIVE[name], float))
    np.testing.assert_array_equal(
        make_pair(name + "-swapped", 5), np.array(FIVE[name][::-1], float)
    )
    for dim in (1, 2, 10):
        pair = make_pair(name, dim)
        assert pair.shape == (2, dim)
        assert np.abs(pair[0] - pair[1]).max() <= 1  # query-answer neighbours


def test_histogram_pairs_differ_in_one_entry_by_one():
    for name in SUITE["noisy-hist1"].pairs:
        diff = np.abs(np.diff(make_pair(name, 5), axis=0))
        assert diff.sum() == 1


def test_scalar_pairs_and_the_old_pairs():
    np.testing.assert_array_equal(make_pair("scalar-0-1", 1), [[0.0], [1.0]])
    np.testing.assert_array_equal(make_pair("scalar-1-2", 1), [[1.0], [2.0]])
    with pytest.raises(ValueError, match="dim = 1"):
        make_pair("scalar-0-1", 2)
    np.testing.assert_array_equal(make_pair("axis", 2, 3.0), [[3, 0], [-3, 0]])
    d = make_pair("diagonal", 4, 2.0)
    np.testing.assert_allclose(d, [[1.0] * 4, [-1.0] * 4])
    np.testing.assert_array_equal(make_pair("zeros-ones", 3), [[0] * 3, [1] * 3])
    assert PAIRS[:3] == ("zeros-ones", "axis", "diagonal")
    assert len(PAIRS) == len(set(PAIRS)) == 3 + 2 * len(PATTERNS) + 2


# --- shapes, dtypes and the jit --------------------------------------------------


@pytest.mark.parametrize("name", SUITE_NAMES)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_output_shape_and_dtype(key, name, dtype):
    case = SUITE[name]
    params = _params(name)
    width = {
        "svt34-parallel": 2 * case.dim,
        "laplace-parallel": 20,
        "rappor": 20,
        "one-time-rappor": 20,
    }.get(name)
    with jax.enable_x64(dtype == "float64"):
        x = jnp.asarray(_batch(make_pair(case.pairs[0], case.dim)[0], 64), dtype)
        if name in FLOAT64_ONLY and dtype == "float32":
            with pytest.raises(ValueError, match="dtype='float64'"):
                MECHANISMS[name].sample(key, x, params)
            return
        y = jax.jit(MECHANISMS[name].sample)(key, x, params)
        eager = MECHANISMS[name].sample(key, x, params)
    assert y.dtype == jnp.dtype(dtype)
    assert y.shape == (64, width or (1 if "noisy-max" in name else case.dim))
    # jit may fuse float32 arithmetic differently: last-ulp differences
    rtol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(np.asarray(y), np.asarray(eager), rtol=rtol)


# --- samplers against their definitions -------------------------------------------


@pytest.mark.parametrize("name, scale", [("noisy-hist1", 10.0), ("noisy-hist2", 0.1)])
@pytest.mark.parametrize("use_jit", [False, True])
def test_noisy_hist_is_laplace(key, name, scale, use_jit):
    x = np.array([0.0, 1.0, 2.0, 5.0, -3.0])
    y = _sample(name, key, _batch(x, N // 5), _params(name), use_jit)
    z = ((y - x) / scale).ravel()
    assert stats.kstest(z, stats.laplace.cdf).pvalue > FAIL_PROB


def test_prefix_sum_differences_are_laplace(key):
    x = np.arange(10.0)
    y = _sample("prefix-sum", key, _batch(x, N // 10), _params("prefix-sum"))
    noise = np.diff(y, axis=1, prepend=0.0) - x
    assert stats.kstest(noise.ravel() / 10.0, stats.laplace.cdf).pvalue > FAIL_PROB


def test_laplace_parallel_is_twenty_laplace_copies(key):
    y = _sample(
        "laplace-parallel", key, _batch([3.0], N // 20), _params("laplace-parallel")
    )
    assert y.shape == (N // 20, 20)
    assert stats.kstest((y.ravel() - 3.0) / 200.0, stats.laplace.cdf).pvalue > FAIL_PROB
    # the copies are independent: the correlation of two columns is ~N(0, 1/n)
    r = np.corrcoef(y[:, 0], y[:, 7])[0, 1]
    assert abs(r) * math.sqrt(y.shape[0]) < stats.norm.isf(FAIL_PROB / 2)


def _noise(noise, scale):
    if noise == "laplace":
        return stats.laplace(scale=scale)
    return stats.expon(scale=scale)


def _quad_argmax_probs(x, scale, noise):
    """P[argmax = k] by scipy's adaptive quadrature, split at the inputs."""
    dist = _noise(noise, scale)
    edges = np.concatenate([[-np.inf], np.sort(x), [np.inf]])
    probs = []
    for k in range(x.size):

        def integrand(t, k=k):
            others = np.prod([dist.cdf(t - x[j]) for j in range(x.size) if j != k])
            return dist.pdf(t - x[k]) * others

        total = sum(
            integrate.quad(integrand, a, b, epsabs=0, epsrel=1e-12, limit=200)[0]
            for a, b in zip(edges[:-1], edges[1:], strict=True)
        )
        probs.append(total)
    return np.array(probs)


@pytest.mark.parametrize(
    "name, noise",
    [("report-noisy-max1", "laplace"), ("report-noisy-max2", "exponential")],
)
def test_report_noisy_max_index_frequencies(key, name, noise):
    x, params = np.array([0.0, 1.0, 3.0, 1.0, 2.0]), NoisyMaxParams(scale=2.0)
    y = _sample(name, key, _batch(x), params).ravel()
    assert set(np.unique(y)) <= set(range(5))
    expected = _quad_argmax_probs(x, 2.0, noise)
    assert expected.sum() == pytest.approx(1.0, abs=1e-10)
    observed = np.bincount(y.astype(int), minlength=5)
    assert stats.chisquare(observed, expected * N).pvalue > FAIL_PROB
    exact = np.exp(noisy_max.argmax_log_probs(x, 2.0, noise))
    np.testing.assert_allclose(exact, expected, rtol=1e-9)


@pytest.mark.parametrize(
    "name, noise",
    [("report-noisy-max3", "laplace"), ("report-noisy-max4", "exponential")],
)
def test_report_noisy_max_value_is_the_max(key, name, noise):
    x, params = np.array([0.0, 1.0, 3.0, 1.0, 2.0]), NoisyMaxParams(scale=2.0)
    y = _sample(name, key, _batch(x), params).ravel()
    dist = _noise(noise, 2.0)

    def cdf(t):
        return np.prod(dist.cdf(np.subtract.outer(t, x)), axis=-1)

    assert stats.kstest(y, cdf).pvalue > FAIL_PROB
    # the density is the derivative of that CDF
    t = np.linspace(-5, 12, 101) + 0.0123
    h = 1e-5
    numeric = (cdf(t + h) - cdf(t - h)) / (2 * h)
    closed = np.exp(noisy_max.max_log_density(t, x, 2.0, noise))
    np.testing.assert_allclose(closed, numeric, rtol=1e-6, atol=1e-12)


def _naive_svt(variant, x, rho, nu, params):
    """Lyu et al.'s pseudo-code, one row and one query at a time."""
    cutoff = getattr(params, "cutoff", None)
    threshold = float(params.threshold)
    out = np.empty((rho.shape[0], x.size))
    for r in range(rho.shape[0]):
        count, current = 0, rho[r, 0]
        for i in range(x.size):
            if cutoff is not None and count >= int(cutoff):
                out[r, i] = sv.SVT3_ABORTED if variant == "svt3" else sv.ABORTED
                continue
            noisy = x[i] + nu[r, i]
            if noisy >= threshold + current:
                out[r, i] = noisy if variant == "svt3" else sv.TRUE
                count += 1
                if variant == "svt2" and i + 1 < x.size:
                    current = rho[r, i + 1]  # a fresh threshold draw
            else:
                out[r, i] = sv.SVT3_FALSE if variant == "svt3" else sv.FALSE
    return out


@pytest.mark.parametrize("variant", ["svt1", "svt2", "svt3", "svt4", "svt5", "svt6"])
@pytest.mark.parametrize("cutoff", [1, 3, 7])  # 7: every query answered
def test_svt_against_a_naive_loop_on_the_same_noise(key, variant, cutoff):
    x = np.array([1.0, 3.0, -1.0, 2.0, 0.0, 4.0, 1.0])
    params = svt_params(variant, 1.0, cutoff, 1.5)
    n = 3000
    with jax.enable_x64(True):
        batch = jnp.asarray(_batch(x, n))
        y = np.asarray(MECHANISMS[variant].sample(key, batch, params))
        rho, nu = sv.svt_noise(
            key, batch, params, fresh=variant == "svt2", query_noise=variant != "svt5"
        )
    naive = _naive_svt(variant, x, np.asarray(rho), np.asarray(nu), params)
    np.testing.assert_array_equal(y, naive)
    if variant == "svt5":
        assert np.all(np.asarray(nu) == 0)


def test_svt34_parallel_is_svt3_beside_svt4(key):
    x = make_pair("one-above", 10)[0]
    params = _params("svt34-parallel")
    with jax.enable_x64(True):
        batch = jnp.asarray(_batch(x, 500))
        y = np.asarray(MECHANISMS["svt34-parallel"].sample(key, batch, params))
        three = sv.svt3_sample(jax.random.fold_in(key, sv.SVT3_KEY), batch, params.svt3)
        four = sv.svt4_sample(jax.random.fold_in(key, sv.SVT4_KEY), batch, params.svt4)
    np.testing.assert_array_equal(y, np.concatenate([three, four], axis=1))


@pytest.mark.parametrize(
    "variant, cutoff",
    [("svt1", 1), ("svt2", 2), ("svt4", 2), ("svt5", None), ("svt6", None)],
)
def test_svt_output_frequencies_match_the_exact_probabilities(key, variant, cutoff):
    """The sampler (checked above against the pseudo-code) and the quadrature of
    the exact reference agree on the law of every output."""
    x = np.array([0.0, 2.0, 1.0, 3.0])
    params = svt_params(variant, 1.0, cutoff, 1.0)
    rows = svt_exact.outputs(x.size, cutoff)
    log_probs = (
        svt_exact.svt2_log_probs
        if variant == "svt2"
        else svt_exact.single_threshold_log_probs
    )
    expected = np.exp(log_probs(x, rows, params))
    assert expected.sum() == pytest.approx(1.0, abs=1e-10)
    y = _sample(variant, key, _batch(x), params)
    codes = {row.tobytes(): i for i, row in enumerate(rows.astype(np.int8))}
    observed = np.bincount(
        [codes[row.tobytes()] for row in y.astype(np.int8)], minlength=len(rows)
    )
    possible = expected > 0
    assert observed[~possible].sum() == 0
    assert (
        stats.chisquare(observed[possible], expected[possible] * N).pvalue > FAIL_PROB
    )


def test_svt_outputs_enumeration():
    assert len(svt_exact.outputs(10, 1)) == 11
    assert len(svt_exact.outputs(10, 2)) == 1 + 10 + 45
    assert len(svt_exact.outputs(4, None)) == 16
    for row in svt_exact.outputs(6, 2):
        answered = row[row >= 0]
        assert (row[answered.size :] == -1).all()  # aborts only at the end
        assert (answered == 1).sum() <= 2
        assert row[-1] != -1 or (answered == 1).sum() == 2 and answered[-1] == 1


@pytest.mark.parametrize("count", [0, 2, 5])
@pytest.mark.parametrize("k", [1, 3])
def test_truncated_geometric_against_geo_sample(key, count, k):
    n = 5
    params = counting.TruncatedGeometricParams(k=k, upper=n)
    y = _sample("truncated-geometric", key, _batch([float(count)]), params).ravel()
    assert set(np.unique(y)) <= set(range(n + 1))
    counts = np.array(counting.geo_sample_counts(count, k, n))
    expected = counts / counts.sum()
    observed = np.bincount(y.astype(int), minlength=n + 1)
    assert stats.chisquare(observed, expected * N).pvalue > FAIL_PROB
    # Balcer and Vadhan's F is the two-sided geometric clamped to [0, n]
    q = 2.0**k / (2.0**k + 1)
    z = np.arange(n + 1)
    clamped = (1 - q) / (1 + q) * q ** np.abs(z - count)
    clamped[0] = q**count / (1 + q)
    clamped[n] = q ** (n - count) / (1 + q)
    np.testing.assert_allclose(expected, clamped, rtol=1e-12)


# --- exact losses against independent computations -----------------------------


@pytest.mark.parametrize("name", ["noisy-hist1", "noisy-hist2", "prefix-sum"])
def test_laplace_family_losses(name):
    m, params = MECHANISMS[name], _params(name)
    scale = params.scale
    dim = SUITE[name].dim
    rng = np.random.default_rng(0)
    for pair in ("one-above", "one-below", "one-above-rest-below"):
        tx = make_pair(pair, dim)
        exact = m.exact_epsilon(params, tx)
        # brute force, with scipy's log density: the density ratio at random
        # outputs, and at one far out on the side of x in every entry
        outward = 50.0 * np.sign(tx[0] - tx[1])[None, :]
        noise = np.concatenate([outward, rng.normal(size=(50, dim))])
        y = tx[0] + noise * scale
        if name == "prefix-sum":
            y = np.cumsum(y, axis=1)
            z = np.diff(y, axis=1, prepend=0.0)
        else:
            z = y
        logpdf = stats.laplace(scale=scale).logpdf
        brute = (logpdf(z - tx[0]) - logpdf(z - tx[1])).sum(axis=1)
        assert exact == pytest.approx(np.abs(brute).max(), rel=1e-9)
        assert np.all(np.abs(brute) <= exact * (1 + 1e-9))
        with jax.enable_x64(True):
            loss = m.privacy_loss(jnp.asarray(y), tx[0], tx[1], params)
        np.testing.assert_allclose(np.asarray(loss), brute, rtol=1e-8, atol=1e-9)
    expected = {"noisy-hist1": 0.1, "noisy-hist2": 10.0, "prefix-sum": 1.0}[name]
    worst = max(m.exact_epsilon(params, make_pair(p, dim)) for p in SUITE[name].pairs)
    assert worst == pytest.approx(expected)


def test_laplace_parallel_loss():
    m, params = MECHANISMS["laplace-parallel"], _params("laplace-parallel")
    for pair in SCALAR_PAIRS:
        tx = make_pair(pair, 1)
        assert m.exact_epsilon(params, tx) == pytest.approx(0.1)
        y = np.linspace(-500, 500, 20)[None, :] + tx[0]
        logpdf = stats.laplace(scale=200.0).logpdf
        brute = (logpdf(y - tx[0]) - logpdf(y - tx[1])).sum(axis=1)
        with jax.enable_x64(True):
            loss = m.privacy_loss(jnp.asarray(y), tx[0], tx[1], params)
        np.testing.assert_allclose(np.asarray(loss), brute, rtol=1e-10, atol=1e-12)
        y_extreme = np.full((1, 20), -1e3)
        assert abs((logpdf(y_extreme - tx[0]) - logpdf(y_extreme - tx[1])).sum()) == (
            pytest.approx(0.1)
        )


@pytest.mark.parametrize("k", [0, 1, 3, 5])
def test_truncated_geometric_loss_is_its_claim(k):
    m = MECHANISMS["truncated-geometric"]
    params = counting.TruncatedGeometricParams(k=k, upper=5)
    claim = math.log1p(2.0**-k)  # Balcer and Vadhan, Thm 4.7
    for c in range(5):
        tx = np.array([[c], [c + 1.0]])
        assert m.exact_epsilon(params, tx) == pytest.approx(claim, rel=1e-12)
        counts = [counting.geo_sample_counts(v, k, 5) for v in (c, c + 1)]
        log_ratio = np.log(counts[0]) - np.log(counts[1])
        with jax.enable_x64(True):
            y = jnp.arange(6.0)[:, None]
            loss = m.privacy_loss(y, jnp.asarray(tx[0]), jnp.asarray(tx[1]), params)
        np.testing.assert_allclose(np.asarray(loss), log_ratio, rtol=1e-12, atol=1e-14)
    assert m.exact_epsilon(params, np.array([[0.0], [2.0]])) == pytest.approx(2 * claim)
    assert m.exact_epsilon(params, np.array([[0.5], [1.0]])) is None


@pytest.mark.parametrize(
    "name, noise",
    [("report-noisy-max1", "laplace"), ("report-noisy-max2", "exponential")],
)
@pytest.mark.parametrize("pair", ["one-above", "one-below-rest-above", "x-shuffle"])
def test_report_noisy_max_index_loss_by_scipy_quad(name, noise, pair):
    tx = make_pair(pair, 5)
    exact = MECHANISMS[name].exact_epsilon(_params(name), tx)
    p, q = (_quad_argmax_probs(x, 20.0, noise) for x in tx)
    assert exact == pytest.approx(np.abs(np.log(p) - np.log(q)).max(), abs=1e-9)
    assert exact <= 0.1 + 1e-12  # the index is 0.1-DP


def _numeric_density(t, x, scale, noise, h=1e-4):
    dist = _noise(noise, scale)

    def cdf(s):
        return np.prod(dist.cdf(np.subtract.outer(s, x)), axis=-1)

    return (cdf(t + h) - cdf(t - h)) / (2 * h)


@pytest.mark.parametrize("pair", ["one-above", "one-below-rest-above", "all-below"])
def test_report_noisy_max_value_loss_by_brute_force(pair):
    """The exact sup over t against the log ratio of densities taken by numerical
    differentiation of the CDF of the maximum, on a grid: never above it, and
    within the grid's resolution of it."""
    tx = make_pair(pair, 5)
    exact = MECHANISMS["report-noisy-max3"].exact_epsilon(
        _params("report-noisy-max3"), tx
    )
    t = np.linspace(-200, 200, 8001) + 0.01
    g = [_numeric_density(t, x, 20.0, "laplace") for x in tx]
    brute = np.abs(np.log(g[0]) - np.log(g[1])).max()
    assert brute <= exact + 1e-6
    assert brute >= exact - 2e-3
    expected = {"one-above": 0.05, "all-below": 0.25}  # 1/b and d/b (t -> -inf)
    if pair in expected:
        assert exact == pytest.approx(expected[pair], rel=1e-9)


def test_report_noisy_max_value_with_exponential_noise():
    m, params = MECHANISMS["report-noisy-max4"], NoisyMaxParams(scale=2.0)
    for pair in PATTERNS:  # a different max, or a different multiplicity
        assert m.exact_epsilon(params, make_pair(pair, 5)) == math.inf
    tx = np.array([[2.0, 0.0, 0.0], [2.0, 1.0, 0.0]])  # same max, multiplicity 1
    exact = m.exact_epsilon(params, tx)
    t = 2 + np.geomspace(1e-3, 20, 4000)  # the differences lose the far tail
    g = [_numeric_density(t, x, 2.0, "exponential", h=1e-5) for x in tx]
    brute = np.abs(np.log(g[0]) - np.log(g[1])).max()
    assert math.isfinite(exact) and brute <= exact + 1e-6 and brute >= exact - 1e-3
    assert m.exact_epsilon(params, tx[[0, 0]]) == 0.0


def _quad_single_threshold(x, row, params):
    """P[row] of Alg. 1 / 4 / 6 by scipy's quadrature over the threshold noise."""
    rho = stats.laplace(scale=float(params.threshold_scale))
    nu = stats.laplace(scale=float(params.query_scale))
    threshold = float(params.threshold)

    def integrand(r):
        value = rho.pdf(r)
        for i, y in enumerate(row):
            if y == 1:
                value *= nu.sf(threshold + r - x[i])
            elif y == 0:
                value *= nu.cdf(threshold + r - x[i])
        return value

    kinks = np.sort(np.concatenate([[0.0], x - threshold]))
    edges = np.concatenate([[-np.inf], kinks, [np.inf]])
    return sum(
        integrate.quad(integrand, a, b, epsabs=0, epsrel=1e-12, limit=200)[0]
        for a, b in zip(edges[:-1], edges[1:], strict=True)
    )


# one of the four in the default run, every one in the slow target (8 s each)
@pytest.mark.parametrize(
    "variant, pair",
    [
        ("svt4", "half-half"),
        pytest.param("svt1", "one-above", marks=pytest.mark.slow),
        pytest.param("svt1", "half-half", marks=pytest.mark.slow),
        pytest.param("svt4", "one-above", marks=pytest.mark.slow),
    ],
)
def test_svt_loss_by_scipy_quad(variant, pair):
    tx = make_pair(pair, 10)
    params = _params(variant)
    rows = svt_exact.outputs(10, int(params.cutoff))
    p, q = (np.array([_quad_single_threshold(x, r, params) for r in rows]) for x in tx)
    assert p.sum() == pytest.approx(1.0, abs=1e-9)
    brute = np.abs(np.log(p) - np.log(q)).max()
    exact = MECHANISMS[variant].exact_epsilon(params, tx)
    assert exact == pytest.approx(brute, abs=1e-9)


def test_svt_losses_against_lyu_et_al():
    def worst(name):
        params = _params(name)
        return max(
            MECHANISMS[name].exact_epsilon(params, make_pair(p, 10)) for p in PATTERNS
        )

    assert worst("svt1") <= 0.1 and worst("svt2") <= 0.1  # Alg. 1, 2: eps-DP
    assert 0.1 < worst("svt4") <= (1 + 6 * 1) / 4 * 0.1  # Alg. 4: (1 + 6c) eps / 4
    assert worst("svt6") > 0.4  # Alg. 6 has no cutoff
    assert worst("svt5") == math.inf  # Alg. 5: the queries carry no noise
    # svt5 on a constant pattern: all TRUE iff rho <= x - T, so the loss is 1/b_rho
    all_above = make_pair("all-above-all-below", 10)
    assert MECHANISMS["svt5"].exact_epsilon(_params("svt5"), all_above) == (
        pytest.approx(0.05, rel=1e-9)
    )


@pytest.mark.slow  # 288 adaptive quadratures; the default run checks svt3's loss
# against SciPy per output in tests/test_svt_density.py
def test_svt3_loss_by_scipy_quad():
    """Alg. 3 with c = 1: the log density ratio at the answer v of query k is
    ln f(v - x_k)/f(v - x'_k) + ln G_x(v)/G_x'(v), each G by scipy's quad; its
    largest modulus over a grid stays below the exact supremum and reaches it up
    to the grid's resolution."""
    params = svt_params("svt3", 0.1, 1, 1.0)
    tx = make_pair("one-above-rest-below", 4)
    exact = MECHANISMS["svt3"].exact_epsilon(params, tx)
    rho = stats.laplace(scale=20.0)
    nu = stats.laplace(scale=20.0)

    def log_g(x, k, v):
        def integrand(r):
            return rho.pdf(r) * np.prod(nu.cdf(1.0 + r - x[:k]))

        return math.log(integrate.quad(integrand, -np.inf, v - 1.0, epsrel=1e-12)[0])

    best = 0.0
    for k in range(4):
        for v in np.linspace(-150, 200, 36):
            ratio = nu.logpdf(v - tx[0][k]) - nu.logpdf(v - tx[1][k])
            ratio += log_g(tx[0], k, v) - log_g(tx[1], k, v)
            best = max(best, abs(ratio))
    all_below = np.zeros((1, 4), dtype=np.int8)
    atoms = [svt_exact.single_threshold_log_probs(x, all_below, params)[0] for x in tx]
    quad_atoms = [math.log(_quad_single_threshold(x, [0] * 4, params)) for x in tx]
    np.testing.assert_allclose(atoms, quad_atoms, rtol=1e-10)
    best = max(best, abs(atoms[0] - atoms[1]))
    assert best <= exact + 1e-7
    assert best >= exact - 1e-3
    # as m -> -inf the ratio tends to sum_{i <= k} (x'_i - x_i)/b: 2/b at k = 3
    assert exact == pytest.approx(0.1, abs=1e-9)


def test_svt34_parallel_adds_the_extremes():
    params = _params("svt34-parallel")
    tx = make_pair("one-above", 5)  # the suite's 10 queries cost 3.6x the time
    three = svt_exact._svt3_range(params.svt3, tx)
    four = svt_exact._discrete_range(
        params.svt4, tx, svt_exact.single_threshold_log_probs
    )
    exact = MECHANISMS["svt34-parallel"].exact_epsilon(params, tx)
    assert exact == pytest.approx(max(three[1] + four[1], -(three[0] + four[0])))
    assert exact >= max(three[1], -three[0], four[1], -four[0])
    assert MECHANISMS["svt34-parallel"].exact_epsilon(params, tx[[0, 0]]) == 0.0


@pytest.mark.parametrize(
    "name", [n for n in SUITE_NAMES if n not in ("svt34-parallel", "svt3")]
)
def test_exact_loss_is_symmetric_in_the_pair(name):
    case, params = SUITE[name], _params(name)
    m = MECHANISMS[name]
    for pair in case.pairs[:4:2]:
        tx = make_pair(pair, case.dim)
        assert m.exact_epsilon(params, tx) == pytest.approx(
            m.exact_epsilon(params, tx[::-1]), rel=1e-9
        )


# --- end to end: one audit per broken family ------------------------------------


@pytest.mark.parametrize(
    "name, pair, attack",
    [
        ("noisy-hist2", "one-above", "lr"),
        ("report-noisy-max3", "all-above-all-below", "majority"),
        ("svt5", "one-above", "majority"),
        # 28 s on a cold compilation cache against the others' 1-4 s: the slow target
        pytest.param("svt34-parallel", "half-half", "majority", marks=pytest.mark.slow),
        ("prefix-sum", "one-above-rest-below", "lr"),
    ],
)
def test_audit_runs_on_the_suite(name, pair, attack):
    case = SUITE[name]
    draws = 20_000
    result = mcdp.audit_delta(
        name,
        case.epsilon,
        0.0,
        case.dim,
        draws,
        pair=pair,
        attack=attack,
        confidence=1 - FAIL_PROB,
    )
    counts = np.array(result.counts)
    assert counts.shape[0] == 2 and np.all(counts >= 0)
    assert np.all(counts.sum(axis=1) == draws)
    assert result.pair == pair and result.attack == attack
    # a valid lower bound never exceeds the exact loss (confidence 1 - FAIL_PROB)
    tx = make_pair(pair, case.dim)
    exact = MECHANISMS[name].exact_epsilon(_params(name), tx)
    assert math.isfinite(result.loss_lower) and result.loss_lower <= exact
    if name == "noisy-hist2":
        assert result.violated and result.loss_lower > case.epsilon  # 10 vs 0.1


def test_correct_scalar_mechanisms_audit():
    for name in ("truncated-geometric", "laplace-parallel"):
        case = SUITE[name]
        for pair in case.pairs:
            result = mcdp.audit_delta(
                name, case.epsilon, 0.0, 1, 20_000, pair=pair, attack="lr",
                confidence=1 - FAIL_PROB,
            )  # fmt: skip
            assert not result.violated
            assert result.loss_lower <= case.epsilon * (1 + 1e-9)
