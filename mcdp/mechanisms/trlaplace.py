r"""The high-dimensional truncated Laplace mechanism (TrLaplace paper, Thm 3).

:math:`M(x) = x\min(1, C/\lVert x\rVert_2) + \eta`, :math:`\eta_i` iid with density
:math:`f(t) = e^{-\alpha|t|}/B` on :math:`[-A, A]`, where :math:`\Delta_1 = 2\sqrt d
C`, :math:`\Delta_\infty = 2C`, :math:`\alpha = \varepsilon/\Delta_1`,

.. math:: A = -\frac{1}{\alpha}\ln\Big(1 - \frac{\varepsilon}{2\delta^{1/d}\sqrt d}
   \Big), \qquad B = \frac{2(1 - e^{-\alpha A})}{\alpha}
   = \frac{\Delta_\infty}{\delta^{1/d}},

which needs :math:`\varepsilon \le 2\delta^{1/d}\sqrt d` (at equality
:math:`A = \infty`: plain Laplace noise). Claimed :math:`(\varepsilon, \delta)`-DP.
The proof (App. B) bounds the mass where the two supports differ by
:math:`(\Delta_\infty/B)^d = \delta`, the volume of a cube of side
:math:`\Delta_\infty`; but shifting one coordinate by :math:`\Delta_\infty` uncovers a
whole slab, of mass up to :math:`\Delta_\infty/B = \delta^{1/d}` (see
:func:`trlaplace_log_sf`).

Sampling is exact inversion of the CDF: with :math:`u` a midpoint uniform and
:math:`v = 2|u - 1/2| \in (0, 1)`,
:math:`\eta = \mathrm{sgn}(u - 1/2)\,\bigl(-\ln(1 - v(1 - e^{-\alpha A}))/\alpha\bigr)`,
computed with ``log1p``/``expm1`` in ``x.dtype`` (float64 in the engine's default).
In the sanity check its conventions (:math:`C = \sqrt d`, :math:`\delta = 1/(4d)`) are
``gaussian``'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
from scipy import special

from mcdp import _validate
from mcdp._types import Array, ArrayLike, PRNGKey
from mcdp.core.domains import CLIPPED_EMBEDDINGS
from mcdp.core.mechanism import Mechanism
from mcdp.mechanisms._base import (
    LogProbs,
    additive_log_round_one,
    clip_norm,
    uniform_midpoint,
)
from mcdp.mechanisms.gaussian import e2_clip, e2_delta

MAX_DIM_SEARCH = 1 << 40  # trlaplace_min_dim gives up beyond this


class TrLaplaceParams(NamedTuple):
    clip: Array | float  # C, the L2 clipping radius
    alpha: Array | float  # the decay rate epsilon / Delta_1
    bound: Array | float  # A, the noise lies in [-A, A] (inf at the boundary case)


def _ratio(epsilon: float, delta: float, dim: int) -> float:
    """:math:`\\varepsilon / (2\\delta^{1/d}\\sqrt d)`; Thm 3 needs it <= 1."""
    return epsilon / (2 * math.exp(math.log(delta) / dim) * math.sqrt(dim))


def trlaplace_min_dim(
    epsilon: float, delta: float | Callable[[int], float]
) -> int | None:
    r"""The smallest :math:`d` with :math:`\varepsilon \le 2\delta^{1/d}\sqrt d`.

    ``delta`` is a number or a function of :math:`d` (e.g. :func:`e2_delta`). The
    bound :math:`g(d) = 2\delta^{1/d}\sqrt d` increases with :math:`d` for constant
    :math:`\delta \in (0, 1)`, since :math:`(\ln g)' = -\ln\delta/d^2 + 1/(2d) > 0`,
    and for :math:`\delta = 1/(4d)`, since :math:`(\ln g)' = (d/2 - 1 + \ln 4d)/d^2
    > 0`, and grows without bound; so a galloping then a binary search finds the
    smallest :math:`d`. Returns ``None`` if it exceeds :data:`MAX_DIM_SEARCH`.
    """
    delta_of = delta if callable(delta) else (lambda d: delta)

    def ok(d: int) -> bool:
        return _ratio(epsilon, delta_of(d), d) <= 1

    high = 1
    while not ok(high):
        if high >= MAX_DIM_SEARCH:
            return None
        high = min(2 * high, MAX_DIM_SEARCH)
    low = high // 2  # fails (or is 0)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if ok(mid) else (mid, high)
    return high


def _check_precondition(epsilon, delta, dim, delta_of, delta_text) -> float:
    ratio = _ratio(epsilon, delta, dim)
    if ratio > 1:
        needed = trlaplace_min_dim(epsilon, delta_of)
        fix = (
            f"the smallest d that satisfies it is {needed} (pad with dummy dimensions)"
            if needed
            else f"no d <= {MAX_DIM_SEARCH} satisfies it"
        )
        raise ValueError(
            f"trlaplace needs epsilon <= 2*delta**(1/d)*sqrt(d) = "
            f"{epsilon / ratio:.6g} (Thm 3), got epsilon={epsilon!r} with d={dim}, "
            f"{delta_text}; {fix}."
        )
    return ratio


def trlaplace_params(
    epsilon: float, delta: float, dim: int, clip: float
) -> TrLaplaceParams:
    r"""Thm 3's calibration: :math:`\alpha = \varepsilon/(2\sqrt d C)` and
    :math:`A = -\ln(1 - r)/\alpha` with :math:`r = \varepsilon/(2\delta^{1/d}
    \sqrt d)`.

    Raises:
      ValueError: if an argument is out of range, or if :math:`r > 1`; the message
        gives the smallest :math:`d` (at this :math:`\delta`) with :math:`r \le 1`.
    """
    epsilon = _validate.positive("epsilon", epsilon)
    delta = _validate.open_unit("delta", delta)
    dim = _validate.integer("dim", dim, low=1)
    clip = _validate.positive("clip", clip)
    ratio = _check_precondition(epsilon, delta, dim, delta, f"delta={delta!r}")
    alpha = epsilon / (2 * math.sqrt(dim) * clip)
    bound = math.inf if ratio == 1 else -math.log1p(-ratio) / alpha
    return TrLaplaceParams(clip=clip, alpha=alpha, bound=bound)


def trlaplace_normalizer(params: TrLaplaceParams) -> float:
    r""":math:`B = 2(1 - e^{-\alpha A})/\alpha`, equal to
    :math:`\Delta_\infty/\delta^{1/d}` for Thm 3's parameters."""
    alpha = float(params.alpha)
    return -2 * math.expm1(-alpha * float(params.bound)) / alpha


def _inverse_cdf(u: Array, alpha: Array, bound: Array) -> Array:
    r"""Maps :math:`u \in (0, 1)` to the truncated Laplace quantile.

    :math:`P[|\eta| \le s] = (1 - e^{-\alpha s})/(1 - e^{-\alpha A})` on
    :math:`[0, A]`, so :math:`|\eta| = -\ln(1 + v\,\mathrm{expm1}(-\alpha A))/\alpha`
    for :math:`v = 2|u - 1/2|`; the sign is that of :math:`u - 1/2` (never 0 for
    midpoint uniforms).
    """
    centred = u - 0.5  # exact for midpoint uniforms
    v = 2 * jnp.abs(centred)  # exact, in (0, 1)
    magnitude = -jnp.log1p(v * jnp.expm1(-alpha * bound)) / alpha
    # v < 1 gives magnitude < A in exact arithmetic; rounding may overshoot by ulps.
    magnitude = jnp.minimum(magnitude, bound)
    return jnp.sign(centred) * magnitude


def trlaplace_sample(key: PRNGKey, x: Array, params: TrLaplaceParams) -> Array:
    r"""One draw of :math:`x\min(1, C/\lVert x\rVert_2) + \eta` per row of ``x``,
    :math:`\eta_i` iid truncated Laplace, by inversion in ``x.dtype``."""
    dtype = x.dtype
    clipped = clip_norm(x, jnp.asarray(params.clip, dtype), order=2)
    u = uniform_midpoint(key, x.shape, dtype)
    alpha, bound = jnp.asarray(params.alpha, dtype), jnp.asarray(params.bound, dtype)
    return clipped + _inverse_cdf(u, alpha, bound)


def _host(params: TrLaplaceParams) -> tuple[np.ndarray, np.ndarray]:
    return np.float64(params.alpha), np.float64(params.bound)


def trlaplace_log_sf(t: ArrayLike, params: TrLaplaceParams) -> LogProbs:
    r"""``(log P[eta >= t], log P[eta < t])``, exact in log space.

    For :math:`0 \le z \le A`, :math:`P[\eta \ge z] = \dfrac{e^{-\alpha z}
    (1 - e^{-\alpha(A - z)})}{2(1 - e^{-\alpha A})}`; by symmetry
    :math:`P[\eta < -z]` is the same. Beyond :math:`\pm A` the probabilities are 0
    and 1 (log :math:`-\infty` and 0).
    """
    alpha, bound = _host(params)
    t = np.asarray(t, dtype=np.float64)
    z = np.minimum(np.abs(t), bound)
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = np.where(z < bound, bound - z, 0.0)  # inf - inf when A = |t| = inf
        small = (
            -alpha * z
            + np.log(-np.expm1(-alpha * gap))
            - np.log(2.0)
            - np.log(-np.expm1(-alpha * bound))
        )
        large = np.log1p(-np.exp(small))
    right = t >= 0
    return np.where(right, small, large), np.where(right, large, small)


def trlaplace_cdf(t: ArrayLike, params: TrLaplaceParams) -> np.ndarray:
    r""":math:`P[\eta \le t] = \tfrac12 + \mathrm{sgn}(t)\,\dfrac{1 - e^{-\alpha
    \min(|t|, A)}}{2(1 - e^{-\alpha A})}` (NumPy; for tests and plots)."""
    alpha, bound = _host(params)
    t = np.asarray(t, dtype=np.float64)
    z = np.minimum(np.abs(t), bound)
    return 0.5 + np.sign(t) * np.expm1(-alpha * z) / (2 * np.expm1(-alpha * bound))


def trlaplace_moment(params: TrLaplaceParams, order: int) -> float:
    r""":math:`E|\eta|^k = \dfrac{k!}{\alpha^k}\,\dfrac{P(k + 1, \alpha A)}
    {1 - e^{-\alpha A}}`, with :math:`P` the regularised lower incomplete gamma.

    From :math:`E|\eta|^k = \frac{2}{B}\int_0^A t^k e^{-\alpha t}dt`,
    :math:`\int_0^A t^k e^{-\alpha t}dt = k!\,P(k+1, \alpha A)/\alpha^{k+1}` and
    :math:`B = 2(1 - e^{-\alpha A})/\alpha`. ``scipy.special.gammainc`` keeps this
    accurate when :math:`\alpha A` is small (nearly uniform noise, moment
    :math:`\to A^k/(k+1)`) and gives Laplace's :math:`k!/\alpha^k` at
    :math:`A = \infty`.
    """
    alpha, bound = (float(v) for v in _host(params))
    a = alpha * bound
    tail = special.gammainc(order + 1, a)
    return float(math.factorial(order) / alpha**order * tail / -math.expm1(-a))


def trlaplace_variance(params: TrLaplaceParams) -> float:
    r""":math:`\mathrm{Var}\,\eta_i = E\eta^2 = \frac{2}{\alpha^2}
    \frac{P(3, \alpha A)}{1 - e^{-\alpha A}} = \frac{2}{\alpha^2}
    - \frac{A^2 + 2A/\alpha}{e^{\alpha A} - 1}`, below Laplace's :math:`2/\alpha^2`
    (the paper's eq. 7)."""
    return trlaplace_moment(params, 2)


def trlaplace_privacy_loss(
    y: ArrayLike, x: ArrayLike, x_prime: ArrayLike, params: TrLaplaceParams
) -> Array:
    r"""The exact privacy loss :math:`\ln p(y \mid x) - \ln p(y \mid x')`.

    ``x`` and ``x_prime`` are the *clipped* points. Over the last axis, where both
    densities are positive, :math:`\mathcal L(y) = \alpha\sum_i (|y_i - x'_i| -
    |y_i - x_i|)` (:math:`B` cancels); :math:`+\infty` where only :math:`p(y \mid x)
    > 0`, :math:`-\infty` where only :math:`p(y \mid x') > 0`, and 0 where both are
    0 (such :math:`y` never occurs); never NaN. The supports are the closed boxes
    :math:`x + [-A, A]^d`. Outputs computed in floating point as
    :math:`x + \eta` can land an ulp outside them when :math:`|\eta|` is within an
    ulp of :math:`A`. Shapes broadcast explicitly as in ``gaussian_privacy_loss``.
    """
    y = jnp.asarray(y)
    dtype = y.dtype
    x, x_prime = jnp.asarray(x, dtype), jnp.asarray(x_prime, dtype)
    shape = jnp.broadcast_shapes(y.shape, x.shape, x_prime.shape)
    y, x, x_prime = (jnp.broadcast_to(a, shape) for a in (y, x, x_prime))
    alpha, bound = jnp.asarray(params.alpha, dtype), jnp.asarray(params.bound, dtype)
    dist, dist_prime = jnp.abs(y - x), jnp.abs(y - x_prime)
    inside = jnp.all(dist <= bound, axis=-1)
    inside_prime = jnp.all(dist_prime <= bound, axis=-1)
    finite = alpha * jnp.sum(dist_prime - dist, axis=-1)
    inf = jnp.asarray(jnp.inf, dtype)
    zero = jnp.zeros_like(finite)
    return jnp.where(
        inside & inside_prime,
        finite,
        jnp.where(inside, inf, jnp.where(inside_prime, -inf, zero)),
    )


def _sanity_check_params(epsilon: float, dim: int) -> TrLaplaceParams:
    epsilon = _validate.positive("epsilon", epsilon)
    dim = _validate.integer("dim", dim, low=1)
    _check_precondition(epsilon, e2_delta(dim), dim, e2_delta, "delta=1/(4d)")
    return trlaplace_params(epsilon, e2_delta(dim), dim, e2_clip(dim))


TRLAPLACE = Mechanism(
    name="trlaplace",
    sample=trlaplace_sample,
    calibrate_sanity_check=_sanity_check_params,
    log_round_one=additive_log_round_one(
        lambda x, p: clip_norm(x, p.clip, order=2), trlaplace_log_sf
    ),
    claim="(epsilon, delta)-DP",
    flaw="the proof bounds the uncovered support by (Delta_inf/B)^d = delta, but one "
    "shifted coordinate uncovers a slab of mass up to Delta_inf/B = delta^(1/d)",
    calibrate=lambda epsilon, delta, dim, clip: trlaplace_params(
        epsilon, delta, dim, clip
    ),
    transform=lambda x, p: clip_norm(x, p.clip, order=2),
    privacy_loss=trlaplace_privacy_loss,
    noise_bound=lambda p: p.bound,
    domain=CLIPPED_EMBEDDINGS,
)
