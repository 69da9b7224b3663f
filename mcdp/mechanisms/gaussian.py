r"""The Gaussian mechanism on L2-clipped embeddings (TrLaplace paper, Thm 2).

:math:`M(x) = x\min(1, C/\lVert x\rVert_2) + \eta`, :math:`\eta_i \sim
\mathcal N(0, \sigma^2)` iid, with the classic calibration

.. math:: \sigma^2 = \frac{2\Delta_2^2\ln(1.25/\delta)}{\varepsilon^2}
   = \frac{8C^2\ln(1.25/\delta)}{\varepsilon^2},

since two points of the ball of radius :math:`C` are at most :math:`\Delta_2 = 2C`
apart. Claimed :math:`(\varepsilon, \delta)`-DP, which the classic proof gives only
for :math:`\varepsilon \le 1`; larger :math:`\varepsilon` is accepted (the audit
measures what it gives).

ACL 2022 sanity check, shared with ``trlaplace``: :math:`C = \sqrt d`, the
smallest radius that leaves both :math:`0^d` and :math:`1^d` unclipped, so the query
is the identity as for ``laplace`` and the attack's threshold 1/2 stays midway
between the two inputs (with :math:`C = \sqrt d/2`, :math:`1^d` would be clipped onto
the threshold and the attack would be blind); and :math:`\delta = 1/(4d)`, the
TrLaplace paper's choice (§6.1).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from mcdp import _validate
from mcdp._types import Array, ArrayLike, PRNGKey
from mcdp.core.domains import CLIPPED_EMBEDDINGS
from mcdp.core.mechanism import Mechanism
from mcdp.exact import gaussian_delta
from mcdp.mechanisms._base import (
    LogProbs,
    additive_log_round_one,
    clip_norm,
)


class GaussianParams(NamedTuple):
    clip: Array | float  # C, the L2 clipping radius
    sigma: Array | float  # the noise standard deviation


def gaussian_params(epsilon: float, delta: float, clip: float) -> GaussianParams:
    r"""Calibrates :math:`\sigma = 2C\sqrt{2\ln(1.25/\delta)}/\varepsilon`.

    Args:
      epsilon: :math:`\varepsilon > 0` (the claim is proved for
        :math:`\varepsilon \le 1` only).
      delta: :math:`\delta \in (0, 1)`.
      clip: the L2 clipping radius :math:`C > 0`.

    Raises:
      ValueError: if an argument is out of range.
    """
    epsilon = _validate.positive("epsilon", epsilon)
    delta = _validate.open_unit("delta", delta)
    clip = _validate.positive("clip", clip)
    sigma = 2 * clip * math.sqrt(2 * math.log(1.25 / delta)) / epsilon
    return GaussianParams(clip=clip, sigma=sigma)


def gaussian_sample(key: PRNGKey, x: Array, params: GaussianParams) -> Array:
    r"""One draw of :math:`x\min(1, C/\lVert x\rVert_2) + \mathcal N(0,
    \sigma^2 I)` per row of ``x`` (noise drawn in ``x.dtype``)."""
    clipped = clip_norm(x, jnp.asarray(params.clip, x.dtype), order=2)
    sigma = jnp.asarray(params.sigma, x.dtype)
    return clipped + sigma * jax.random.normal(key, x.shape, x.dtype)


def gaussian_log_sf(t: ArrayLike, sigma: float) -> LogProbs:
    r"""``(log P[eta >= t], log P[eta < t])`` for :math:`\eta \sim \mathcal N(0,
    \sigma^2)`, from ``scipy.stats.norm.logsf`` / ``logcdf`` (neither underflows)."""
    z = np.asarray(t, dtype=np.float64) / np.asarray(sigma, dtype=np.float64)
    return stats.norm.logsf(z), stats.norm.logcdf(z)


def gaussian_privacy_loss(
    y: ArrayLike, x: ArrayLike, x_prime: ArrayLike, params: GaussianParams
) -> Array:
    r"""The exact privacy loss :math:`\ln p(y \mid x) - \ln p(y \mid x')`.

    ``x`` and ``x_prime`` are the *clipped* points (the means of the output; the
    clipping radius in ``params`` is not applied here). Over the last axis,

    .. math:: \mathcal L(y) = \frac{\lVert y - x'\rVert_2^2 - \lVert y - x\rVert_2^2}
       {2\sigma^2} = \frac{\langle x - x',\, 2y - x - x'\rangle}{2\sigma^2},

    evaluated in the second form (no cancellation of large squares). The inputs
    broadcast explicitly, e.g. ``y`` of shape ``(n, d)`` with ``x`` of shape
    ``(d,)``; the result has the batch shape of ``y``, in ``y``'s dtype.
    """
    y = jnp.asarray(y)
    dtype = y.dtype
    x, x_prime = jnp.asarray(x, dtype), jnp.asarray(x_prime, dtype)
    shape = jnp.broadcast_shapes(y.shape, x.shape, x_prime.shape)
    y, x, x_prime = (jnp.broadcast_to(a, shape) for a in (y, x, x_prime))
    sigma = jnp.asarray(params.sigma, dtype)
    inner = jnp.sum((x - x_prime) * (2 * y - x - x_prime), axis=-1)
    return inner / (2 * sigma * sigma)


def e2_delta(dim: int) -> float:
    r""":math:`\delta = 1/(4d)` in the sanity check (TrLaplace paper, §6.1)."""
    return 1 / (4 * dim)


def e2_clip(dim: int) -> float:
    r""":math:`C = \sqrt d` in the sanity check: :math:`1^d` stays unclipped."""
    return math.sqrt(dim)


def _sanity_check_params(epsilon: float, dim: int) -> GaussianParams:
    return gaussian_params(epsilon, e2_delta(dim), e2_clip(dim))


def _exact_delta(params: GaussianParams, tx, epsilon: float) -> float:
    """The exact profile on any pair: only the L2 distance of ``tx`` matters."""
    distance = float(np.linalg.norm(tx[0] - tx[1]))
    return gaussian_delta(epsilon, float(params.sigma), distance)


GAUSSIAN = Mechanism(
    name="gaussian",
    sample=gaussian_sample,
    calibrate_sanity_check=_sanity_check_params,
    log_round_one=additive_log_round_one(
        lambda x, p: clip_norm(x, p.clip, order=2),
        lambda t, p: gaussian_log_sf(t, p.sigma),
    ),
    claim="(epsilon, delta)-DP",
    calibrate=lambda epsilon, delta, dim, clip: gaussian_params(epsilon, delta, clip),
    transform=lambda x, p: clip_norm(x, p.clip, order=2),
    privacy_loss=gaussian_privacy_loss,
    exact_delta=_exact_delta,
    # the privacy loss of Gaussian noise is unbounded on every pair that differs
    exact_epsilon=lambda params, tx: 0.0 if np.array_equal(*tx) else math.inf,
    domain=CLIPPED_EMBEDDINGS,
)
