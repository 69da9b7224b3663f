"""Samplers against their distributions (KS with a stated false-alarm probability),
clipping against its definition, the registry against its contract."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import mcdp
from mcdp import sampling
from mcdp.cli._text import render
from mcdp.exact import laplace_delta
from mcdp.mechanisms import (
    MECHANISMS,
    NAN_POLICIES,
    SUITE,
    LaplaceParams,
    Mechanism,
    _base,
    adept_params,
    dptext_params,
    get_mechanism,
    laplace_params,
)
from mcdp.mechanisms._base import clip_norm, standard_laplace, uniform_midpoint

from conftest import FAIL_PROB, SEED, Z

N = 200_000


def _draw(fn, key, dtype, use_jit):
    with jax.enable_x64(dtype == "float64"):
        f = jax.jit(fn) if use_jit else fn
        return np.asarray(f(key)).astype(np.float64)


@pytest.mark.parametrize("use_jit", [False, True])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_standard_laplace_ks(key, dtype, use_jit):
    x = _draw(lambda k: standard_laplace(k, (N,), dtype), key, dtype, use_jit)
    assert stats.kstest(x, stats.laplace.cdf).pvalue > FAIL_PROB


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_uniform_midpoint_is_open_and_symmetric(key, dtype):
    u = _draw(lambda k: uniform_midpoint(k, (N,), dtype), key, dtype, True)
    assert u.min() > 0 and u.max() < 1
    eps = np.finfo(dtype).eps
    # every value is an odd multiple of eps/2
    assert np.all(np.mod(np.round(u / (eps / 2)), 2) == 1)


def test_laplace_sample_adds_scaled_noise(key):
    m = get_mechanism("laplace")
    with jax.enable_x64(True):
        x = jnp.full((N, 1), 3.0)
        y = np.asarray(m.sample(key, x, laplace_params(2.0, sensitivity=4.0)))
    assert (
        stats.kstest(y.ravel(), stats.laplace(loc=3.0, scale=2.0).cdf).pvalue
        > FAIL_PROB
    )


def test_dptext_resample_is_exponential(key):
    """u | u <= 1/2 gives 1 - 2u ~ U(0, 1), so eta = -b ln(1 - 2u) ~ Exp(mean b)."""
    m = get_mechanism("dptext")
    with jax.enable_x64(True):
        y = np.asarray(
            m.sample(key, jnp.zeros((N, 1)), dptext_params(1.0, 2.0, "resample"))
        )
    assert stats.kstest(y.ravel(), stats.expon(scale=2.0).cdf).pvalue > FAIL_PROB


@pytest.mark.parametrize("policy", NAN_POLICIES)
def test_dptext_policies(key, policy):
    m = get_mechanism("dptext")
    with jax.enable_x64(True):
        y = np.asarray(
            m.sample(key, jnp.zeros((N, 1)), dptext_params(1.0, 1.0, policy))
        ).ravel()
    finite = y[~np.isnan(y)]
    assert np.all(finite >= 0)  # the flaw: the noise is never negative
    nan_fraction = np.isnan(y).mean()
    zero_fraction = (y == 0).mean()
    se = math.sqrt(0.25 / N)
    if policy == "nan":
        assert abs(nan_fraction - 0.5) <= Z * se
    elif policy == "zero":
        assert nan_fraction == 0 and abs(zero_fraction - 0.5) <= Z * se
    else:
        assert nan_fraction == 0 and zero_fraction < 1e-3


def test_random_is_a_fair_coin(key):
    m = get_mechanism("random")
    y = np.asarray(m.sample(key, jnp.ones((N, 4)), m.calibrate_sanity_check(1.0, 4)))
    assert set(np.unique(y)) <= {0.0, 1.0}
    assert abs(y.mean() - 0.5) <= Z * math.sqrt(0.25 / y.size)


def test_none_is_the_identity(key):
    m = get_mechanism("none")
    x = jnp.arange(12.0).reshape(3, 4)
    assert np.array_equal(m.sample(key, x, m.calibrate_sanity_check(1.0, 4)), x)


@pytest.mark.parametrize("order", [1, 2])
def test_clip_norm(order):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(100, 7)) * rng.uniform(0.01, 5, size=(100, 1))
    c = 1.5
    clipped = clip_norm(x, c, order)
    norms = np.linalg.norm(clipped, ord=order, axis=1)
    before = np.linalg.norm(x, ord=order, axis=1)
    assert np.all(norms <= c * (1 + 1e-12))
    np.testing.assert_allclose(clipped[before <= c], x[before <= c])
    np.testing.assert_allclose(norms[before > c], c)
    # direction kept; the JAX path gives the same numbers
    np.testing.assert_allclose(
        clipped * before[:, None], x * np.minimum(before, c)[:, None]
    )
    with jax.enable_x64(True):
        np.testing.assert_allclose(
            np.asarray(clip_norm(jnp.asarray(x), c, order)), clipped
        )


def test_clip_norm_zero_row_and_no_clipping():
    zero = np.zeros((1, 3))
    assert np.array_equal(clip_norm(zero, 1.0, 2), zero)
    x = np.full((1, 3), 100.0)
    assert np.array_equal(clip_norm(x, math.inf, 2), x)


def test_adept_sensitivity_claim_is_2c():
    p = adept_params(epsilon=0.5, clip=3.0)
    assert p.scale == pytest.approx(2 * 3.0 / 0.5)


def test_registry():
    # the benchmark suite's names are checked in test_mechanisms_suite.py
    assert sorted(set(MECHANISMS) - set(SUITE)) == [
        "adept",
        "adept-l1",
        "adept-true-sensitivity",
        "dptext",
        "gaussian",
        "laplace",
        "none",
        "random",
        "trlaplace",
    ]
    for name, m in MECHANISMS.items():
        assert m.name == name
    for name in ("adept", "dptext", "none"):
        assert MECHANISMS[name].flaw  # broken ones say why
    with pytest.raises(ValueError, match="adept, adept-l1.*random"):
        get_mechanism("gaussian-typo")


def test_unknown_nan_policy_lists_the_known_ones():
    with pytest.raises(ValueError, match="nan, resample, zero"):
        dptext_params(1.0, 1.0, "drop")


# --- what a user's mechanism declares, and nothing more ---------------------------


def _laplace_calibration(epsilon, delta, dim, clip):
    return LaplaceParams(scale=2 * clip * dim**0.5 / epsilon)


def test_exact_references_come_from_fields_not_from_the_name():
    """A user mechanism named like a built-in one gets no built-in reference."""
    impostor = Mechanism(
        "gaussian",  # the name of the built-in, the sampler of Laplace
        MECHANISMS["laplace"].sample,
        calibrate=_laplace_calibration,
        privacy_loss=MECHANISMS["laplace"].privacy_loss,
    )
    result = mcdp.audit_delta(impostor, 1.0, 1e-5, 4, 2048, pair="axis", attack="lr")
    assert result.delta_exact is None
    assert all(point.delta_exact is None for point in result.profile)
    builtin = mcdp.audit_delta("gaussian", 1.0, 1e-5, 4, 2048, pair="axis", attack="lr")
    assert builtin.delta_exact is not None
    # declaring the field is what gives the reference
    declared = impostor._replace(exact_delta=MECHANISMS["laplace"].exact_delta)
    result = mcdp.audit_delta(declared, 1.0, 1e-5, 4, 2048, pair="axis", attack="lr")
    scale = _laplace_calibration(1.0, 1e-5, 4, 1.0).scale
    assert result.delta_exact == pytest.approx(laplace_delta(1.0, scale, 2.0))


def test_calibrate_sanity_check_is_optional_and_named_where_it_is_needed():
    lean = Mechanism(
        "lean-laplace", MECHANISMS["laplace"].sample, calibrate=_laplace_calibration
    )
    with pytest.raises(
        ValueError, match="'lean-laplace' has no calibrate_sanity_check.*params="
    ):
        mcdp.audit(lean, 1.0, 2, 1000)
    with pytest.raises(ValueError, match="no calibrate_sanity_check"):
        mcdp.audit_delta(lean, 1.0, 0.0, 2, 1000, pair="zeros-ones")
    draws = 8192  # enough that two independent runs give other counts (below)
    given = mcdp.audit(lean, 1.0, 2, draws, params=LaplaceParams(scale=2.0))
    reference = mcdp.audit("laplace", 1.0, 2, draws)  # the same scale d / epsilon
    # P[equal counts] for independent runs: sum_k pmf(k)^2 per row
    ks = np.arange(draws + 1)
    same = math.prod(
        float(np.sum(stats.binom.pmf(ks, draws, p) ** 2))
        for p in reference.exact_guess1
    )
    assert same <= FAIL_PROB
    assert given.counts != reference.counts  # another name, another key ...
    assert given.claim is None and given.violated is None  # ... and no claim
    assert "claim" not in render(given)
    calibrated = mcdp.audit_delta(
        lean, 1.0, 0.0, 2, 1000, pair="axis", attack="majority"
    )
    assert calibrated.attack == "majority" and calibrated.draws == 1000


def test_a_mechanism_needs_only_a_name_and_a_sampler():
    bare = Mechanism("bare", MECHANISMS["laplace"].sample)
    assert bare.calibrate_sanity_check is bare.log_round_one is bare.exact_delta is None
    assert bare.claim is None and bare.transform is None
    xs = np.array([[3.0, 4.0], [0.0, 0.0]])
    assert np.array_equal(bare.transformed(xs, None), xs)
    adept = MECHANISMS["adept"]
    clipped = adept.transformed(xs, adept_params(1.0, 1.0))
    assert clipped[0] == pytest.approx([0.6, 0.8])  # L2 clipped to C = 1


def _block_draws(name: str, dtype: str, flat: bool, monkeypatch) -> list[np.ndarray]:
    """Three keys' draws of mechanism ``name`` on a block of 3,000 copies of its
    first input (the suite's pair, else the default), jitted, with the noise drawn
    flat (:data:`mcdp.mechanisms._base.FLAT_DRAWS`) or in the block's shape; as
    unsigned integers, bit for bit."""
    case = SUITE.get(name)
    spec = mcdp.AuditSpec(
        name, case.epsilon if case else 1.0,
        pair=case.pairs[0] if case else None, dim=case.dim if case else 8,
        delta=1e-5 if name in ("gaussian", "trlaplace") else 0.0,
    )  # fmt: skip
    plan, mechanism = spec.plan, spec.plan.mechanism
    monkeypatch.setattr(_base, "FLAT_DRAWS", flat)  # read where a program is traced
    out = []
    with jax.enable_x64(dtype == "float64"):
        row = jnp.asarray(plan.transformed[0], dtype)
        x = jnp.broadcast_to(row, (3_000, row.shape[-1]))
        sample = jax.jit(lambda k: mechanism.sample(k, x, plan.params))
        for i in range(3):
            y = np.asarray(sample(jax.random.fold_in(sampling.key(SEED), i)))
            out.append(y.view(f"uint{8 * y.dtype.itemsize}"))
    return out


# one mechanism of each way the flat samplers are called (the default run); every
# mechanism in both dtypes is slow, as each form compiles anew
_FLAT_CALLERS = (
    "laplace",  # standard_laplace, (n, 8)
    "svt1",  # standard_laplace, (n, 1) and (n, 10)
    "numerical-svt",  # standard_laplace, (n, 21), sliced
    "report-noisy-max2",  # standard_exponential, (n, 5)
    "truncated-geometric",  # standard_exponential, (2, n, 1)
    "trlaplace",  # uniform_midpoint, (n, 8)
)


@pytest.mark.parametrize(
    ("name", "dtype"),
    [
        pytest.param(
            name,
            dtype,
            marks=()
            if dtype == "float64" and name in _FLAT_CALLERS
            else pytest.mark.slow,
        )  # fmt: skip
        for name in sorted(MECHANISMS)
        for dtype in ("float64", "float32")
    ],
)
def test_every_sampler_draws_the_same_bits_flat_as_in_the_blocks_shape(
    name, dtype, monkeypatch
):
    """The noise drawn flat (``_base.drawn_flat``: faster on a CPU) gives every
    mechanism the same outputs to the last bit as drawn in the shape of the
    engine's block, in float64 and float32: no seed's draws or counts change."""
    if dtype == "float32" and name in ("laplace-float", "snapping"):
        pytest.skip("float64 only, as NumPy draws them")
    flat = _block_draws(name, dtype, True, monkeypatch)
    shaped = _block_draws(name, dtype, False, monkeypatch)
    for a, b in zip(flat, shaped, strict=True):
        assert a.shape == b.shape
        assert np.array_equal(a, b), (name, dtype, np.count_nonzero(a != b))
