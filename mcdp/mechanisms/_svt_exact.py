r"""Exact losses of the Sparse Vector variants on a pair (host, float64).

Given the threshold noise :math:`\rho = r`, the queries are independent: query
:math:`i` is above with probability :math:`A_i(r) = P[\nu_i \ge T + r - x_i]` and
below with :math:`B_i(r) = 1 - A_i(r)`. So an output :math:`y \in \{1, 0,
\text{aborted}\}^d` of the variants with one threshold draw (Alg. 1, 4, 5, 6) has

.. math:: P[y] = \int f_\rho(r) \prod_{i: y_i = 1} A_i(r) \prod_{i: y_i = 0} B_i(r)
   \,dr,

and Alg. 2, which draws the threshold afresh after each answer above, has the
product of such integrals over the segments that end with an answer above. Every
output is enumerated (:func:`outputs`), every integral is taken by Gauss–Legendre
quadrature between the kinks (:mod:`mcdp.mechanisms._numerics`), and the loss is
the largest :math:`|\ln P[y \mid x] - \ln P[y \mid x']|` (``inf`` where only one
input reaches an output).

Alg. 3 outputs the noisy answers :math:`v_p = x_p + \nu_p` above the threshold
(positions :math:`P`), and the queries below it (:math:`F`) as flags. Its density
is :math:`\prod_{p \in P} f_\nu(v_p - x_p)\, G_F(\min_p v_p)` with
:math:`G_F(m) = \int_{-\infty}^{m - T} f_\rho(r) \prod_{i \in F} B_i(r)\,dr`, since
every answer above needs :math:`\rho \le v_p - T`. The log ratio of each factor
:math:`f_\nu(v - x_p)/f_\nu(v - x'_p)` is monotone in :math:`v`, so its extreme
over :math:`v \ge m` is at :math:`v = m` or :math:`v \to \infty`, and the
supremum over :math:`v` reduces to one over :math:`m`: a fine grid (step
:math:`b/1000`, with :math:`G_F` integrated cumulatively from a closed-form left
tail) refined locally, plus the limit :math:`m \to \infty`.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import optimize

from mcdp.mechanisms._base import laplace_log_pdf
from mcdp.mechanisms._numerics import (
    LOG_ZERO,
    TAIL_SCALES,
    epsilon_of,
    laplace_log_sf_cdf,
    log_integrate,
    logsumexp,
    loss_range,
    quadrature_nodes,
)

MAX_OUTPUTS = 1 << 16  # no exact reference past this many outputs
CUMULATIVE_ORDER = 8  # Gauss–Legendre nodes per cell of the grid of Alg. 3


def outputs(d: int, cutoff: int | None) -> np.ndarray | None:
    """Every output of ``d`` queries, rows of 1 (above), 0 (below), -1 (aborted
    after ``cutoff`` answers above; ``None``: no cutoff); ``None`` past
    :data:`MAX_OUTPUTS` outputs."""
    if cutoff is None or cutoff >= d:
        if 2**d > MAX_OUTPUTS:
            return None
        return np.array(list(itertools.product((0, 1), repeat=d)), dtype=np.int8)
    count = sum(math.comb(d, j) for j in range(cutoff)) + math.comb(d, cutoff)
    if count > MAX_OUTPUTS:
        return None
    rows = []

    def extend(prefix: list[int], above: int) -> None:
        if len(prefix) == d:
            rows.append(prefix)
        elif above == cutoff:
            rows.append(prefix + [-1] * (d - len(prefix)))
        else:
            extend(prefix + [0], above)
            extend(prefix + [1], above + 1)

    extend([], 0)
    return np.array(rows, dtype=np.int8)


def _scales(params) -> tuple[float, float, float]:
    return (
        float(params.threshold_scale),
        float(params.query_scale),
        float(params.threshold),
    )


def _query_log_probs(q, r, params):
    """``(log A_i(r), log B_i(r))``, shape ``(d, len(r))``."""
    _, query_scale, threshold = _scales(params)
    t = threshold + r[None, :] - np.asarray(q, float)[:, None]
    return laplace_log_sf_cdf(t, query_scale)


def single_threshold_log_probs(q: np.ndarray, rows: np.ndarray, params) -> np.ndarray:
    """``log P[y]`` of each row of ``rows`` (1 / 0 / -1) under one threshold draw
    (Alg. 1, 4, 5, 6; one segment of Alg. 2)."""
    threshold_scale, query_scale, threshold = _scales(params)
    q = np.asarray(q, float)
    kinks = np.concatenate([[0.0], q - threshold])
    wide = max(threshold_scale, query_scale)
    narrow = min(s for s in (threshold_scale, query_scale) if s > 0)
    nodes, log_w = quadrature_nodes(
        kinks,
        kinks.min() - TAIL_SCALES * wide,
        kinks.max() + TAIL_SCALES * wide,
        narrow / 2,
    )
    log_above, log_below = _query_log_probs(q, nodes, params)
    log_above, log_below = (
        np.maximum(log_above, LOG_ZERO),
        np.maximum(log_below, LOG_ZERO),
    )
    integrand = (
        laplace_log_pdf(nodes, threshold_scale)
        + (rows == 1).astype(float) @ log_above
        + (rows == 0).astype(float) @ log_below
    )
    result = log_integrate(integrand, log_w)
    return np.where(result < LOG_ZERO / 2, -np.inf, result)


def svt2_log_probs(q: np.ndarray, rows: np.ndarray, params) -> np.ndarray:
    """``log P[y]`` under Alg. 2: a product over the segments between answers
    above, each with its own threshold draw."""
    d = rows.shape[1]
    segments: dict[bytes, int] = {}
    members = []
    for y in rows:
        parts, start = [], 0
        for i in range(d):
            if y[i] == -1:
                break
            if y[i] == 1 or i == d - 1:
                segment = np.full(d, -1, dtype=np.int8)
                segment[start : i + 1] = y[start : i + 1]
                parts.append(segments.setdefault(segment.tobytes(), len(segments)))
                start = i + 1
        members.append(parts)
    unique = np.array([np.frombuffer(k, dtype=np.int8) for k in segments])
    log_seg = single_threshold_log_probs(q, unique, params)
    return np.array([log_seg[parts].sum() for parts in members])


def _discrete_range(params, tx, log_probs) -> tuple[float, float] | None:
    tx = np.asarray(tx, float)
    rows = outputs(tx.shape[1], _cutoff(params))
    if rows is None:
        return None
    return loss_range(log_probs(tx[0], rows, params), log_probs(tx[1], rows, params))


def _cutoff(params) -> int | None:
    cutoff = getattr(params, "cutoff", None)
    return None if cutoff is None else int(cutoff)


def _epsilon(bounds) -> float | None:
    return None if bounds is None else epsilon_of(*bounds)


def exact_epsilon_discrete(params, tx: np.ndarray) -> float | None:
    """The exact loss of Alg. 1, 4, 5 or 6 on the pair ``tx``."""
    return _epsilon(_discrete_range(params, tx, single_threshold_log_probs))


def exact_epsilon_svt2(params, tx: np.ndarray) -> float | None:
    """The exact loss of Alg. 2 on the pair ``tx``."""
    return _epsilon(_discrete_range(params, tx, svt2_log_probs))


# --- Alg. 3: densities of the noisy answers ---------------------------------------


class _Integrand:
    r"""The factors of :math:`G_F` at the Gauss–Legendre nodes of every cell of a
    grid of :math:`r`, for one input ``q``: computed once, shared by every F."""

    def __init__(self, q: np.ndarray, grid: np.ndarray, params):
        self.q, self.grid, self.params = q, grid, params
        self.log_f, self.log_below, self.log_w = self.factors(grid[:-1], grid[1:])

    def factors(self, starts, stops):
        x, w = np.polynomial.legendre.leggauss(CUMULATIVE_ORDER)
        half = (stops - starts)[:, None] / 2
        nodes = (starts[:, None] + half * (x + 1)).ravel()
        _, log_below = _query_log_probs(self.q, nodes, self.params)
        log_f = laplace_log_pdf(nodes, float(self.params.threshold_scale))
        return log_f, log_below, np.log(half * w)


class _CumulativeG:
    r""":math:`\ln G_F(m)` on the grid of :math:`r = m - T`, and at any point."""

    def __init__(self, integrand: _Integrand, below: np.ndarray):
        self.integrand, self.below = integrand, below
        q, grid, params = integrand.q, integrand.grid, integrand.params
        threshold_scale, query_scale, threshold = _scales(params)
        # left of every kink the integrand is C e^{lambda r}: a closed-form tail
        rate = 1 / threshold_scale + int(below.sum()) / query_scale
        log_c = -math.log(2 * threshold_scale) + np.sum(
            math.log(0.5) + (threshold - q[below]) / query_scale
        )
        tail = log_c + rate * grid[0] - math.log(rate)
        increments = self._cells(integrand.log_f, integrand.log_below, integrand.log_w)
        self.values = np.logaddexp.accumulate(np.concatenate([[tail], increments]))

    def _cells(self, log_f, log_below, log_w):
        integrand = (log_f + log_below[self.below].sum(axis=0)).reshape(log_w.shape)
        return logsumexp(integrand + log_w, axis=-1)

    def at(self, r: float) -> float:
        """``ln G_F`` at ``T + r``: the grid's value below ``r``, plus the rest."""
        grid = self.integrand.grid
        k = int(np.clip(np.searchsorted(grid, r) - 1, 0, grid.size - 2))
        if r <= grid[k]:
            return float(self.values[k])
        extra = self._cells(*self.integrand.factors(np.array([grid[k]]), np.array([r])))
        return float(np.logaddexp(self.values[k], extra[0]))


def _laplace_ratio(v, q, q_prime, scale):
    r""":math:`\ln f_\nu(v - q) - \ln f_\nu(v - q')`, monotone in v."""
    return (np.abs(v - q_prime) - np.abs(v - q)) / scale


def _svt3_range(params, tx: np.ndarray) -> tuple[float, float] | None:
    tx = np.asarray(tx, float)
    x, x_prime = tx
    d = x.size
    rows = outputs(d, _cutoff(params))
    if rows is None:
        return None
    threshold_scale, query_scale, threshold = _scales(params)
    kinks = np.concatenate([[0.0], x - threshold, x_prime - threshold])
    wide, narrow = max(threshold_scale, query_scale), min(threshold_scale, query_scale)
    near = np.arange(kinks.min() - 1, kinks.max() + 10 * wide, narrow / 1000)
    far = kinks.max() + wide * np.geomspace(10, TAIL_SCALES, 400)
    grid = np.unique(np.concatenate([near, kinks, far]))
    m_grid = grid + threshold
    integrands = [_Integrand(q, grid, params) for q in (x, x_prime)]
    lo, hi = math.inf, -math.inf
    for y in rows:
        above, below = y == 1, y == 0
        if not above.any():  # an atom: every answered query below
            atom = single_threshold_log_probs(x, y[None], params)[0]
            atom_prime = single_threshold_log_probs(x_prime, y[None], params)[0]
            lo, hi = min(lo, atom - atom_prime), max(hi, atom - atom_prime)
            continue
        g, g_prime = (_CumulativeG(integrand, below) for integrand in integrands)
        # m -> inf: G_F(inf) is the probability that every query of F is below
        flags = np.where(below, 0, -1).astype(np.int8)[None]
        g_inf = (
            single_threshold_log_probs(x, flags, params)[0]
            - single_threshold_log_probs(x_prime, flags, params)[0]
        )
        positions = np.flatnonzero(above)
        q, q_prime = x[positions, None], x_prime[positions, None]
        limit = (q - q_prime) / query_scale  # each ratio as v -> inf

        def answers(m, sign, q=q, q_prime=q_prime, limit=limit):
            """The extreme over v >= m, min v = m, of the answers' log ratio."""
            ratios = _laplace_ratio(m[None, :], q, q_prime, query_scale)
            pick = np.max if sign > 0 else np.min
            rest = (np.maximum if sign > 0 else np.minimum)(ratios, limit)
            return pick(ratios - rest, axis=0) + rest.sum(axis=0)

        def loss(m, sign, g=g, g_prime=g_prime, answers=answers):
            r = m - threshold
            return g.at(r) - g_prime.at(r) + answers(np.array([m]), sign)[0]

        on_grid = g.values - g_prime.values
        for sign in (1.0, -1.0):
            values = on_grid + answers(m_grid, sign)
            i = int(np.argmax(sign * values))
            a, b = m_grid[max(i - 1, 0)], m_grid[min(i + 1, m_grid.size - 1)]
            best = optimize.minimize_scalar(
                lambda m, s=sign, loss=loss: -s * loss(m, s),
                bounds=(a, b),
                method="bounded",
                options={"xatol": 1e-12 * max(1.0, abs(a))},
            )
            edge = g_inf + float(limit.sum())  # m -> inf
            candidates = (values[i], loss(best.x, sign), edge)
            if sign > 0:
                hi = max(hi, *candidates)
            else:
                lo = min(lo, *candidates)
    return lo, hi


def exact_epsilon_svt3(params, tx: np.ndarray) -> float | None:
    """The exact loss of Alg. 3 on the pair ``tx`` (densities of its answers)."""
    return _epsilon(_svt3_range(params, tx))


def exact_epsilon_svt34(params, tx: np.ndarray) -> float | None:
    """The exact loss of ``svt3`` and ``svt4`` side by side: independent outputs,
    so the log ratios add, and the extremes add."""
    three = _svt3_range(params.svt3, tx)
    four = _discrete_range(params.svt4, tx, single_threshold_log_probs)
    if three is None or four is None:
        return None
    return epsilon_of(three[0] + four[0], three[1] + four[1])
