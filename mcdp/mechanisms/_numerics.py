r"""Host-side numerics of the benchmark suite's exact references (NumPy, float64).

The exact losses of the suite's mechanisms come from one-dimensional integrals of
products of Laplace or exponential CDFs and densities (Report Noisy Max, Sparse
Vector), which are analytic between known kinks. :func:`quadrature_nodes` puts
Gauss–Legendre nodes on the pieces between the kinks, over a window that reaches
:data:`TAIL_SCALES` noise scales past them (the integrands are bounded by a density
that has decayed by :math:`e^{-80}` there), and :func:`log_integrate` integrates
many integrands given in log space at once, so that tiny probabilities keep their
relative accuracy (about 1e-12).
"""

from __future__ import annotations

import math

import numpy as np

from mcdp.mechanisms._base import laplace_log_sf

GL_ORDER = 20  # Gauss–Legendre nodes per piece
TAIL_SCALES = 80.0  # the window reaches this many noise scales past the kinks
LOG_ZERO = -1e250  # stands for log 0 where -inf would meet a zero coefficient


def logsumexp(values: np.ndarray, axis: int = -1) -> np.ndarray:
    """``log(sum(exp(values)))`` along ``axis``; ``-inf`` where every term is
    ``-inf`` (or below :data:`LOG_ZERO` / 2), without warnings."""
    values = np.asarray(values, dtype=np.float64)
    top = np.max(values, axis=axis, keepdims=True)
    empty = ~np.isfinite(top) | (top < LOG_ZERO / 2)
    top = np.where(empty, 0.0, top)
    with np.errstate(divide="ignore", under="ignore"):
        total = np.log(np.sum(np.exp(values - top), axis=axis, keepdims=True)) + top
    total = np.where(empty, -np.inf, total)
    return np.squeeze(total, axis=axis)


def quadrature_nodes(
    breakpoints: np.ndarray, lo: float, hi: float, max_step: float
) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Legendre ``(nodes, log_weights)`` on ``[lo, hi]``, split at every
    breakpoint inside it and into pieces at most ``max_step`` long."""
    inside = np.asarray(breakpoints, dtype=np.float64)
    inside = inside[(inside > lo) & (inside < hi)]
    edges = np.unique(np.concatenate([[lo, hi], inside]))
    pieces = []
    for a, b in zip(edges[:-1], edges[1:], strict=True):
        count = max(1, math.ceil((b - a) / max_step))
        pieces.append(np.linspace(a, b, count + 1))
    starts = np.concatenate([p[:-1] for p in pieces])
    stops = np.concatenate([p[1:] for p in pieces])
    x, w = np.polynomial.legendre.leggauss(GL_ORDER)
    half = (stops - starts)[:, None] / 2
    nodes = (starts[:, None] + half * (x + 1)).ravel()
    log_weights = np.log(half * w).ravel()
    return nodes, log_weights


def log_integrate(log_integrand: np.ndarray, log_weights: np.ndarray) -> np.ndarray:
    """``log`` of the integrals of the rows of ``exp(log_integrand)`` (last axis:
    the nodes of :func:`quadrature_nodes`)."""
    return logsumexp(log_integrand + log_weights, axis=-1)


def laplace_log_sf_cdf(t: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray]:
    r"""``(log P[eta >= t], log P[eta < t])`` for :math:`\eta \sim
    \mathrm{Lap}(b)`; ``scale = 0`` is the point mass at 0."""
    t = np.asarray(t, dtype=np.float64)
    if scale == 0:
        with np.errstate(divide="ignore"):
            return np.log((t <= 0).astype(float)), np.log((t > 0).astype(float))
    return laplace_log_sf(t, scale)


def exponential_log_cdf(t: np.ndarray, scale: float) -> np.ndarray:
    """``log P[eta <= t]`` for eta ~ Exp(mean ``scale``); ``-inf`` for t <= 0."""
    t = np.asarray(t, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(t > 0, np.log(-np.expm1(-np.maximum(t, 0) / scale)), -np.inf)


def exponential_log_pdf(t: np.ndarray, scale: float) -> np.ndarray:
    """The log density of Exp(mean ``scale``) at ``t``; ``-inf`` for t < 0."""
    t = np.asarray(t, dtype=np.float64)
    return np.where(t >= 0, -math.log(scale) - t / scale, -np.inf)


def loss_range(log_p: np.ndarray, log_q: np.ndarray) -> tuple[float, float]:
    r"""``(min, max)`` of :math:`\ln p - \ln q` over the outputs where either is
    positive: ``+inf`` where only ``p`` is, ``-inf`` where only ``q`` is."""
    log_p, log_q = np.asarray(log_p), np.asarray(log_q)
    p_pos, q_pos = np.isfinite(log_p), np.isfinite(log_q)
    both = p_pos & q_pos
    diff = log_p[both] - log_q[both]
    hi = math.inf if np.any(p_pos & ~q_pos) else float(np.max(diff, initial=-np.inf))
    lo = -math.inf if np.any(q_pos & ~p_pos) else float(np.min(diff, initial=np.inf))
    return lo, hi


def epsilon_of(lo: float, hi: float) -> float:
    """The pure-epsilon loss ``max(hi, -lo)`` of a range of log-likelihood ratios."""
    return float(max(hi, -lo, 0.0))
