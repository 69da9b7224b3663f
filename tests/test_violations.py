"""SPEC E1: exact zeros where the geometry forces them, an exact n = 2 reference,
reproducible streams, one compile per bucket, one-line argument errors."""

import math

import jax
import jax.numpy as jnp
import pytest
from scipy import integrate

from mcdp.statistics import binomial_se
from mcdp.violations import (
    _count_impl,
    block_pairs,
    bucket_width,
    count_violations,
    iter_violations,
    tolerance,
)

from conftest import FAIL_PROB, SEED, Z


def _exact_uniform_n2() -> float:
    r"""P[||f(r) - f(r')||_1 > 2] for r, r' ~ U(-1, 1)^2 clipped to the unit disk.

    In 2-D, ||x||_1 = max(|x1 + x2|, |x1 - x2|) = sqrt(2) max(|P|, |Q|) with the
    rotated coordinates P = (x1 + x2)/sqrt2, Q = (x1 - x2)/sqrt2. |dP| > sqrt2 and
    |dQ| > sqrt2 together would need a Euclidean distance > 2, impossible in the
    unit disk, so by symmetry (P <-> Q, P <-> -P) the probability is
    4 P[P(f) - P(f') > sqrt2] = 4 E[F(P(f) - sqrt2)], F the CDF of P(f). f is uniform
    on the disk with mass pi/4 (density of P: sqrt(1 - u^2)/2) and otherwise on the
    circle, angle theta with density tan^2(alpha)/8, alpha the angle to the nearest
    axis (the square's mass beyond the circle along the ray is (R^2 - 1)/2 over 4,
    R = 1/cos alpha); P = cos(theta - pi/4). F is closed-form for t <= 1 - sqrt2,
    and two 1-D quadratures remain.
    """
    quarter, root2 = math.pi / 4, math.sqrt(2)

    def tan2_integral(w):  # int_0^w tan^2(alpha(psi)) dpsi, psi from the diagonal
        if w <= quarter:
            return (1 - quarter) - math.tan(quarter - w) + (quarter - w)
        return (1 - quarter) + math.tan(w - quarter) - (w - quarter)

    def cdf(t):  # P[P(f) <= t] for -1 <= t <= 0: disk part + circle arc near -diag
        disk = (t * math.sqrt(1 - t * t) + math.asin(t) + math.pi / 2) / 4
        return disk + tan2_integral(math.acos(-t)) / 4

    def circle_density(phi):  # angle from the diagonal (1, 1)
        a = abs(phi)
        return math.tan(quarter - a if a <= quarter else a - quarter) ** 2 / 8

    opts = dict(epsabs=1e-14, epsrel=1e-12, limit=200)
    disk = integrate.quad(
        lambda u: math.sqrt(1 - u * u) / 2 * cdf(u - root2), root2 - 1, 1, **opts
    )[0]
    phi_max = math.acos(root2 - 1)
    circle = sum(
        integrate.quad(lambda p: circle_density(p) * cdf(math.cos(p) - root2), a, b)[0]
        for a, b in ((0, quarter), (quarter, phi_max))
    )
    return 4 * (disk + 2 * circle)


EXACT_N2 = 0.13734454527607928  # _exact_uniform_n2(); a 1e8-pair NumPy run agrees


def test_exact_n2_reference_is_stable():
    assert _exact_uniform_n2() == pytest.approx(EXACT_N2, rel=1e-10)


def test_buckets_and_tolerance_without_rng():
    widths = sorted({bucket_width(n) for n in range(1, 257)})
    assert widths == [1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256]
    assert all(bucket_width(n) >= n for n in range(1, 1000))
    assert block_pairs(1) == 1 << 17 and block_pairs(256) == 512
    for dtype, eps in (("float64", 2.0**-52), ("float32", 2.0**-23)):
        # first order: (n + rho (n + 3)) eps
        assert tolerance(4, "l2", dtype) == pytest.approx((4 + 2 * 7) * eps, rel=1e-5)
        assert tolerance(4, "l1", dtype) == pytest.approx((4 + 7) * eps, rel=1e-5)
    assert tolerance(256, "l2", "float64") < 1e-12 < tolerance(2, "l2", "float32")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_one_dimension_never_violates(key, dtype):
    """In 1-D, L2 clipping is L1 clipping: |f(r) - f(r')| <= 2C exactly."""
    for dist, scale in (("uniform", 0.1), ("normal", 2.0)):  # s = 2C: mostly clipped
        (r,) = count_violations(key, dist, [1], 50_000, normal_scale=scale, dtype=dtype)
        assert (r.violations, r.pairs, r.fraction_lower) == (0, 50_000, 0.0)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("dist", ["uniform", "normal"])
def test_l1_control_has_no_violations(key, dist, dtype):
    # normal_scale = 1: s = C, so that most vectors are clipped
    records = count_violations(
        key, dist, [2, 3, 24], 1 << 16, clip="l1", normal_scale=1.0, dtype=dtype
    )
    assert [r.violations for r in records] == [0, 0, 0]
    assert all(r.pairs == 1 << 16 and r.complete for r in records)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_plain_comparison_counts_rounding_errors(key, dtype):
    """The negative control: with a threshold of exactly 2C, rounding makes some of
    the L1-clipped pairs that lie exactly on the bound (opposite quadrants, both
    clipped: 1/16 of pairs at n = 2) count as violations (about 1 in 10 000 with
    this code), so the tolerance is needed."""
    blocks = 32
    with jax.enable_x64(dtype == "float64"):
        plain = int(
            _count_impl(
                jax.random.fold_in(jax.random.fold_in(key, 0), 2),
                jnp.int32(2),
                jnp.asarray(1.0, dtype),
                jnp.asarray(2.0, dtype),  # the plain threshold
                jnp.uint32(0),
                jnp.int32(blocks),
                jnp.uint32(blocks),
                jnp.uint32(0),
                dist="uniform",
                order=1,
                width=2,
                chunk_blocks=1,
            )
        )
    assert 0 < plain < blocks * block_pairs(2) / 16


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_two_dimensions_match_the_exact_probability(key, dtype):
    pairs = 1 << 20
    (r,) = count_violations(
        key, "uniform", [2], pairs, confidence=1 - FAIL_PROB, dtype=dtype
    )
    assert abs(r.fraction - EXACT_N2) <= Z * binomial_se(EXACT_N2, pairs), SEED
    assert r.fraction_lower <= EXACT_N2 <= r.fraction_upper, SEED
    # uniform counts are scale-free: the device works in units of C
    (other_c,) = count_violations(key, "uniform", [2], pairs, C=0.37, dtype=dtype)
    assert other_c.violations == r.violations


def test_large_dimension_nearly_all_pairs_violate(key):
    """The 'curse of dimensionality' (EMNLP 2021, Fig. 1): at n = 64 the clipped
    distance is about 9C for uniform inputs, far above 2C."""
    for dist in ("uniform", "normal"):
        (r,) = count_violations(key, dist, [64], 1 << 14)
        assert r.fraction_lower > 0.999


def test_counts_do_not_depend_on_chunks_calls_or_other_dims(key):
    size = block_pairs(bucket_width(5))
    pairs = 3 * size + 123  # a partial last block
    base = count_violations(key, "uniform", [5], pairs)[0]
    runs = [
        count_violations(key, "uniform", [2, 5], pairs, call_chunks=1)[1],
        count_violations(key, "uniform", [5], pairs, chunk_blocks=3)[0],
    ]
    assert 0 < base.violations < pairs
    for r in runs:
        assert (r.dim, r.violations, r.pairs) == (5, base.violations, pairs)


def test_progress_is_a_prefix_and_totals_equal_pairs(key):
    size = block_pairs(bucket_width(3))
    pairs = 3 * size + 5
    steps = list(iter_violations(key, "normal", [3], pairs, call_chunks=1))
    assert [s.pairs for s in steps] == [size, 2 * size, 3 * size, pairs]
    assert [s.complete for s in steps] == [False, False, False, True]
    (fresh,) = count_violations(key, "normal", [3], 2 * size)
    assert fresh.violations == steps[1].violations
    assert steps[-1].pairs_requested == pairs


def test_x64_is_not_left_on_between_records(key):
    records = iter_violations(key, "uniform", [2, 3], 1000, dtype="float64")
    next(records)
    assert jnp.zeros(1).dtype == jnp.float32
    assert next(records).x64


def test_one_compile_per_bucket_and_none_for_new_keys(key):
    before = _count_impl._cache_size()
    # normal, l2, float32, width 24: used by no other test
    count_violations(key, "normal", list(range(17, 25)), 100, dtype="float32")
    assert _count_impl._cache_size() == before + 1
    count_violations(jax.random.fold_in(key, 1), "normal", [20], 5000, dtype="float32")
    assert _count_impl._cache_size() == before + 1


def test_normal_readings_and_record_fields(key):
    # at the paper's C = 10, normal_scale = 0.1: s = 0.1 C = 1 and s^2 = 0.1 C = 1
    std, var = (
        count_violations(key, "normal", [16], 4096, normal_reading=reading)[0]
        for reading in ("std", "variance")
    )
    assert std.normal_std == var.normal_std == pytest.approx(1.0)
    assert std.violations == var.violations
    (var2,) = count_violations(
        key, "normal", [16], 4096, normal_scale=0.01, normal_reading="variance"
    )
    assert var2.normal_std == pytest.approx(math.sqrt(0.1))
    d = var2.to_dict()
    for field in ("dist", "dim", "pairs", "violations", "fraction", "fraction_lower"):
        assert field in d
    assert d["fraction_upper"] >= d["fraction"] >= d["fraction_lower"]
    assert (d["clip"], d["C"], d["normal_scale"], d["dtype"]) == (
        "l2",
        10.0,
        0.01,
        "float64",
    )
    assert d["confidence"] == 0.95 and d["seconds"] > 0 and d["tolerance"] > 0


@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("dist", {"dist": "laplace"}),
        ("clip", {"clip": "linf"}),
        ("C", {"C": 0.0}),
        ("C", {"C": -1.0}),
        ("C", {"C": math.inf}),
        ("C", {"C": math.nan}),
        ("pairs", {"pairs": 0}),
        ("pairs", {"pairs": 2**40 + 1}),
        ("pairs", {"pairs": 1.5}),
        ("dims", {"dims": []}),
        ("dims", {"dims": [0]}),
        ("dims", {"dims": [2, 2]}),
        ("dims", {"dims": [1.5]}),
        ("dims", {"dims": "12"}),
        ("dims", {"dims": 3}),
        ("normal_scale", {"normal_scale": 0.0}),
        ("normal_scale", {"normal_scale": 1e30}),
        ("normal_reading", {"normal_reading": "sd"}),
        ("confidence", {"confidence": 1.0}),
        ("dtype", {"dtype": "float16"}),
        ("chunk_blocks", {"chunk_blocks": 0}),
        ("call_chunks", {"call_chunks": 0}),
        ("key", {"key": 0}),
    ],
)
def test_bad_arguments_raise_one_line_errors(key, name, kwargs):
    args = {"key": key, "dist": "normal", "dims": [2], "pairs": 10, **kwargs}
    before = _count_impl._cache_size()
    with pytest.raises(ValueError, match=rf"\b{name}\b") as info:
        iter_violations(**args)  # raises at the call, not at the first record
    assert "\n" not in str(info.value)
    assert _count_impl._cache_size() == before
