"""The Gaussian and truncated Laplace mechanisms of the TrLaplace paper: samplers
against their distributions (KS, moments, support), calibration against the paper's
formulas, tail probabilities and privacy losses against direct evaluation."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats

from mcdp.exact import exact_e2
from mcdp.mechanisms import get_mechanism, trlaplace_min_dim
from mcdp.mechanisms._base import laplace_log_sf
from mcdp.mechanisms.gaussian import (
    gaussian_log_sf,
    gaussian_params,
    gaussian_privacy_loss,
    gaussian_sample,
)
from mcdp.mechanisms.trlaplace import (
    MAX_DIM_SEARCH,
    TrLaplaceParams,
    _inverse_cdf,
    _ratio,
    trlaplace_cdf,
    trlaplace_log_sf,
    trlaplace_moment,
    trlaplace_normalizer,
    trlaplace_params,
    trlaplace_privacy_loss,
    trlaplace_sample,
    trlaplace_variance,
)

from conftest import FAIL_PROB, Z

N = 100_000
# (epsilon, delta, d, C): alpha*A = ln 2 (visibly Laplace-shaped), and two paper
# settings, one nearly uniform (alpha*A ~ 1.5e-3) and one at epsilon = 20.
CASES = [(1.0, 1 / 16, 4, 0.5), (0.05, 1 / 1200, 300, 1.0), (20.0, 1 / 1200, 300, 2.0)]
PAPER = [(eps, 300) for eps in (0.05, 0.1, 0.2, 0.5, 1, 5)] + [(10, 500), (20, 1700)]


def _noise(sample, key, params, dtype, use_jit, shape=(N // 4, 4)):
    with jax.enable_x64(dtype == "float64"):
        x = jnp.zeros(shape, dtype)
        f = jax.jit(sample) if use_jit else sample
        return np.asarray(f(key, x, params)).astype(np.float64).ravel()


@pytest.mark.parametrize("use_jit", [False, True])
@pytest.mark.parametrize("case", CASES)
def test_trlaplace_ks(key, case, use_jit):
    p = trlaplace_params(*case)
    eta = _noise(trlaplace_sample, key, p, "float64", use_jit)
    assert stats.kstest(eta, lambda t: trlaplace_cdf(t, p)).pvalue > FAIL_PROB


def test_trlaplace_ks_float32(key):
    p = trlaplace_params(*CASES[0])
    eta = _noise(trlaplace_sample, key, p, "float32", True)
    assert stats.kstest(eta, lambda t: trlaplace_cdf(t, p)).pvalue > FAIL_PROB


@pytest.mark.parametrize("case", CASES)
def test_trlaplace_variance_and_support(key, case):
    """mean(eta^2) estimates Var = E eta^2 (E eta = 0) with standard error
    sqrt((E eta^4 - Var^2) / n), both moments analytic."""
    p = trlaplace_params(*case)
    eta = _noise(trlaplace_sample, key, p, "float64", True)
    var, m4 = trlaplace_variance(p), trlaplace_moment(p, 4)
    assert abs(np.mean(eta**2) - var) <= Z * math.sqrt((m4 - var**2) / eta.size)
    assert np.all(np.abs(eta) <= p.bound)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", CASES)
def test_inverse_cdf_at_the_extreme_uniforms_stays_in_support(case, dtype):
    p = trlaplace_params(*case)
    with jax.enable_x64(dtype == "float64"):
        half_step = np.finfo(dtype).eps / 2
        u = jnp.asarray([half_step, 0.5 - half_step, 0.5 + half_step, 1 - half_step])
        u = u.astype(dtype)
        a, b = jnp.asarray(p.alpha, dtype), jnp.asarray(p.bound, dtype)
        eta = np.asarray(_inverse_cdf(u, a, b)).astype(np.float64)
        bound = float(jnp.asarray(p.bound, dtype))
    assert np.all(np.abs(eta) <= bound)
    assert eta[0] == -eta[3] and eta[1] == -eta[2]  # symmetric
    assert eta[3] == pytest.approx(bound, rel=100 * float(half_step))


@pytest.mark.parametrize("case", CASES)
def test_inverse_cdf_inverts_the_cdf(case):
    """Deterministic quantile "samples": cdf(inverse_cdf(u)) == u."""
    p = trlaplace_params(*case)
    u = (np.arange(1000) + 0.5) / 1000
    with jax.enable_x64(True):
        eta = np.asarray(_inverse_cdf(jnp.asarray(u), p.alpha, p.bound))
    np.testing.assert_allclose(trlaplace_cdf(eta, p), u, rtol=1e-12)


def test_sample_clips_then_adds_bounded_noise(key):
    p = trlaplace_params(1.0, 1 / 16, 4, 0.5)
    with jax.enable_x64(True):
        x = jnp.asarray([[3.0, 4.0, 0.0, 0.0], [0.1, 0.0, 0.0, -0.2]])
        y = np.asarray(trlaplace_sample(key, jnp.tile(x, (1000, 1)), p))
    clipped = np.tile([[0.3, 0.4, 0.0, 0.0], [0.1, 0.0, 0.0, -0.2]], (1000, 1))
    assert np.all(np.abs(y - clipped) <= p.bound * (1 + 1e-15))


@pytest.mark.parametrize(
    "epsilon, delta, d",
    [(1.0, 1 / 16, 4), (0.05, 1e-5, 300), (20.0, 1 / 6800, 1700), (3.0, 0.2, 7)],
)
def test_normalizer_identity(epsilon, delta, d):
    """B = 2(1 - e^{-alpha A})/alpha = Delta_inf / delta^{1/d} (Thm 3); density
    integrates to 1."""
    clip = 0.7
    p = trlaplace_params(epsilon, delta, d, clip)
    assert p.alpha == pytest.approx(epsilon / (2 * math.sqrt(d) * clip), rel=1e-15)
    big_b = trlaplace_normalizer(p)
    assert big_b == pytest.approx(2 * clip / delta ** (1 / d), rel=1e-12)
    mass = integrate.quad(lambda t: math.exp(-p.alpha * abs(t)), -p.bound, p.bound)
    assert mass[0] / big_b == pytest.approx(1.0, rel=1e-10)


@pytest.mark.parametrize(
    "epsilon, delta", [(40.0, 1 / 1200), (2.0, 1e-5), (1.0, 0.5), (100.0, 1e-9)]
)
def test_precondition_error_names_the_smallest_dimension(epsilon, delta):
    needed = trlaplace_min_dim(epsilon, delta)
    assert _ratio(epsilon, delta, needed) <= 1
    assert needed == 1 or _ratio(epsilon, delta, needed - 1) > 1
    trlaplace_params(epsilon, delta, needed, 1.0)
    if needed > 1:
        with pytest.raises(ValueError, match=rf"smallest d .* is {needed} \("):
            trlaplace_params(epsilon, delta, needed - 1, 1.0)


def test_precondition_without_a_sane_dimension():
    assert trlaplace_min_dim(1e7, 1 / 1200) is None  # needs d ~ eps^2 / 4 > 2^40
    with pytest.raises(ValueError, match=f"no d <= {MAX_DIM_SEARCH} satisfies it"):
        trlaplace_params(1e7, 1 / 1200, 300, 1.0)


def test_e2_precondition_uses_delta_one_over_4d():
    m = get_mechanism("trlaplace")
    # g(d) = 2 (4d)^{-1/d} sqrt(d): 0.5 at d = 1, 1 at d = 2, 2 at d = 4
    with pytest.raises(ValueError, match=r"delta=1/\(4d\); the smallest d .* is 2 "):
        m.calibrate_sanity_check(0.6, 1)
    assert trlaplace_min_dim(10.0, lambda d: 1 / (4 * d)) == 34
    with pytest.raises(ValueError, match=r"is 34 \("):
        m.calibrate_sanity_check(10.0, 32)


@pytest.mark.parametrize("epsilon, d", PAPER)
def test_paper_settings_satisfy_the_precondition(epsilon, d):
    assert _ratio(epsilon, 1 / (4 * d), d) <= 1
    trlaplace_params(epsilon, 1 / (4 * d), d, 1.0)


def test_dummy_dimensions_were_not_needed_at_d_300():
    """At d = 300, delta = 1/1200 the bound is 2 delta^{1/d} sqrt(d) = 33.83, so
    epsilon = 10 and 20 already satisfy Thm 3 (the paper pads to 500 and 1700)."""
    bound = 2 * (1 / 1200) ** (1 / 300) * math.sqrt(300)
    assert bound == pytest.approx(33.8319, abs=1e-4)
    for epsilon in (10.0, 20.0):
        trlaplace_params(epsilon, 1 / 1200, 300, 1.0)
    with pytest.raises(ValueError, match="smallest d that satisfies it is 303"):
        trlaplace_params(34.0, 1 / 1200, 300, 1.0)


@pytest.mark.parametrize("epsilon, d", PAPER)
def test_the_support_slab_carries_far_more_than_delta(epsilon, d):
    """+C e_1 vs -C e_1: S = {y_1 > A - C} is impossible from -C e_1 and has
    probability P[eta >= A - 2C] ~ delta^{1/d} from +C e_1, so delta_true >= that."""
    p = trlaplace_params(epsilon, 1 / (4 * d), d, 1.0)
    mass = math.exp(trlaplace_log_sf(p.bound - 2.0, p)[0])
    assert mass > 0.8 > 1 / (4 * d)


@pytest.mark.parametrize("case", CASES)
def test_variance_formula(case):
    p = trlaplace_params(*case)
    a, big_a, big_b = p.alpha, p.bound, trlaplace_normalizer(p)
    var = trlaplace_variance(p)
    paper = -2 / (a * big_b) * big_a * math.exp(-a * big_a) * (big_a + 2 / a)
    assert var == pytest.approx(paper + 2 / a**2, rel=1e-9)  # eq. 7
    for k in (2, 4):
        numeric = integrate.quad(
            lambda t, k=k: t**k * math.exp(-a * t) * 2 / big_b, 0, big_a
        )[0]
        assert trlaplace_moment(p, k) == pytest.approx(numeric, rel=1e-10)
    assert var < 2 / a**2  # Laplace's variance (Thm 4)
    assert var <= big_a**2 / 3  # the uniform on [-A, A]


@pytest.mark.parametrize("case", CASES)
def test_trlaplace_log_sf_against_integration(case):
    p = trlaplace_params(*case)
    big_a, big_b = p.bound, trlaplace_normalizer(p)
    ts = np.array([-2 * big_a, -big_a, -0.7 * big_a, -1e-3, 0, 0.4 * big_a, big_a, 9])
    log_ge, log_lt = trlaplace_log_sf(ts, p)
    for t, ge in zip(ts, log_ge, strict=True):
        lo = min(max(t, -big_a), big_a)  # integrate each side of the kink at 0
        mass = sum(
            integrate.quad(lambda s: math.exp(-p.alpha * abs(s)) / big_b, a, b)[0]
            for a, b in ((lo, min(0, big_a)), (max(lo, 0), big_a))
            if a < b
        )
        assert math.exp(ge) == pytest.approx(mass, rel=1e-12, abs=1e-300)
    np.testing.assert_allclose(np.logaddexp(log_ge, log_lt), 0.0, atol=1e-15)
    np.testing.assert_allclose(np.exp(log_lt), trlaplace_cdf(ts, p), rtol=1e-12)


def test_gaussian_log_sf_against_scipy():
    t, sigma = np.linspace(-30, 30, 61), 1.7
    log_ge, log_lt = gaussian_log_sf(t, sigma)
    np.testing.assert_allclose(np.exp(log_ge), stats.norm.sf(t, scale=sigma))
    np.testing.assert_allclose(np.exp(log_lt), stats.norm.cdf(t, scale=sigma))
    assert np.all(np.isfinite(log_ge)) and np.all(np.isfinite(log_lt))


def test_gaussian_sigma_by_hand():
    p = gaussian_params(epsilon=0.5, delta=1e-5, clip=2.0)
    assert p.sigma**2 == pytest.approx(8 * 4 * math.log(125_000) / 0.25, rel=1e-14)
    for bad in ({"delta": 1.0}, {"delta": 0.0}, {"epsilon": math.inf}, {"clip": 0}):
        kwargs = {"epsilon": 0.5, "delta": 1e-5, "clip": 2.0} | bad
        with pytest.raises(ValueError, match="Expected"):
            gaussian_params(**kwargs)


@pytest.mark.parametrize("use_jit", [False, True])
def test_gaussian_ks(key, use_jit):
    p = gaussian_params(1.0, 1e-5, 0.5)
    eta = _noise(gaussian_sample, key, p, "float64", use_jit)
    assert stats.kstest(eta, stats.norm(scale=p.sigma).cdf).pvalue > FAIL_PROB


def test_gaussian_privacy_loss_against_log_densities():
    rng = np.random.default_rng(0)
    p = gaussian_params(1.0, 1e-5, 0.5)
    x, x_prime = np.array([0.5, 0.0, 0.0]), np.array([-0.5, 0.0, 0.0])
    y = rng.normal(scale=p.sigma, size=(50, 3))
    direct = stats.norm.logpdf(y, x, p.sigma).sum(-1) - stats.norm.logpdf(
        y, x_prime, p.sigma
    ).sum(-1)
    with jax.enable_x64(True):
        loss = np.asarray(gaussian_privacy_loss(jnp.asarray(y), x, x_prime, p))
    np.testing.assert_allclose(loss, direct, rtol=1e-10, atol=1e-12)


def test_trlaplace_privacy_loss_against_log_densities():
    p = trlaplace_params(0.8, 1 / 8, 2, 0.5)  # A ~ 2.85: supports overlap in part
    big_a, log_b = p.bound, math.log(trlaplace_normalizer(p))
    x, x_prime = np.array([0.5, 0.0]), np.array([-0.5, 0.0])
    grid = np.linspace(-4, 4, 41)
    y = np.stack(np.meshgrid(grid, [0.0, 1.2, 3.0]), -1).reshape(-1, 2)

    def log_density(y, mean):
        dist = np.abs(y - mean)
        return np.where(dist <= big_a, -p.alpha * dist - log_b, -np.inf).sum(-1)

    with np.errstate(invalid="ignore"):
        direct = log_density(y, x) - log_density(y, x_prime)
    both_out = np.isinf(log_density(y, x)) & np.isinf(log_density(y, x_prime))
    with jax.enable_x64(True):
        loss = np.asarray(trlaplace_privacy_loss(jnp.asarray(y), x, x_prime, p))
    assert not np.any(np.isnan(loss))
    assert np.all(loss[both_out] == 0)
    np.testing.assert_allclose(loss[~both_out], direct[~both_out], rtol=1e-12)
    assert {-np.inf, np.inf} <= set(loss) and np.isfinite(loss).sum() > 10


@pytest.mark.parametrize("name", ["gaussian", "trlaplace"])
def test_exact_e2(name):
    """C = sqrt(d) leaves 1^d unclipped. At d = 1 the attack is one rounding:
    p = P[eta >= 1/2], q = P[eta >= -1/2] = 1 - p, loss = ln((1 - p)/p)."""
    m = get_mechanism(name)
    for epsilon, d in [(1.0, 4), (0.4, 1), (0.1, 32), (10.0, 128)]:
        exact = exact_e2(m, m.calibrate_sanity_check(epsilon, d), d)
        assert math.isfinite(exact.loss) and exact.loss > 0
        assert exact.p1 < exact.q1
    params = m.calibrate_sanity_check(0.4, 1)
    exact = exact_e2(m, params, 1)
    log_p = m.log_round_one(np.zeros((1, 1)), params)[0].item()
    assert exact.log_p1 == pytest.approx(log_p, rel=1e-12)
    assert exact.loss == pytest.approx(math.log(-math.expm1(log_p)) - log_p, rel=1e-9)


def test_samplers_take_parameters_as_arrays_under_jit(key):
    """The engine passes parameters as arrays of the run's dtype: no re-trace,
    no promotion errors."""
    for sample, params in [
        (trlaplace_sample, trlaplace_params(1.0, 1 / 16, 4, 0.5)),
        (gaussian_sample, gaussian_params(1.0, 1e-5, 0.5)),
    ]:
        for dtype in ("float32", "float64"):
            with jax.enable_x64(dtype == "float64"):
                device = jax.tree.map(lambda v, dt=dtype: jnp.asarray(v, dt), params)
                y = jax.jit(sample)(key, jnp.ones((8, 4), dtype), device)
                assert y.dtype == dtype and bool(jnp.all(jnp.isfinite(y)))


def test_boundary_case_is_laplace(key):
    """epsilon = 2 delta^{1/d} sqrt(d) gives A = inf: Laplace noise of scale
    1/alpha."""
    p = TrLaplaceParams(clip=1.0, alpha=0.5, bound=math.inf)
    t = np.linspace(-40, 40, 81)
    for ours, laplace in zip(
        trlaplace_log_sf(t, p), laplace_log_sf(t, 2.0), strict=True
    ):
        np.testing.assert_allclose(ours, laplace, rtol=1e-12)
    assert trlaplace_variance(p) == pytest.approx(2 * 2.0**2, rel=1e-14)
    assert trlaplace_normalizer(p) == pytest.approx(2 * 2.0, rel=1e-15)
    eta = _noise(trlaplace_sample, key, p, "float64", True)
    assert stats.kstest(eta, stats.laplace(scale=2.0).cdf).pvalue > FAIL_PROB
