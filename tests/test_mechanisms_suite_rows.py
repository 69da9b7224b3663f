"""The five suite rows of RAPPOR, Numerical Sparse Vector and the float Laplace:
each sampler against its definition, each exact loss against an independent
computation, the registry against its contract.

Stochastic assertions use the fixed key of conftest and spend FAIL_PROB each: a
test that checks k frequencies at once gives each FAIL_PROB / k (Bonferroni), with
its multiplier computed here."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats

import mcdp
from mcdp._bits import bit_order
from mcdp.mechanisms import MECHANISMS, SUITE, LaplaceParams, _base, get_mechanism
from mcdp.mechanisms import float_laplace as fl
from mcdp.mechanisms import numerical_svt as ns
from mcdp.mechanisms import rappor as rp
from mcdp.mechanisms.suite import PEER_PAIRS
from mcdp.pairs import PATTERNS, SCALAR_PAIRS, make_pair

from conftest import FAIL_PROB, assert_one_line_error

ROWS = ["rappor", "one-time-rappor", "numerical-svt", "laplace-float", "snapping"]
N = 200_000


def _z(count: int) -> float:
    """The two-sided multiplier for ``count`` normal checks sharing FAIL_PROB."""
    return float(stats.norm.isf(FAIL_PROB / (2 * count)))


_JITTED = {}  # one jit per mechanism: equal shapes compile once


def _sampler(name):
    return _JITTED.setdefault(name, jax.jit(MECHANISMS[name].sample))


def _sample(name, key, row, n=N, params=None):
    m = MECHANISMS[name]
    case = SUITE[name]
    params = params or m.calibrate(case.epsilon, 0.0, case.dim, 1.0)
    with jax.enable_x64(True):
        x = jnp.broadcast_to(jnp.asarray(row, jnp.float64), (n, len(row)))
        return np.asarray(_sampler(name)(key, x, params))


# --- the registry -----------------------------------------------------------------


def test_the_rows_are_registered_under_their_contract_names():
    assert set(ROWS) <= set(SUITE) and set(ROWS) <= set(MECHANISMS)
    for name in ROWS:
        m = get_mechanism(name)
        assert m.name == name and SUITE[name].mechanism == name
        assert m.exact_epsilon is not None and m.calibrate is not None
        assert PEER_PAIRS[name] in SUITE[name].pairs
        for pair in SUITE[name].pairs:
            assert m.domain.contains(make_pair(pair, SUITE[name].dim)), (name, pair)
    assert [SUITE[n].dim for n in ROWS] == [1, 1, 10, 1, 1]
    assert SUITE["rappor"].pairs == SCALAR_PAIRS
    assert MECHANISMS["rappor"].claim is MECHANISMS["one-time-rappor"].claim is None
    flawed = {n for n in ROWS if MECHANISMS[n].flaw}
    assert flawed == {"laplace-float"}
    assert PEER_PAIRS["numerical-svt"] == "all-above-all-below"


# --- RAPPOR: the hash -------------------------------------------------------------

# Appleby's MurmurHash3_x86_32 test vectors (SMHasher), and mmh3's README example
VECTORS = [
    (b"", 0, 0),
    (b"", 1, 0x514E28B7),
    (b"", 0xFFFFFFFF, 0x81F16F39),
    (b"\0\0\0\0", 0, 0x2362F9DE),
    (b"aaaa", 0x9747B28C, 0x5A97808A),
    (b"Hello, world!", 0x9747B28C, 0x24884CBA),
    (b"The quick brown fox jumps over the lazy dog", 0x9747B28C, 0x2FA826CD),
]


@pytest.mark.parametrize("data, seed, expected", VECTORS)
def test_murmur3_reference_vectors(data, seed, expected):
    assert rp.murmur3_32(data, seed) == expected


def test_murmur3_as_mmh3_reads_it():
    h = rp.murmur3_32(b"foo", 0)
    assert h - (1 << 32) == -156908512  # mmh3.hash("foo"), a signed int


def test_bloom_bits_of_the_spec():
    assert rp.bloom_bits(0) == {0, 11, 18}
    assert rp.bloom_bits(1) == {3, 10, 13}
    tx = rp.bloom_filter_host(np.array([[1.0], [0.0]]))
    assert tx.shape == (2, 20)
    assert set(np.flatnonzero(tx[0])) == {3, 10, 13}


def _integers():
    rng = np.random.default_rng(0)
    extremes = [2**31 - 1, -(2**31 - 1), 10**9, -(10**9), 999_999_999, 9, 10, -10]
    edges = [s * 10**k + e for k in range(10) for s in (1, -1) for e in (-1, 0)]
    random = rng.integers(-(2**31) + 1, 2**31, size=500).tolist()
    return np.array(list(range(-300, 301)) + extremes + edges + random, np.int64)


_murmur = jax.jit(rp.murmur3_decimal, static_argnums=1)
_bloom = jax.jit(rp.bloom_filter)


def test_jax_murmur3_equals_the_host_reference():
    values = _integers()
    values = values[np.abs(values) < 2**31]
    for seed in range(rp.HASHES):
        device = np.asarray(_murmur(jnp.asarray(values, jnp.int32), seed))
        host = [rp.murmur3_32(str(int(v)).encode(), seed) for v in values]
        np.testing.assert_array_equal(device, np.array(host, np.uint32))


def test_jax_bloom_filter_equals_the_host_transform():
    values = _integers()[:, None].astype(np.float64)
    with jax.enable_x64(True):
        device = np.asarray(_bloom(jnp.asarray(values)))
    np.testing.assert_array_equal(device, rp.bloom_filter_host(values) > 0.5)
    small = values[np.abs(values[:, 0]) <= 2**24]  # exact in float32
    device32 = np.asarray(_bloom(jnp.asarray(small, jnp.float32)))
    np.testing.assert_array_equal(device32, rp.bloom_filter_host(small) > 0.5)
    # non-integers round half to even, as np.rint
    halves = np.array([[0.5], [1.5], [-2.5], [0.49]])
    np.testing.assert_array_equal(
        rp.bloom_filter_host(halves), rp.bloom_filter_host(np.rint(halves))
    )


def test_bloom_filter_against_mmh3():
    """The Bloom bits, and the hash under them, are mmh3's (a test extra): on small
    values and on values drawn across the int32 range, and the hash on bytes of
    every tail length under random seeds."""
    mmh3 = pytest.importorskip("mmh3")
    rng = np.random.default_rng(7)
    values = [*range(-10, 11), *rng.integers(-(2**31) + 1, 2**31, 200).tolist()]
    for v in values:
        bits = {mmh3.hash(str(v), seed=s) % 20 for s in range(4)}
        assert rp.bloom_bits(v) == bits
    for length in range(13):
        data = rng.integers(0, 256, length, dtype=np.uint8).tobytes()
        seed = int(rng.integers(0, 2**32))
        assert rp.murmur3_32(data, seed) == mmh3.hash(data, seed, signed=False)


# --- RAPPOR: the coins ------------------------------------------------------------


def test_realised_probabilities():
    # u < c for a float32 uniform k 2^-23: ceil(c 2^23) / 2^23
    assert rp.realised(0.375) == 0.375 and rp.realised(0.75) == 0.75
    assert rp.realised(0.55) == math.ceil(np.float32(0.55) * 2.0**23) / 2.0**23
    one, zero = rp.report_probabilities(rp.rappor_params())
    assert one == pytest.approx(0.5125, abs=1e-7) and zero == pytest.approx(
        0.4875, abs=1e-7
    )
    one, zero = rp.report_probabilities(rp.one_time_rappor_params())
    assert one == pytest.approx(0.525, abs=1e-7) and zero == pytest.approx(
        0.475, abs=1e-7
    )
    with jax.enable_x64(True):
        traced = rp.report_probabilities(rp.rappor_params(), jnp.float64)
    assert [float(v) for v in traced] == list(
        rp.report_probabilities(rp.rappor_params())
    )


@pytest.mark.parametrize("name, value", [("rappor", 0), ("one-time-rappor", 1)])
def test_rappor_reports_each_bit_with_its_probability(key, name, value):
    y = _sample(name, key, [float(value)])
    assert y.shape == (N, 20) and set(np.unique(y)) <= {0.0, 1.0}
    params = MECHANISMS[name].calibrate(0.1, 0.0, 1, 1.0)
    one, zero = rp.report_probabilities(params)
    expected = np.where(rp.bloom_filter_host(np.array([[value]]))[0] > 0.5, one, zero)
    se = np.sqrt(expected * (1 - expected) / N)
    z = _z(20 + 1)  # 20 bits and one correlation
    assert np.all(np.abs(y.mean(axis=0) - expected) <= z * se)
    # the bits are independent: the correlation of two is ~N(0, 1/N)
    r = np.corrcoef(y[:, 0], y[:, 11])[0, 1]
    assert abs(r) * math.sqrt(N) < z


def test_rappor_is_randomised_response_on_the_permanent_bits(key):
    """Steps 2 and 3 as DP-Sniper's code: a naive draw of the same coins."""
    params = rp.rappor_params()
    n = N  # the shape of the other RAPPOR tests: one compilation
    y = _sample("rappor", key, [0.0], params=params)
    with jax.enable_x64(True):
        u = np.asarray(
            jax.random.uniform(
                jax.random.fold_in(key, rp.PERMANENT_KEY), (n, 20), jnp.float32
            )
        )
        v = np.asarray(
            jax.random.uniform(
                jax.random.fold_in(key, rp.INSTANTANEOUS_KEY), (n, 20), jnp.float32
            )
        )
    bloom = np.broadcast_to(np.isin(np.arange(20), [0, 11, 18]), (n, 20))
    f, p, q = (np.float32(c) for c in params)
    permanent = np.where(u < f / 2, True, np.where(u < f, False, bloom))
    np.testing.assert_array_equal(y, (v < np.where(permanent, q, p)).astype(float))


# --- RAPPOR: the exact loss ---------------------------------------------------------


def test_rappor_exact_losses_of_the_spec():
    m = MECHANISMS["rappor"]
    params = m.calibrate(0.1, 0.0, 1, 1.0)
    tx = m.transformed(np.array([[1.0], [0.0]]), params)
    per_bit = math.log(0.5125 / 0.4875)
    assert m.exact_epsilon(params, tx) == pytest.approx(6 * per_bit, rel=1e-6)
    assert m.exact_epsilon(params, tx) == pytest.approx(0.30006, abs=5e-6)
    worst = max(
        m.exact_epsilon(params, m.transformed(np.array([[a], [b]]), params))
        for a in range(-10, 11)
        for b in range(a, 11)
    )
    assert worst == pytest.approx(8 * per_bit, rel=1e-6)  # 0.40008
    one_time = MECHANISMS["one-time-rappor"]
    p1 = one_time.calibrate(0.1, 0.0, 1, 1.0)
    loss = one_time.exact_epsilon(
        p1, one_time.transformed(np.array([[1.0], [0.0]]), p1)
    )
    assert loss == pytest.approx(6 * math.log(0.525 / 0.475), rel=1e-6)  # 0.60050
    assert rp.rappor_epsilon_bound(p1) == pytest.approx(0.80067, abs=1e-5)
    assert m.exact_epsilon(params, tx[[0, 0]]) == 0.0


@pytest.mark.parametrize("name", ["rappor", "one-time-rappor"])
def test_rappor_loss_by_enumerating_every_report(name):
    """All 2^20 reports of (1) vs (0): their probabilities (a product over the
    bits) sum to 1, the density ratio of each agrees with ``privacy_loss``, and
    its largest modulus is ``exact_epsilon``."""
    m = MECHANISMS[name]
    params = m.calibrate(0.1, 0.0, 1, 1.0)
    tx = m.transformed(np.array([[1.0], [0.0]]), params)
    one, zero = rp.report_probabilities(params)
    y = ((np.arange(1 << 20)[:, None] >> np.arange(20)) & 1).astype(np.float64)

    def log_prob(bloom):
        pi = np.where(bloom > 0.5, one, zero)
        return np.sum(np.where(y > 0.5, np.log(pi), np.log1p(-pi)), axis=1)

    log_p, log_q = log_prob(tx[0]), log_prob(tx[1])
    assert np.exp(log_p).sum() == pytest.approx(1.0, abs=1e-10)
    with jax.enable_x64(True):
        loss = np.asarray(jax.jit(m.privacy_loss)(jnp.asarray(y), tx[0], tx[1], params))
    np.testing.assert_allclose(loss, log_p - log_q, rtol=1e-10, atol=1e-12)
    assert np.abs(loss).max() == pytest.approx(m.exact_epsilon(params, tx), rel=1e-10)


# --- Numerical Sparse Vector --------------------------------------------------------


def test_numerical_svt_params():
    p = ns.numerical_svt_params(0.1)
    assert p == pytest.approx((30.0, 120.0, 60.0, 1.0, 2))
    assert MECHANISMS["numerical-svt"].calibrate(0.1, 0.0, 10, 1.0) == p
    with pytest.raises(ValueError, match="cutoff"):
        ns.numerical_svt_params(0.1, cutoff=0)


def test_numerical_svt_against_a_naive_loop_on_the_same_noise(key):
    """DP-Sniper's ``NumericalSVT.m``, one query at a time, on the sampler's noise
    (the shapes of the next test: the eager primitives compile once)."""
    x = np.array([1.0, 3.0, -1.0, 2.0])
    params = ns.numerical_svt_params(1.0, cutoff=2, threshold=1.5)
    n, d = N, x.size

    with jax.enable_x64(True):
        y = np.asarray(
            ns.numerical_svt_sample(key, jnp.broadcast_to(x, (n, d)), params)
        )
        noise = np.asarray(_base.standard_laplace(key, (n, 1 + 2 * d), jnp.float64))
    rho1, rho2, rho3 = (
        3.0 * noise[:, :1],
        12.0 * noise[:, 1 : 1 + d],
        6.0 * noise[:, 1 + d :],
    )
    out = np.zeros((n, d))
    count = np.zeros(n)
    aborted = np.zeros(n, bool)
    for i in range(d):
        above = x[i] + rho2[:, i] >= 1.5 + rho1[:, 0]
        out[above, i] = x[i] + rho3[above, i]
        count += above
        out[aborted, i] = ns.ABORTED
        aborted |= count == 2
    codes = np.isin(out, [0.0, ns.ABORTED])
    np.testing.assert_array_equal(np.isin(y, [0.0, ns.ABORTED]), codes)
    np.testing.assert_array_equal(y[codes], out[codes])
    # XLA may fuse x + b * noise into one multiply-add: the last bit may differ
    np.testing.assert_allclose(y[~codes], out[~codes], rtol=1e-15, atol=1e-15)


def test_numerical_svt_outputs_follow_the_exact_law(key):
    """Pattern frequencies against the exact pattern probabilities (χ²), and the
    released answers against x_i + Lap(3c/ε) (KS)."""
    x = np.array([0.0, 2.0, 1.0, 3.0])
    params = ns.numerical_svt_params(1.0)
    rows, log_probs = ns.pattern_log_probs(x, params)
    expected = np.exp(log_probs)
    assert expected.sum() == pytest.approx(1.0, abs=1e-10)
    y = _sample("numerical-svt", key, x, params=params)
    pattern = np.where(y == ns.ABORTED, -1, np.where(y == ns.BELOW, 0, 1))
    codes = {row.tobytes(): i for i, row in enumerate(rows.astype(np.int8))}
    observed = np.bincount(
        [codes[r.tobytes()] for r in pattern.astype(np.int8)], minlength=len(rows)
    )
    possible = expected > 0
    assert observed[~possible].sum() == 0
    chi2 = stats.chisquare(observed[possible], expected[possible] * N)
    assert chi2.pvalue > FAIL_PROB / 2
    answers = (y - x)[pattern == 1] / 6.0
    assert stats.kstest(answers, stats.laplace.cdf).pvalue > FAIL_PROB / 2


def _quad_patterns(x, rows, params):
    """P[pattern] of every row by scipy's adaptive quadrature (``quad_vec``) over
    the threshold noise rho_1, with the Laplace laws written out here."""
    b1, b2 = float(params.threshold_scale), float(params.query_scale)
    t = float(params.threshold)
    above, below = (rows == 1), (rows == 0)

    def integrand(r):
        z = t + r - x  # query i is above iff rho_2 >= z_i
        sf = np.where(
            z >= 0, 0.5 * np.exp(-np.abs(z) / b2), 1 - 0.5 * np.exp(-np.abs(z) / b2)
        )
        density = math.exp(-abs(r) / b1) / (2 * b1)
        return density * np.prod(
            np.where(above, sf, np.where(below, 1 - sf, 1.0)), axis=1
        )

    kinks = np.unique(np.append(x - t, 0.0))
    pieces = np.concatenate([[-np.inf], kinks, [np.inf]])
    return sum(
        integrate.quad_vec(integrand, a, b, epsabs=0, epsrel=1e-12)[0]
        for a, b in zip(pieces[:-1], pieces[1:], strict=True)
    )


def test_numerical_svt_loss_of_the_spec_by_scipy_quad():
    """[2]*10 vs [1]*10 at ε = 0.1: every pattern's probability by scipy's quad,
    each answer's Laplace ratio at its extreme ±1/b_3: 0.0588."""
    m = MECHANISMS["numerical-svt"]
    params = m.calibrate(0.1, 0.0, 10, 1.0)
    tx = make_pair("all-above-all-below", 10)[::-1]
    rows, _ = ns.pattern_log_probs(tx[0], params)
    p, q = (_quad_patterns(x, rows, params) for x in tx)
    assert p.sum() == pytest.approx(1.0, abs=1e-9)
    answers = (rows == 1).sum(axis=1) / 60.0
    ratio = np.log(p) - np.log(q)
    brute = max(np.max(ratio + answers), -np.min(ratio - answers))
    exact = m.exact_epsilon(params, tx)
    assert exact == pytest.approx(brute, abs=1e-9)
    assert exact == pytest.approx(0.0588, abs=5e-5)
    worst = max(m.exact_epsilon(params, make_pair(pat, 10)) for pat in PATTERNS)
    assert exact < worst <= 0.1  # Wang et al.: epsilon-DP


# --- laplace-float ------------------------------------------------------------------


def _numpy_laplace(loc, u, scale):
    """numpy/random/src/distributions/distributions.c, random_laplace."""
    with np.errstate(divide="ignore"):
        return np.where(
            u >= 0.5, loc - scale * np.log(2.0 - u - u), loc + scale * np.log(u + u)
        )


def test_laplace_float_is_numpys_formula_on_the_same_uniforms(key):
    x = 1.0
    with jax.enable_x64(True):
        y = _sample("laplace-float", key, [x])[:, 0]
        words = np.asarray(jax.random.bits(key, (2, N, 1), jnp.uint64))[:, :, 0]
        k = np.asarray(fl.textbook_integers(key, (N, 1)))[:, 0]
        eager = np.asarray(fl.textbook_laplace(jnp.full(N, x), jnp.asarray(k), 10.0))
    np.testing.assert_array_equal(k, words[0] >> np.uint64(11))  # NumPy's k
    assert np.all(k > 0)  # P[k = 0] = 2^-53: the retry is never used here
    u = k.astype(np.float64) * 2.0**-53
    assert np.all(u == k / 2.0**53)  # exact
    reference = _numpy_laplace(x, u, 10.0)
    # XLA's log may round differently from the C library's in the last bit: the
    # noise moves by an ulp of itself, the sum by that and its own rounding
    noise = reference - x
    tolerance = 2 * (np.spacing(np.abs(noise)) + np.spacing(np.abs(reference)))
    assert np.all(np.abs(y - reference) <= tolerance)
    assert np.mean(y == reference) > 0.99  # products rounded before the sum
    np.testing.assert_array_equal(y, eager)  # jit and eager agree exactly
    assert stats.kstest((y - x) / 10.0, stats.laplace.cdf).pvalue > FAIL_PROB


def test_laplace_float_loss_is_infinite():
    m = MECHANISMS["laplace-float"]
    params = m.calibrate(0.1, 0.0, 1, 1.0)
    assert params == LaplaceParams(scale=10.0)
    for pair in SCALAR_PAIRS:
        assert m.exact_epsilon(params, make_pair(pair, 1)) == math.inf
    assert m.exact_epsilon(params, np.array([[0.5], [0.5]])) == 0.0
    # the witness at x = 0, x' = 1: the output 0.0 (U = 1/2) would need noise
    # exactly -1 under x', and no k' near the real preimage gives it
    ks = np.round(2.0**52 * np.exp(-0.1)) + np.arange(-2000, 2001)
    noise = 10.0 * np.log(ks / 2.0**52)
    assert not np.any(1.0 + noise == 0.0)


@pytest.mark.parametrize("name", ["laplace-float", "snapping"])
def test_float64_only_mechanisms_refuse_float32(name, capsys):
    with pytest.raises(ValueError, match="dtype='float64'") as info:
        mcdp.audit_delta(
            name, 0.1, 0.0, 1, 1000, pair="scalar-0-1", attack="majority",
            dtype="float32",
        )  # fmt: skip
    assert "\n" not in str(info.value) and name in str(info.value)
    assert_one_line_error(
        capsys,
        ["audit", "--mechanism", name, "--epsilon", "0.1", "--dim", "1",
         "--pair", "scalar-0-1", "--attack", "majority", "--dtype", "float32",
         "--draws", "1000"],
        "dtype",
    )  # fmt: skip


# --- snapping -------------------------------------------------------------------------


def test_snapping_params():
    p = fl.snapping_params(0.1)
    assert p.scale == (1 + 100 * 2.0**-49) / 0.1 and p.grid == 16.0 and p.bound == 100.0
    assert fl.snapping_params(1 / 16 * (1 + 100 * 2.0**-49)).grid == 16.0  # lambda = 16
    with pytest.raises(ValueError, match="bound"):
        fl.snapping_params(0.01, bound=50.0)  # lambda = 100 > B
    # 0 twice, as -0.0 and 0.0: the two outputs' bits differ
    levels = fl.snapping_levels(p)
    assert levels.tolist() == (
        [-100.0, *range(-96, -15, 16), -0.0, 0.0, *range(16, 97, 16), 100.0]
    )
    assert np.signbit(levels).tolist() == [True] * 8 + [False] * 8


def _numpy_snapping(loc, k, negative, p):
    """DP-Sniper's LaplaceFixed.m on given (k, sign), U = 1 - k 2^-53."""
    u = 1.0 - k.astype(np.float64) * 2.0**-53
    sign = np.where(negative, -1.0, 1.0)
    noisy = np.clip(loc, -p.bound, p.bound) + sign * p.scale * np.log(u)
    return np.clip(np.round(noisy / p.grid) * p.grid, -p.bound, p.bound)


@pytest.mark.parametrize("loc", [0.0, 1.0, 150.0])
def test_snapping_outputs_follow_the_exact_counts(key, loc):
    p = fl.snapping_params(0.1)
    y = _sample("snapping", key, [loc])[:, 0]
    levels = fl.snapping_levels(p)
    assert np.all(np.isin(y, levels))  # on the grid 16, or at +-100
    with jax.enable_x64(True):
        k, low = (np.asarray(a)[:, 0] for a in fl.uniform_integers(key, (N, 1)))
    np.testing.assert_array_equal(y, _numpy_snapping(loc, k, low == 1, p))
    counts = fl.snapping_log_probs(min(loc, 100.0), p)
    assert sum(int(c) for c in counts) == 2**54
    bits = bit_order(np, y)
    observed = np.array([np.sum(bits == v) for v in bit_order(np, levels)])
    chi2 = stats.chisquare(observed, counts / 2.0**54 * N)
    assert chi2.pvalue > FAIL_PROB


def _ideal_snapping(loc, p):
    """The law in real arithmetic: Laplace(lambda) mass of each output's cell."""
    levels = fl.snapping_levels(p)
    half = p.grid / 2  # output v for noisy in [v - half, v + half); +-B past the rest
    # -0.0 for noisy in [-half, 0), 0.0 in [0, half)
    uppers = [0.0 if v == 0 and np.signbit(v) else v + half for v in levels[1:-1]]
    edges = [-math.inf, levels[1] - half, *uppers, math.inf]
    cdf = stats.laplace(loc=loc, scale=p.scale).cdf
    return np.diff([cdf(e) for e in edges])


def test_snapping_exact_loss_of_the_spec():
    """0.1 + 5.3e-13 on (0, 1) at ε = 0.1, from exact counts; the real-arithmetic
    law is within 1e-10 of them in every output, and its loss is 1/lambda < 0.1."""
    m = MECHANISMS["snapping"]
    p = m.calibrate(0.1, 0.0, 1, 1.0)
    exact = m.exact_epsilon(p, m.transformed(make_pair("scalar-0-1", 1), p))
    assert 5.2e-13 < exact - 0.1 < 5.5e-13
    for loc in (0.0, 1.0):
        counts = fl.snapping_log_probs(loc, p).astype(np.float64) / 2.0**54
        np.testing.assert_allclose(counts, _ideal_snapping(loc, p), rtol=1e-10)
    ideal = np.log(_ideal_snapping(0.0, p)) - np.log(_ideal_snapping(1.0, p))
    assert np.abs(ideal).max() == pytest.approx(1 / p.scale, rel=1e-9)
    assert abs(exact - np.abs(ideal).max()) < 1e-11
    # inputs beyond B are clamped: 150 and 100 are the same input
    far = m.transformed(np.array([[150.0], [100.0]]), p)
    assert m.exact_epsilon(p, far) == 0.0
