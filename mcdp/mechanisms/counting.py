r"""Counting mechanisms of the suite: prefix sums, the truncated geometric, and
parallel Laplace.

* ``prefix-sum`` (Wang et al., *Proving Differential Privacy with Shadow
  Execution*, PLDI 2019, as DP-Sniper's ``dpsniper/mechanisms/prefix_sum.py``):
  the prefix sums :math:`y_j = \sum_{i \le j} (x_i + \eta_i)`,
  :math:`\eta_i \sim \mathrm{Lap}(1/\varepsilon)`. Prefix sums are an invertible
  linear map of :math:`x + \eta`, so the loss is that of the Laplace mechanism,
  :math:`\varepsilon \lVert x - x'\rVert_1`: :math:`\varepsilon`-DP when one entry
  changes by one, not under the query-answer relation of the suite, where every
  entry may move (``one-above-rest-below`` at d = 10: 10ε).
* ``truncated-geometric``: GeoSample of Balcer and Vadhan, *Differential Privacy on
  Finite Computers*, ITCS 2018 (arXiv:1709.05396), Alg. 4.8, as DP-Sniper's
  ``dpsniper/mechanisms/geometric.py``: a count :math:`c \in \{0, \dots, n\}`
  (n = 5) released with :math:`k = \lceil \ln(2/\varepsilon) \rceil`; it is
  :math:`\ln(1 + 2^{-k})`-DP (Thm 4.7), exactly: its output is :math:`c` plus a
  two-sided geometric variable of ratio :math:`q = 2^k/(2^k + 1)`, clamped to
  :math:`[0, n]`, as its CDF :math:`F(z)/F(n)` of Step 2 shows.
* ``laplace-parallel`` (DP-Sniper's ``LaplaceParallel``): 20 Laplace mechanisms at
  :math:`\varepsilon/20` each (sensitivity 1) on the same input, outputs side by
  side, shape ``(n, 20 d)``: :math:`\varepsilon`-DP by composition, exactly.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from mcdp._types import Array, PRNGKey
from mcdp.core.domains import QUERY_ANSWERS, InputDomain
from mcdp.core.mechanism import Mechanism, NoiseApart
from mcdp.mechanisms._base import (
    laplace_exact_delta,
    laplace_exact_epsilon,
    laplace_privacy_loss,
    standard_laplace,
    standard_laplace_noise,
)
from mcdp.mechanisms._numerics import epsilon_of
from mcdp.mechanisms.laplace import LaplaceParams
from mcdp.mechanisms.noisy_max import standard_exponential

COPIES = 20  # the Laplace mechanisms of laplace-parallel (shape-setting: fixed)
GEO_SAMPLE_N = 5  # DP-Sniper's n of GeoSample: counts in {0, ..., 5}


# --- prefix sums --------------------------------------------------------------------


def prefix_sum_sample(key: PRNGKey, x: Array, params: LaplaceParams) -> Array:
    r"""The prefix sums of :math:`x + \mathrm{Lap}(b)^{\otimes d}` per row.

    True loss on the patterns at ε = 0.1, d = 10: 0.1 (``one-above``,
    ``one-below``), 1.0 (``one-above-rest-below``, ``one-below-rest-above``,
    ``all-above-all-below``, ``all-below``, ``half-half``, ``x-shuffle``).
    """
    return _prefix_sums(x, standard_laplace(key, x.shape, x.dtype), params)


def _prefix_sums(x: Array, noise: Array, params: LaplaceParams) -> Array:
    return jnp.cumsum(x + jnp.asarray(params.scale, x.dtype) * noise, axis=-1)


# the sampler in two parts (Mechanism.noise_apart), the scale with the outputs: a
# cheap guess of 4e6 draws per input counted in 1.19 s so on a CPU, against 1.67 s in
# one program (laplace-parallel was slower so, 2.43 s against 1.46 s, and does not)
PREFIX_SUM_APART = NoiseApart(standard_laplace_noise, _prefix_sums)


def prefix_sum_privacy_loss(y, x, x_prime, params: LaplaceParams):
    """The Laplace privacy loss of the differences of ``y`` (``x + eta``); the
    Jacobian of the prefix sums is 1 under both inputs."""
    first = jnp.zeros_like(y[..., :1])
    return laplace_privacy_loss(
        jnp.diff(y, axis=-1, prepend=first), x, x_prime, params.scale
    )


PREFIX_SUM = Mechanism(
    name="prefix-sum",
    sample=prefix_sum_sample,
    claim="epsilon-DP",
    flaw="Lap(1/eps) per entry covers one changed entry; query answers may all move",
    calibrate=lambda epsilon, delta, dim, clip: LaplaceParams(scale=1.0 / epsilon),
    privacy_loss=prefix_sum_privacy_loss,
    exact_delta=laplace_exact_delta,
    exact_epsilon=laplace_exact_epsilon,
    domain=QUERY_ANSWERS,
    noise_apart=PREFIX_SUM_APART,
)


# --- the truncated geometric ------------------------------------------------------


class TruncatedGeometricParams(NamedTuple):
    k: Array | int  # the loss is ln(1 + 2^-k)
    upper: Array | int  # n: counts lie in {0, ..., n}


def geo_sample_params(
    epsilon: float, n: int = GEO_SAMPLE_N
) -> TruncatedGeometricParams:
    r"""GeoSample(ε, n) as DP-Sniper parametrises it: :math:`k = \lceil
    \ln(2/\varepsilon) \rceil` (natural log)."""
    return TruncatedGeometricParams(k=math.ceil(math.log(2.0 / epsilon)), upper=n)


def geo_sample_epsilon(epsilon: float) -> float:
    r"""The privacy GeoSample(ε, n) claims (Balcer and Vadhan, Thm 4.7):
    :math:`\ln(1 + 2^{-k})`, 0.1178 at ε = 0.1 (k = 3)."""
    return math.log1p(2.0 ** -geo_sample_params(epsilon).k)


def truncated_geometric_params(
    epsilon: float, n: int = GEO_SAMPLE_N
) -> TruncatedGeometricParams:
    r"""The largest noise whose claim :math:`\ln(1 + 2^{-k})` is at most ε: the
    smallest :math:`k \ge 0` with :math:`2^{-k} \le e^\varepsilon - 1` (a relative
    slack of 1e-9 keeps :math:`\varepsilon = \ln(1 + 2^{-k})` at k)."""
    k = math.ceil(-math.log2(math.expm1(epsilon)) - 1e-9)
    return TruncatedGeometricParams(k=max(0, k), upper=n)


def _loss_rate(params: TruncatedGeometricParams, dtype) -> Array:
    return jnp.log1p(jnp.exp2(-jnp.asarray(params.k, dtype)))


def truncated_geometric_sample(
    key: PRNGKey, x: Array, params: TruncatedGeometricParams
) -> Array:
    r""":math:`\min(n, \max(0, x + G_1 - G_2))` per entry, :math:`G_i =
    \lfloor E_i / \varepsilon' \rfloor` geometric (:math:`E_i \sim \mathrm{Exp}(1)`,
    :math:`\varepsilon' = \ln(1 + 2^{-k})`, so :math:`P[G \ge m] = q^m`).

    True loss on ``scalar-0-1`` and ``scalar-1-2`` at k = 3: ln(1.125) = 0.1178,
    its claim.
    """
    return _truncated_geometric_outputs(x, _exponentials(key, x, params), params)


def _exponentials(key: PRNGKey, x: Array, params: TruncatedGeometricParams) -> Array:
    """The two Exp(1) draws of every entry, shape ``(2,) + x.shape``."""
    del params
    return standard_exponential(key, (2,) + x.shape, x.dtype)


def _truncated_geometric_outputs(
    x: Array, exponentials: Array, params: TruncatedGeometricParams
) -> Array:
    """:func:`truncated_geometric_sample`'s outputs from its ``exponentials``."""
    geometric = jnp.floor(exponentials / _loss_rate(params, x.dtype))
    upper = jnp.asarray(params.upper, x.dtype)
    return jnp.clip(x + geometric[0] - geometric[1], jnp.zeros_like(upper), upper)


# the sampler in two parts (Mechanism.noise_apart): on a CPU, drawn in one program
# it took four times as long per output as with the exponentials written first, in
# a cond of their own; counting 2e7 draws per input with the majority vote took
# 0.81 s so, against 2.83 s (benchmarks/RESULTS.md, "Three samplers drawn apart")
TRUNCATED_GEOMETRIC_APART = NoiseApart(_exponentials, _truncated_geometric_outputs)


def truncated_geometric_privacy_loss(y, x, x_prime, params: TruncatedGeometricParams):
    r""":math:`\varepsilon' \sum_i (|y_i - x'_i| - |y_i - x_i|)` for counts in
    :math:`[0, n]`: the clamped atoms at 0 and n follow the same formula."""
    return laplace_privacy_loss(y, x, x_prime, 1 / _loss_rate(params, y.dtype))


def geo_sample_counts(count: int, k: int, n: int) -> list[int]:
    r"""Balcer and Vadhan's Step 2 in integers: the number of the
    :math:`(2^{k+1} + 1)(2^k + 1)^{n-1}` equally likely draws that give each output
    :math:`z = 0, \dots, n` for the true count ``count``."""
    a, b = 2**k, 2**k + 1
    total = (2 * a + 1) * b ** (n - 1)

    def cdf(z: int) -> int:
        if z < 0:
            return 0
        if z < count:
            return a ** (count - z) * b ** (n - (count - z))
        if z < n:
            return total - a ** (z - count + 1) * b ** (n - 1 - (z - count))
        return total

    return [cdf(z) - cdf(z - 1) for z in range(n + 1)]


def truncated_geometric_exact_epsilon(params, tx: np.ndarray) -> float | None:
    """The exact loss by enumerating GeoSample's distribution in integers, per entry
    (entries are independent: the extremes add); ``None`` unless every entry is a
    count in ``[0, n]``."""
    k, n = int(params.k), int(params.upper)
    tx = np.asarray(tx, dtype=np.float64)
    if np.any(tx != np.round(tx)) or np.any(tx < 0) or np.any(tx > n):
        return None
    lo = hi = 0.0
    for c, c_prime in tx.T.astype(int):
        pairs = zip(
            geo_sample_counts(c, k, n), geo_sample_counts(c_prime, k, n), strict=True
        )
        ratios = [math.log(u) - math.log(v) for u, v in pairs]
        lo, hi = lo + min(ratios), hi + max(ratios)
    return epsilon_of(lo, hi)


TRUNCATED_GEOMETRIC = Mechanism(
    name="truncated-geometric",
    sample=truncated_geometric_sample,
    claim="epsilon-DP",
    calibrate=lambda epsilon, delta, dim, clip: truncated_geometric_params(epsilon),
    privacy_loss=truncated_geometric_privacy_loss,
    exact_epsilon=truncated_geometric_exact_epsilon,
    # a count in {0, ..., n} of a dataset that gains or loses one record
    domain=InputDomain(
        "one-entry",
        1.0,
        low=0.0,
        high=float(GEO_SAMPLE_N),
        integer=True,
        window=(0.0, float(GEO_SAMPLE_N)),
    ),  # fmt: skip
    noise_apart=TRUNCATED_GEOMETRIC_APART,
)


# --- parallel Laplace -------------------------------------------------------------


def _copies(x: Array) -> Array:
    return jnp.concatenate([x] * COPIES, axis=-1)


def laplace_parallel_sample(key: PRNGKey, x: Array, params: LaplaceParams) -> Array:
    r""":data:`COPIES` independent draws of :math:`x + \mathrm{Lap}(b)`,
    :math:`b = 20/\varepsilon`, side by side: shape ``(n, 20 d)``.

    True loss on ``scalar-0-1`` and ``scalar-1-2`` at ε = 0.1: 0.1.
    """
    repeated = _copies(x)
    noise = standard_laplace(key, repeated.shape, x.dtype)
    return repeated + jnp.asarray(params.scale, x.dtype) * noise


LAPLACE_PARALLEL = Mechanism(
    name="laplace-parallel",
    sample=laplace_parallel_sample,
    claim="epsilon-DP",
    calibrate=lambda epsilon, delta, dim, clip: LaplaceParams(scale=COPIES / epsilon),
    privacy_loss=lambda y, x, x_prime, p: laplace_privacy_loss(
        y, _copies(x), _copies(x_prime), p.scale
    ),
    exact_epsilon=lambda params, tx: COPIES * laplace_exact_epsilon(params, tx),
    domain=QUERY_ANSWERS,
)
