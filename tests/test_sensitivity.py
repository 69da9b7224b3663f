"""The sensitivity search against proven values (EMNLP 2021 Thm 5.1), user functions
against closed forms, the compile contract and the argument checks.

Every value the search returns is a distance it actually found, so it can never
exceed a proven sensitivity by more than rounding; reaching it is what is tested.
"""

import itertools
import json
import math

import jax.numpy as jnp
import numpy as np
import pytest

from mcdp.mechanisms._base import clip_norm
from mcdp.sensitivity import (
    _search_block,
    clip_l1,
    l2_clipper,
    max_l1_distance,
    sensitivity_records,
)

C = 10.0
REACHED = 0.999  # the search must find >= 99.9 % of the proven sensitivity
CONVERGED = 1e-9  # ... and in float64 it in fact converges to it


def _rounding(n, dtype="float64"):
    """Relative rounding allowance of an n-term L1 distance."""
    return 8 * n * float(np.finfo(dtype).eps)


def test_l2_clipping_reaches_2c_sqrt_n_and_never_exceeds_it(key):
    dims = [1, 2, 3, 8, 16, 64]
    records = sensitivity_records(key, dims, clip="l2", C=C)
    assert [r.dim for r in records] == dims
    for r in records:
        theorem = 2 * C * math.sqrt(r.dim)
        assert r.theorem == pytest.approx(theorem, rel=1e-15)
        assert r.claimed == 2 * C
        assert r.ratio == r.max_l1 / r.theorem
        assert r.ratio >= REACHED, r
        assert 1 - r.ratio <= CONVERGED, r
        assert r.max_l1 <= theorem * (1 + _rounding(r.dim)), r
        assert r.exceeds_claim == (r.dim > 1)  # ADePT's 2C fails for every n > 1


def test_l1_clipping_gives_exactly_2c(key):
    records = sensitivity_records(key, [1, 2, 8, 64], clip="l1", C=C)
    for r in records:
        assert r.theorem == r.claimed == 2 * C
        assert REACHED <= r.ratio, r
        assert r.max_l1 <= 2 * C * (1 + 1e-9), r
        assert not r.exceeds_claim


def test_float32(key):
    for r in sensitivity_records(key, [3, 8], clip="l2", C=C, dtype="float32"):
        assert r.ratio >= REACHED
        assert r.max_l1 <= r.theorem * (1 + _rounding(r.dim, "float32"))


def test_every_restart_finds_the_maximiser_of_l2_clipping(key):
    """Started inside the ball, each restart (not just the best) converges, to the
    witness of the proof: f(x) = -f(x') = C sigma / sqrt(n), sigma in {-1, 1}^n."""
    n = 8
    theorem = 2 * C * math.sqrt(n)
    r = max_l1_distance(key, l2_clipper(C), n, init_scale=C / (2 * math.sqrt(n)))
    assert r.restart_max_l1.shape == (64,)
    assert np.all(r.restart_max_l1 >= REACHED * theorem)
    assert r.max_l1 == pytest.approx(theorem, rel=CONVERGED)
    fx, fx_prime = clip_norm(r.x, C, 2), clip_norm(r.x_prime, C, 2)
    np.testing.assert_allclose(np.abs(fx), C / math.sqrt(n), rtol=1e-6)
    np.testing.assert_allclose(fx_prime, -fx, rtol=1e-6)
    assert r.max_l1 == pytest.approx(np.abs(fx - fx_prime).sum(), rel=1e-14)


def test_tanh_sensitivity_is_2n(key):
    """sup |tanh x - tanh x'|_1 = 2n, approached only as |x| -> inf where the
    gradient vanishes: the hard case for a gradient search."""
    n = 5

    def f(x):
        assert x.shape == (n,)  # f sees one vector, never a batch
        return jnp.tanh(x)

    r = max_l1_distance(key, f, n)
    assert REACHED * 2 * n <= r.max_l1 <= 2 * n
    assert r.x.shape == r.x_prime.shape == (n,)


def test_linear_map_of_tanh_against_enumeration(key):
    """f(x) = A tanh(x), R^4 -> R^3: the sup is 2 max over sign vectors s of
    |A s|_1 (a convex function on a box), found here by enumeration. Gradient
    ascent can stop at a worse vertex; restarts find the best one."""
    a = np.array([[1.0, -2.0, 0.5, 3.0], [2.0, 1.0, -1.0, 0.0], [-1.0, 1.0, 2.0, 1.0]])
    signs = itertools.product([-1.0, 1.0], repeat=4)
    truth = 2 * max(np.abs(a @ np.array(s)).sum() for s in signs)
    r = max_l1_distance(key, lambda x: jnp.asarray(a) @ jnp.tanh(x), 4)
    assert REACHED * truth <= r.max_l1 <= truth


def test_restarts_are_a_prefix_and_settings_do_not_retrace(key):
    _search_block.clear_cache()
    n, scale = 6, C / (2 * math.sqrt(6))
    small = max_l1_distance(key, l2_clipper(C), n, restarts=16, init_scale=scale)
    large = max_l1_distance(key, l2_clipper(C), n, restarts=40, init_scale=scale)
    np.testing.assert_array_equal(small.restart_max_l1, large.restart_max_l1[:16])
    max_l1_distance(key, l2_clipper(3.0), n, steps=50, learning_rate=0.1, init_scale=2)
    sensitivity_records(key, [5, 9], C=2.5, restarts=20, steps=60)  # both pad to 16
    sensitivity_records(key, [7], C=4.0)
    assert _search_block._cache_size() == 2  # dim 6, and dims padded to 16


def test_records_are_plain_data(key):
    (r,) = sensitivity_records(key, [4], clip="l1", C=1.5, restarts=3, steps=20)
    d = r.to_dict()
    json.dumps(d)
    assert d["dim"] == 4 and d["clip"] == "l1" and d["C"] == 1.5
    assert d["restarts"] == 3 and d["steps"] == 20 and d["dtype"] == "float64"
    assert {"max_l1", "claimed", "theorem", "ratio", "seconds"} <= d.keys()
    with pytest.raises(AttributeError):
        r.dim = 5


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"dim": 0}, "dim"),
        ({"dim": 2.5}, "dim"),
        ({"restarts": 0}, "restarts"),
        ({"steps": 0}, "steps"),
        ({"learning_rate": -0.1}, "learning_rate"),
        ({"init_scale": 0.0}, "init_scale"),
        ({"init_scale": math.inf}, "init_scale"),
        ({"dtype": "float16"}, "dtype"),
        ({"f": 3.0}, "f to be callable"),
        ({"f": jnp.sum}, r"f to return one array of shape \(m,\), got \(\)"),
        ({"f": lambda x: jnp.outer(x, x)}, r"shape \(m,\), got \(3, 3\)"),
        ({"f": lambda x: (x, x)}, "got tuple"),
        ({"f": lambda x: x > 0}, "f to return floats, got bool"),
        ({"f": lambda x: x.reshape(7)}, r"f to map a \(3,\) float64 array"),
    ],
)
def test_max_l1_distance_rejects(key, kwargs, name):
    args = {"f": jnp.tanh, "dim": 3} | kwargs
    f, dim = args.pop("f"), args.pop("dim")
    with pytest.raises(ValueError, match=name) as info:
        max_l1_distance(key, f, dim, **args)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"clip": "linf"}, "clip"),
        ({"C": 0.0}, "C"),
        ({"C": -1.0}, "C"),
        ({"C": math.inf}, "C"),
        ({"C": math.nan}, "C"),
        ({"dims": []}, "dims"),
        ({"dims": [0]}, "dims"),
        ({"restarts": 0}, "restarts"),
        ({"steps": -3}, "steps"),
        ({"dtype": "int32"}, "dtype"),
    ],
)
def test_sensitivity_records_rejects(key, kwargs, name):
    args = {"dims": [2]} | kwargs
    with pytest.raises(ValueError, match=name) as info:
        sensitivity_records(key, args.pop("dims"), **args)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("make", [l2_clipper, clip_l1])
@pytest.mark.parametrize("bad", [0.0, -2.0, math.inf, math.nan])
def test_clip_functions_reject_bad_radius(make, bad):
    with pytest.raises(ValueError, match="C > 0"):
        make(bad)


def test_clip_functions_match_their_definition():
    x = np.array([3.0, -4.0, 0.0])
    np.testing.assert_allclose(l2_clipper(1.0)(x), x / 5)
    np.testing.assert_allclose(clip_l1(1.0)(x), x / 7)
    np.testing.assert_allclose(l2_clipper(10.0)(jnp.asarray(x)), x)
