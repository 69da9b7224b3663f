"""The NumPy baselines of the benchmarks (``benchmarks/baselines.py``) are correct.

Each baseline's estimated ``P[guess 1 | D]`` and ``P[guess 1 | D']`` must lie within
``Z`` binomial standard errors of the exact values of :func:`mcdp.analytic.exact_e2`
(where an exact value is 0 or 1, the estimate must equal it).
"""

import math
import sys

import numpy as np
import pytest

from mcdp.exact import exact_e2
from mcdp.mechanisms import get_mechanism

from conftest import SEED, Z, load_benchmark

baselines = load_benchmark("baselines")
EPSILON = 1.0
SCALARS = 2_000_000  # per dataset: draws = min(100_000, SCALARS // d)


def _assert_matches_exact(counts, mechanism, dim, num_draws):
    m = get_mechanism(mechanism)
    exact = exact_e2(m, m.calibrate_sanity_check(EPSILON, dim), dim)
    assert counts.dtype == np.int64 and counts.shape == (2, 2)
    assert counts.sum(axis=1).tolist() == [num_draws, num_draws]
    for row, p in zip(counts, (exact.p1, exact.q1), strict=True):
        se = math.sqrt(p * (1 - p) / num_draws)
        assert abs(row[1] / num_draws - p) <= Z * se, (row, p, se)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("mechanism", ["laplace", "adept", "dptext"])
@pytest.mark.parametrize("dim", [1, 3, 8, 13, 32, 300])
@pytest.mark.parametrize("implementation", ["reference_port", "best_numpy"])
def test_baseline_matches_exact_probabilities(implementation, dim, mechanism, dtype):
    run = getattr(baselines, implementation)
    num_draws = min(100_000, SCALARS // dim)
    counts = run(mechanism, EPSILON, dim, num_draws, dtype=dtype, seed=SEED)
    _assert_matches_exact(counts, mechanism, dim, num_draws)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(
    "variant",
    [
        {"threads": 1},
        {"threads": 3, "chunk_scalars": 1000},  # many chunks, a partial last one
        {"bit_generator": "PCG64", "uniforms": "random"},
        {"bit_generator": "Philox", "uniforms": "bits", "chunk_scalars": 100},
    ],
)
def test_best_numpy_variants_match_exact_probabilities(variant, dtype):
    dim, num_draws = 13, 50_001
    counts = baselines.best_numpy(
        "laplace", EPSILON, dim, num_draws, dtype=dtype, seed=SEED, **variant
    )
    _assert_matches_exact(counts, "laplace", dim, num_draws)


@pytest.mark.skipif(sys.byteorder != "little", reason="splits 64-bit words")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_uniforms_from_bits_are_those_of_generator_random(dtype):
    """Both sources give the same uniforms (even chunk sizes), so the same counts."""
    runs = [
        baselines.best_numpy(
            "laplace",
            EPSILON,
            8,
            10_000,
            dtype=dtype,
            seed=SEED,
            threads=2,
            uniforms=uniforms,
            bit_generator="SFC64",
            chunk_scalars=1024,
        )
        for uniforms in ("random", "bits")
    ]
    np.testing.assert_array_equal(runs[0], runs[1])


def test_best_numpy_is_reproducible():
    def run():
        return baselines.best_numpy("dptext", EPSILON, 32, 20_000, seed=SEED)

    np.testing.assert_array_equal(run(), run())


@pytest.mark.parametrize("implementation", ["reference_port", "best_numpy"])
def test_baselines_reject_bad_arguments(implementation):
    run = getattr(baselines, implementation)
    with pytest.raises(ValueError, match="mechanism"):
        run("gaussian", EPSILON, 2, 10)
    with pytest.raises(ValueError, match="dtype"):
        run("laplace", EPSILON, 2, 10, dtype="float16")
    with pytest.raises(ValueError, match="num_draws"):
        run("laplace", EPSILON, 2, 0)
