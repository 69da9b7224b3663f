"""The pieces that several mechanisms share: samplers, clipping, closed forms.

The :class:`~mcdp.core.mechanism.Mechanism` record itself is in :mod:`mcdp.core`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mcdp._types import Array, PRNGKey
from mcdp.core.mechanism import LogProbs
from mcdp.exact import laplace_delta

# False: every sampler draws in the shape asked for, as before 2026-11-27 (for the
# benchmark and the test that hold both forms to the same values; read where a
# program is traced, so clear JAX's caches after a change).
FLAT_DRAWS = True


def drawn_flat(draw: Callable[..., Array]) -> Callable[..., Array]:
    """``draw(key, shape, *args)`` computed on the flattened ``shape``, then reshaped
    to it: the same values, faster on a CPU.

    The same values, because every JAX sampler draws the bits of a shape in the
    order of its flattened form, and what ``draw`` does with them is elementwise.
    Faster, because XLA's CPU code vectorises an elementwise loop along its last
    axis, which for a block of outputs is the few coordinates of one output: a
    float64 Laplace draw of shape ``(2^14, 1)`` took 1.1 ms, ``(2^14,)`` 0.12 ms
    (2-core AVX-512; ``benchmarks/RESULTS.md``, "Noise drawn flat on a CPU").
    """

    @functools.wraps(draw)
    def flat(key: PRNGKey, shape: tuple[int, ...], *args: Any) -> Array:
        if not FLAT_DRAWS:
            return draw(key, shape, *args)
        shape = tuple(shape)
        return draw(key, (math.prod(shape),), *args).reshape(shape)

    return flat


@drawn_flat
def uniform_midpoint(key: PRNGKey, shape: tuple[int, ...], dtype) -> Array:
    r"""Uniforms on the open interval (0, 1), symmetric about 1/2.

    ``jax.random.uniform`` returns :math:`k 2^{-m}` for :math:`k = 0, \dots, 2^m - 1`
    (:math:`m` = 23 in float32, 52 in float64), so it can return 0 but never 1, and an
    inverse CDF applied to it has one infinite and one finite tail. Shifting by half a
    step gives :math:`(2k + 1) 2^{-m-1}`, exact in the same dtype, never 0 or 1, and
    the two tails of a symmetric inverse CDF are cut at the same point.
    """
    half_step = jnp.finfo(dtype).eps / 2
    return jax.random.uniform(key, shape, dtype) + jnp.asarray(half_step, dtype)


@drawn_flat
def centred_uniform(key: PRNGKey, shape: tuple[int, ...], dtype) -> Array:
    """:func:`uniform_midpoint` less 1/2 (exact): the uniforms of
    :func:`standard_laplace`, before its ``log``."""
    return uniform_midpoint(key, shape, dtype) - jnp.asarray(0.5, dtype)


def laplace_of_centred(centred: Array) -> Array:
    r"""Lap(1) of :func:`centred_uniform`'s :math:`c = u - 1/2`, elementwise:
    :math:`-\mathrm{sgn}(c)\ln(1 - 2|c|)`. A sampler that reads only some of its
    draws (Alg. 2 of the Sparse Vector Technique: a threshold draw after each answer
    above) takes the ``log`` of those alone, the same numbers."""
    return -jnp.sign(centred) * jnp.log1p(-2 * jnp.abs(centred))


@drawn_flat
def standard_laplace(key: PRNGKey, shape: tuple[int, ...], dtype) -> Array:
    r"""Lap(1) by inverse CDF, :math:`-\mathrm{sgn}(u - h)\ln(1 - 2|u - h|)`, h = 1/2.

    Exact arithmetic up to the final ``log``; the tails stop at
    :math:`\ln 2^{m}` (about 36 in float64, 16 in float32).
    """
    return laplace_of_centred(centred_uniform(key, shape, dtype))


def standard_laplace_noise(key: PRNGKey, x: Array, params: Any) -> Array:
    """Lap(1) draws of ``x``'s shape and dtype: the noise of an additive sampler in
    two parts (:class:`~mcdp.core.mechanism.NoiseApart`), whose outputs scale it."""
    del params
    return standard_laplace(key, x.shape, x.dtype)


def laplace_log_sf(t: np.ndarray | Array, scale: Any) -> LogProbs:
    r"""``(log P[eta >= t], log P[eta < t])`` for eta ~ Lap(scale), in log space.

    :math:`P[\eta \ge t] = \tfrac12 e^{-t/b}` for :math:`t \ge 0` and
    :math:`1 - \tfrac12 e^{t/b}` otherwise; neither side underflows. On the host
    (NumPy, float64) for a host ``t``; in JAX, in ``t``'s dtype, for a JAX array
    (the Sparse Vector densities of :mod:`mcdp.mechanisms._svt_density`).
    """
    xp = jnp if isinstance(t, jax.Array) else np
    t = t if xp is jnp else np.asarray(t, dtype=np.float64)
    z = xp.abs(t) / scale
    small = math.log(0.5) - z  # a Python float: t's dtype in JAX
    large = xp.log1p(-0.5 * xp.exp(-z))
    right = t >= 0
    return xp.where(right, small, large), xp.where(right, large, small)


def laplace_log_pdf(t: np.ndarray | Array, scale: Any) -> np.ndarray | Array:
    """The log density of Lap(``scale``) at ``t``: on the host (NumPy, float64) for
    a host ``t``; in JAX, in ``t``'s dtype, for a JAX array (as
    :func:`laplace_log_sf`)."""
    if isinstance(t, jax.Array):
        return -jnp.log(2 * scale) - jnp.abs(t) / scale
    return -math.log(2 * scale) - np.abs(np.asarray(t, dtype=np.float64)) / scale


def additive_log_round_one(
    transform: Callable[[np.ndarray, Any], np.ndarray],
    log_sf: Callable[[np.ndarray, Any], LogProbs],
) -> Callable[[np.ndarray, Any], LogProbs]:
    """Exact rounding probabilities of ``y = transform(x) + eta`` with iid ``eta``:
    ``y_i >= 1/2`` iff ``eta_i >= 1/2 - transform(x)_i``."""

    def log_round_one(x: np.ndarray, params: Any) -> LogProbs:
        shifted = transform(np.asarray(x, dtype=np.float64), params)
        return log_sf(0.5 - shifted, params)

    return log_round_one


def identity(x, params):
    del params
    return x


def clip_l2_by_params(x, params):
    """The L2 clipping of mechanisms whose params have a ``clip`` radius: ``x``
    clipped to L2 norm at most ``params.clip``."""
    return clip_norm(x, params.clip, order=2)


clip_l2 = clip_l2_by_params  # the name earlier versions used


def laplace_exact_delta(params: Any, tx: np.ndarray, epsilon: float) -> float | None:
    """The exact profile of iid Laplace noise of scale ``params.scale`` on a pair
    that differs in at most one coordinate (:func:`mcdp.exact.laplace_delta`);
    ``None`` for other pairs."""
    diff = tx[0] - tx[1]
    if np.count_nonzero(diff) > 1:
        return None
    return laplace_delta(epsilon, float(params.scale), float(np.abs(diff).sum()))


def laplace_exact_epsilon(params: Any, tx: np.ndarray) -> float:
    r"""The exact pure-epsilon loss of iid Laplace noise of scale ``params.scale`` on
    any pair: :math:`\lVert x - x'\rVert_1 / b`."""
    return float(np.abs(tx[0] - tx[1]).sum() / float(params.scale))


def laplace_privacy_loss(y, x, x_prime, scale):
    r""":math:`(\lVert y - x'\rVert_1 - \lVert y - x\rVert_1)/b` for iid Lap(b) noise,
    over the last axis; ``x`` and ``x_prime`` broadcast against ``y`` explicitly."""
    x = jnp.broadcast_to(x, y.shape)
    x_prime = jnp.broadcast_to(x_prime, y.shape)
    return jnp.sum(jnp.abs(y - x_prime) - jnp.abs(y - x), axis=-1) / scale


def clip_norm(x, radius, order: int):
    r"""Row-wise :math:`x \min(1, C / \lVert x \rVert_p)` for ``order`` p = 1 or 2.

    Works on NumPy arrays (host, exact references) and JAX arrays (device). A zero
    row and ``radius = inf`` (no clipping) both give the factor 1.
    """
    xp = jnp if isinstance(x, jax.Array) else np
    if order == 2:
        norm = xp.sqrt(xp.sum(x * x, axis=-1, keepdims=True))
    else:
        norm = xp.sum(xp.abs(x), axis=-1, keepdims=True)
    with np.errstate(divide="ignore"):
        factor = xp.minimum(1, radius / norm)
    return x * factor
