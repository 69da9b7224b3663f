r"""The ceiling: the best bound on epsilon that any event can give at N draws.

An audit counts an event :math:`S` on :math:`N` draws of :math:`M(x)` and of
:math:`M(x')` and reports :math:`\ln P_{lo}[M(x) \in S] - \ln P_{hi}[M(x') \in S]`
(both orders), with Clopper–Pearson ends at confidence :math:`1 - \alpha/(2K)` per
two-sided interval, :math:`K` the events carried into the counted sample
(:func:`mcdp.statistics.delta_bounds`; the learned attack carries
:data:`mcdp.attacks.MAX_EVENTS` = 3). The *ceiling* of an event with exact
probabilities :math:`(p, q)` is that bound at the expected counts :math:`pN` and
:math:`qN` (the ends are beta quantiles, defined for real counts, as in
:func:`mcdp.statistics.expected_width`); the ceiling of a case is the largest over
its events. An audit at :math:`N` draws is above it only by the luck of its counts.

The events are those of the likelihood ratio (Neyman–Pearson): with
:math:`L(y) = \ln P[M(x) = y] / P[M(x') = y]`, the sets :math:`\{L \ge t\}` and
:math:`\{L < t\}` for every :math:`t`. Each case's output space is cut into cells
whose probabilities under both inputs are computed exactly (closed forms,
Gauss–Legendre quadrature between the kinks, or convolution), and the events are
the unions of cells ordered by their ratio, so every event is a real event of the
output and its probabilities are exact; with cells finer than the loss varies, they
are :math:`\{L \ge t\}` up to the cells' width:

* **exact enumeration** of discrete outputs: Report Noisy Max's index (``1``, ``2``),
  the Sparse Vector variants with flags (``svt1``, ``2``, ``4``, ``5``, ``6``; the
  probabilities of :mod:`mcdp.mechanisms._svt_exact`), the truncated geometric (in
  integers);
* **closed form** for one Laplace coordinate (``noisy-hist1``, ``noisy-hist2``):
  its loss :math:`(|y - x'| - |y - x|)/b` is :math:`\pm a` (:math:`a = |x - x'|/b`)
  outside the two inputs, linear between, cut into cells of loss width
  :math:`a/5000`;
* **convolution** of several Laplace coordinates (``prefix-sum``: an invertible
  linear map of :math:`x + \eta`; ``laplace-parallel``: 20 copies): the loss of each
  coordinate is binned (:data:`BINS` bins over the total range of the sum), the
  bins convolved under each input separately; the events are thresholds on the sum
  of the binned losses;
* **cells of a value** for Report Noisy Max's value (``3``, ``4``): the maximum's CDF
  :math:`\prod_k F(t - x_k)` at the edges of fine cells (geometric near every input);
* **quadrature** for ``svt3``, whose answers above the threshold are noisy values:
  the mass of a value cell :math:`(e_i, e_{i+1})` of the query answered above at
  position :math:`p`, the queries of :math:`F` below, is
  :math:`\int f_\rho(r) \prod_{F} B_j(r)\, P[x_p + \nu \in (e_i, e_{i+1}),\
  x_p + \nu \ge T + r]\,dr`, split at the cells' edges; ``svt34-parallel`` adds
  two values (cutoff 2; cells of the plane built from the same integrals) and
  convolves the binned loss of ``svt3`` with that of ``svt4``;
* ``rappor``, ``one-time-rappor``: exact enumeration of the reported bits where the
  pair's Bloom filters differ (independent coins; the other bits carry no loss);
* ``numerical-svt``: the output's pattern (Sparse Vector's probabilities) with the
  binned Laplace losses of its released answers convolved in;
* ``snapping``: the counts of the :math:`2^{54}` float uniforms behind each output
  level (:func:`mcdp.mechanisms.float_laplace.snapping_log_probs`).

``laplace-float`` is not computed (:class:`ValueError`): its best events are
those of the float support (outputs of one input that the other cannot produce),
whose probabilities depend on every rounding of the sampler.

Mass that the cells leave out (beyond 40 noise scales, below 1e-15) forms one
cell of its own, so every partition is complete.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from mcdp import _validate
from mcdp.mechanisms import SUITE, float_laplace, get_mechanism, numerical_svt, rappor
from mcdp.mechanisms import _svt_exact as svt_exact
from mcdp.mechanisms._base import laplace_log_pdf
from mcdp.mechanisms._numerics import laplace_log_sf_cdf
from mcdp.mechanisms.counting import COPIES, geo_sample_counts
from mcdp.mechanisms.noisy_max import argmax_log_probs
from mcdp.mechanisms.suite import PEER_PAIRS
from mcdp.pairs import make_pair
from mcdp.statistics import SEARCH_LIMIT, clopper_pearson_arrays

BINS = 10_000  # loss bins between 0 and the sum's largest loss (convolutions)
TAIL_SCALES = 40.0  # cells reach this many noise scales past the inputs
GL_NODES = 6  # Gauss–Legendre nodes per cell of the threshold noise (svt3)
SVT34_BIN = 1e-4  # loss bins of svt34-parallel
NUMERICAL_SVT_BIN = 1e-5  # loss bins of numerical-svt
COARSE = 1024  # events evaluated along each family before refining
REFINE = 8  # grid points refined
TIE = 1e-12  # log ratios closer than this are one level of the loss


class Ceiling(NamedTuple):
    r"""The best bound any event gives, and the event that attains it: ``event``
    names it by the privacy loss :math:`L(y) = \ln P[M(x) = y] / P[M(x') = y]`
    (up to the cells' width) and the order of the bound ("x over x'": :math:`\ln
    P_{lo}[M(x) \in S] - \ln P_{hi}[M(x') \in S]`)."""

    value: float  # the ceiling: max over events of the bound at expected counts
    p: float  # P[M(x) in S] of the attaining event S (x: the pair's first row)
    q: float  # P[M(x') in S]
    event: str  # the event, e.g. "{L >= 0.0999}, x over x'"
    method: str  # how its probabilities were computed
    draws: int
    confidence: float
    num_events: int

    @property
    def spread(self) -> float:
        r"""The standard deviation of the log ratio that one counted sample of
        ``draws`` per input measures on the attaining event, and so of the bound
        it gives there: :math:`\sqrt{(1-p)/(Np) + (1-q)/(Nq)}` (the delta method
        on the two binomial counts; ``inf`` where an event has probability 0).
        An attack that counts exactly this event lands within about this much of
        ``value``, above or below it; bounds of single audits compared with the
        ceiling differ from it by such amounts, and only their mean over seeds
        comes closer."""
        n = float(self.draws)
        if self.p <= 0 or self.q <= 0:
            return math.inf
        return math.sqrt((1 - self.p) / (n * self.p) + (1 - self.q) / (n * self.q))


class _Events(NamedTuple):
    p: np.ndarray  # P[M(x) in S] per event
    q: np.ndarray  # P[M(x') in S]
    threshold: np.ndarray  # t of {L >= t} or {L < t}
    upper: np.ndarray  # True: {L >= t}; False: {L < t}
    method: str


def ceiling(
    mechanism: str,
    pair: str | None = None,
    draws: int = 10_000_000,
    confidence: float = 0.9,
    num_events: int = 3,
) -> Ceiling:
    r"""The ceiling of a suite case: the best pure-epsilon lower bound that any
    event can give with ``draws`` draws per input.

    Args:
      mechanism: a case of :data:`mcdp.mechanisms.suite.SUITE`, at its claimed
        epsilon and input length.
      pair: a named pair (:func:`mcdp.pairs.make_pair`); by default the case's
        :data:`~mcdp.mechanisms.suite.PEER_PAIRS` pair.
      draws: draws per input of the counted sample.
      confidence: the audit's joint confidence (the suite's audits use 0.9).
      num_events: events carried into the counted sample (Bonferroni over
        ``2 num_events`` intervals).

    Returns:
      A :class:`Ceiling`; ``value`` is 0 where no event gives a positive bound.

    Raises:
      ValueError: for an unknown case or pair, bad arguments, or a case whose
        output probabilities are not computed here.

    Example:
      >>> round(ceiling("truncated-geometric", "scalar-0-1", 10**8).value, 4)
      0.1173
    """
    draws = _validate.integer("draws", draws, low=1, high=SEARCH_LIMIT)
    confidence = _validate.open_unit("confidence", confidence)
    num_events = _validate.integer("num_events", num_events, low=1, high=1 << 20)
    _validate.one_of("mechanism", mechanism, _BUILDERS)
    if pair is None:
        pair = PEER_PAIRS[mechanism]
    events = _events(mechanism, pair)
    return _best(events, draws, confidence, num_events)


def supported() -> tuple[str, ...]:
    """The cases of the suite whose ceiling :func:`ceiling` computes."""
    return tuple(
        name
        for name in SUITE
        if _BUILDERS.get(name, _not_computed) is not _not_computed
    )


# --- the bound at expected counts ------------------------------------------------


def bounds(p, q, draws: int, confidence: float, num_events: int):
    r"""``(forward, backward)``: the bounds :math:`\ln P_{lo}[x] - \ln P_{hi}[x']`
    and :math:`\ln P_{lo}[x'] - \ln P_{hi}[x]` of events with probabilities ``p``
    (under x) and ``q`` (under x') at the expected counts of ``draws`` draws."""
    level = 1 - (1 - confidence) / (2 * num_events)
    n = float(draws)
    p = np.clip(np.asarray(p, np.float64), 0.0, 1.0)
    q = np.clip(np.asarray(q, np.float64), 0.0, 1.0)
    p_lo, p_hi = clopper_pearson_arrays(p * n, n, level)
    q_lo, q_hi = clopper_pearson_arrays(q * n, n, level)
    with np.errstate(divide="ignore"):
        return np.log(p_lo) - np.log(q_hi), np.log(q_lo) - np.log(p_hi)


def _best(events: _Events, draws: int, confidence: float, num_events: int):
    value, k, forward = -math.inf, 0, True

    def evaluate(index: np.ndarray) -> np.ndarray:
        nonlocal value, k, forward
        ahead, behind = bounds(
            events.p[index], events.q[index], draws, confidence, num_events
        )
        for values, is_forward in ((ahead, True), (behind, False)):
            i = int(np.argmax(values)) if values.size else 0
            if values.size and values[i] > value:
                value, k, forward = float(values[i]), int(index[i]), is_forward
        return np.maximum(ahead, behind)

    if events.p.size <= 2 * COARSE:
        evaluate(np.arange(events.p.size))
    else:  # a coarse grid along each family, then around its best points
        for family in (np.flatnonzero(events.upper), np.flatnonzero(~events.upper)):
            grid = _grid(family.size)
            coarse = evaluate(family[grid])
            for i in np.argsort(-coarse)[:REFINE]:
                low, high = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
                evaluate(family[low : high + 1])
    if not value > 0:  # no event separates the inputs
        return Ceiling(0.0, 0.0, 0.0, "none", events.method, draws, confidence,
                       num_events)  # fmt: skip
    op = ">=" if events.upper[k] else "<"
    order = "x over x'" if forward else "x' over x"
    event = f"{{L {op} {events.threshold[k]:.4g}}}, {order}"
    return Ceiling(value, float(events.p[k]), float(events.q[k]), event,
                   events.method, draws, confidence, num_events)  # fmt: skip


def _grid(size: int) -> np.ndarray:
    """About :data:`COARSE` indices into a family of ``size`` events (upper sets or
    lower sets, along which the bound varies smoothly): uniform, and log-spaced
    towards both ends, where the rare events are."""
    ends = np.geomspace(1, size, COARSE // 2) - 1
    grid = np.concatenate(
        [np.linspace(0, size - 1, COARSE // 2), ends, size - 1 - ends]
    )
    return np.unique(grid.round().astype(np.int64))


def cell_events(p, q, method: str) -> _Events:
    r"""The events of a partition into cells with masses ``p`` (under x) and ``q``
    (under x'): the unions of the cells whose log ratio is at least (or below)
    each level, cells of one level (within :data:`TIE`) kept together."""
    p = np.asarray(p, np.float64).ravel()
    q = np.asarray(q, np.float64).ravel()
    keep = (p > 0) | (q > 0)
    p, q = p[keep], q[keep]
    with np.errstate(divide="ignore"):
        ratio = np.log(p) - np.log(q)
    order = np.argsort(-ratio, kind="stable")
    p, q, ratio = p[order], q[order], ratio[order]
    scale = np.maximum(1.0, np.abs(np.where(np.isfinite(ratio), ratio, 0.0)))
    with np.errstate(invalid="ignore"):  # inf - inf: one level
        step = ratio[:-1] - ratio[1:] > TIE * scale[1:]
    cut = np.flatnonzero(step)  # the upper set ends at cell `cut`, inclusive
    above_p, above_q = np.cumsum(p)[cut], np.cumsum(q)[cut]
    below_p = np.cumsum(p[::-1])[::-1][cut + 1]
    below_q = np.cumsum(q[::-1])[::-1][cut + 1]
    return _Events(
        np.concatenate([above_p, below_p]),
        np.concatenate([above_q, below_q]),
        np.concatenate([ratio[cut], ratio[cut]]),
        np.concatenate([np.ones(cut.size, bool), np.zeros(cut.size, bool)]),
        method,
    )


# --- exact masses of cells ---------------------------------------------------------


def laplace_interval(a, b, scale: float) -> np.ndarray:
    r""":math:`P[a < \eta < b]` for :math:`\eta \sim \mathrm{Lap}(s)`, s = ``scale``,
    elementwise, each side from its own tail, so that small cells keep their
    relative accuracy (``a`` may be ``-inf``, ``b`` ``+inf``)."""
    a, b = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64))
    with np.errstate(over="ignore", invalid="ignore"):
        width = -np.expm1((a - b) / scale)
        left = 0.5 * np.exp(np.minimum(b, 0) / scale) * width  # b <= 0
        right = 0.5 * np.exp(-np.maximum(a, 0) / scale) * width  # a >= 0
        middle = (
            1
            - 0.5 * np.exp(np.minimum(a, 0) / scale)
            - 0.5 * np.exp(-np.maximum(b, 0) / scale)
        )
    return np.where(b <= 0, left, np.where(a >= 0, right, middle))


def _with_rest(p: np.ndarray, q: np.ndarray):
    """The cells plus one cell of the mass they leave out (clipped at 0)."""
    p, q = np.ravel(p), np.ravel(q)
    rest_p, rest_q = max(0.0, 1 - p.sum()), max(0.0, 1 - q.sum())
    return np.append(p, rest_p), np.append(q, rest_q)


def _laplace_cells(x: float, x_prime: float, scale: float, width: float):
    """Cells of one Laplace coordinate: the two half-lines outside the inputs (the
    loss's atoms) and cells of loss width at most ``width`` between them."""
    lo, hi = min(x, x_prime), max(x, x_prime)
    cells = max(1, math.ceil(2 * (hi - lo) / scale / width))
    edges = np.concatenate([[-np.inf], np.linspace(lo, hi, cells + 1), [np.inf]])
    return tuple(
        laplace_interval(edges[:-1] - c, edges[1:] - c, scale) for c in (x, x_prime)
    )


# --- binned losses and their sums --------------------------------------------------


class _Histogram(NamedTuple):
    offset: int  # bin index of p[0]: the loss k * width sits at index k - offset
    p: np.ndarray
    q: np.ndarray


def _histogram(p, q, width: float) -> _Histogram:
    """The masses of the cells summed per bin of their log ratio (bins of
    ``width`` centred on its multiples). Cells of an infinite ratio (a mass that
    underflows under one input only) join the end bins."""
    p, q = np.ravel(p), np.ravel(q)
    keep = (p > 0) | (q > 0)
    p, q = p[keep], q[keep]
    with np.errstate(divide="ignore"):
        ratio = np.log(p) - np.log(q)
    finite = np.isfinite(ratio)
    if p.size == 0:  # no mass under either input
        return _Histogram(0, np.zeros(1), np.zeros(1))
    if not finite.any():
        raise ValueError("Expected a cell of finite loss to bin, got none.")
    index = np.zeros(p.size, np.int64)
    index[finite] = np.round(ratio[finite] / width).astype(np.int64)
    low, high = index[finite].min(), index[finite].max()
    index[~finite] = np.where(ratio[~finite] > 0, high, low)
    size = int(high - low + 1)
    return _Histogram(
        int(low),
        np.bincount(index - low, weights=p, minlength=size),
        np.bincount(index - low, weights=q, minlength=size),
    )


def _add(first: _Histogram | None, second: _Histogram) -> _Histogram:
    """The bins of two disjoint sets of cells together."""
    if first is None:
        return second
    low = min(first.offset, second.offset)
    high = max(first.offset + first.p.size, second.offset + second.p.size)
    p, q = np.zeros(high - low), np.zeros(high - low)
    for hist in (first, second):
        where = slice(hist.offset - low, hist.offset - low + hist.p.size)
        p[where] += hist.p
        q[where] += hist.q
    return _Histogram(low, p, q)


def _with_rest_bin(hist: _Histogram) -> _Histogram:
    """The histogram plus the mass its cells leave out, in the bin of ratio 0
    (a genuine cell: the complement of all the others)."""
    hist = _add(hist, _Histogram(0, np.zeros(1), np.zeros(1)))
    rest_p, rest_q = max(0.0, 1 - hist.p.sum()), max(0.0, 1 - hist.q.sum())
    p, q = hist.p.copy(), hist.q.copy()
    p[-hist.offset] += rest_p
    q[-hist.offset] += rest_q
    return _Histogram(hist.offset, p, q)


def _convolve(first: _Histogram, second: _Histogram) -> _Histogram:
    """The binned loss of two independent outputs side by side (direct sums of
    non-negative terms: tiny masses keep their relative accuracy)."""
    return _Histogram(
        first.offset + second.offset,
        np.convolve(first.p, second.p),
        np.convolve(first.q, second.q),
    )


# --- the cases ---------------------------------------------------------------------


def _setup(mechanism: str, pair: str):
    case = SUITE[mechanism]
    mech = get_mechanism(mechanism)
    params = mech.calibrate(case.epsilon, 0.0, case.dim, 1.0)
    tx = mech.transformed(make_pair(pair, case.dim), params)
    return params, tx


def _laplace_sum(params, tx: np.ndarray, copies: int = 1) -> _Events:
    """Independent Laplace coordinates of scale ``params.scale``: closed form for
    one coordinate that differs, convolution of binned losses for several."""
    scale = float(params.scale)
    x, x_prime = (np.tile(row, copies) for row in tx)
    moved = np.flatnonzero(x != x_prime)
    if moved.size == 0:
        raise ValueError("Expected a pair whose rows differ, got equal rows.")
    spread = np.abs(x - x_prime)[moved] / scale  # each coordinate's loss is in ±a
    if moved.size == 1:
        width = spread[0] / 5000
        cells = _laplace_cells(x[moved[0]], x_prime[moved[0]], scale, width)
        return cell_events(*cells, "closed form (one Laplace coordinate)")
    width = spread.sum() / BINS
    total = None
    for i in moved:
        cells = _laplace_cells(x[i], x_prime[i], scale, width / 2)
        hist = _histogram(*cells, width)
        total = hist if total is None else _convolve(total, hist)
    return cell_events(
        total.p,
        total.q,
        f"convolution of {moved.size} Laplace coordinates' binned losses",
    )


def _noisy_hist(mechanism: str, pair: str) -> _Events:
    return _laplace_sum(*_setup(mechanism, pair))


def _laplace_parallel(mechanism: str, pair: str) -> _Events:
    return _laplace_sum(*_setup(mechanism, pair), copies=COPIES)


def _report_noisy_max_index(mechanism: str, pair: str) -> _Events:
    params, tx = _setup(mechanism, pair)
    noise = "laplace" if mechanism == "report-noisy-max1" else "exponential"
    log_p, log_q = (argmax_log_probs(row, float(params.scale), noise) for row in tx)
    return cell_events(
        np.exp(log_p), np.exp(log_q), "exact enumeration (quadrature per index)"
    )


def _max_log_cdf(t: np.ndarray, x: np.ndarray, scale: float, noise: str):
    r""":math:`\ln P[\max_k (x_k + \eta_k) \le t]` at every ``t``."""
    z = t[None, :] - x[:, None]
    if noise == "laplace":
        return laplace_log_sf_cdf(z, scale)[1].sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_cdf = np.where(z > 0, np.log(-np.expm1(-np.maximum(z, 0) / scale)), -np.inf)
    return log_cdf.sum(axis=0)


def _report_noisy_max_value(mechanism: str, pair: str) -> _Events:
    """Cells of the maximum's value: uniform (a 400th of a scale) over the inputs'
    span plus 40 scales, and geometric on both sides of every input (down to 1e-9
    scales, where the exponential noise's support starts)."""
    params, tx = _setup(mechanism, pair)
    scale = float(params.scale)
    noise = "laplace" if mechanism == "report-noisy-max3" else "exponential"
    kinks = np.unique(tx)
    lo = kinks.min() - (TAIL_SCALES * scale if noise == "laplace" else 0.0)
    hi = kinks.max() + TAIL_SCALES * scale
    near = scale * np.geomspace(1e-9, 1, 400)
    edges = np.concatenate(
        [np.arange(lo, hi, scale / 400), [hi], kinks, (kinks[:, None] + near).ravel()]
    )
    edges = np.concatenate([edges, (kinks[:, None] - near).ravel()])
    edges = np.unique(edges[(edges >= lo) & (edges <= hi)])
    masses = []
    for row in tx:
        log_cdf = _max_log_cdf(edges, row, scale, noise)
        cdf = np.exp(log_cdf)
        sf = -np.expm1(log_cdf)
        inner = np.where(cdf[1:] <= 0.5, cdf[1:] - cdf[:-1], sf[:-1] - sf[1:])
        masses.append(np.concatenate([[cdf[0]], np.maximum(inner, 0), [sf[-1]]]))
    return cell_events(*masses, "cells of the value (closed-form CDF)")


def svt_outputs(mechanism: str, pair: str) -> tuple[np.ndarray, ...]:
    """``(rows, p, q)``: every output of a Sparse Vector case with discrete outputs
    (``svt1``, ``svt2``, ``svt4``, ``svt5``, ``svt6``), rows of 1 (above), 0
    (below) and -1 (aborted) as the mechanism encodes them, and each one's exact
    probability under the pair's two inputs."""
    params, tx = _setup(mechanism, pair)
    rows = svt_exact.outputs(tx.shape[1], svt_exact._cutoff(params))
    if rows is None:
        raise ValueError(f"Expected at most {svt_exact.MAX_OUTPUTS} outputs to "
                         f"enumerate for {mechanism!r}, got more.")  # fmt: skip
    log_probs = (
        svt_exact.svt2_log_probs
        if mechanism == "svt2"
        else svt_exact.single_threshold_log_probs
    )
    log_p, log_q = (log_probs(row, rows, params) for row in tx)
    return rows, np.exp(log_p), np.exp(log_q)


def _svt_discrete(mechanism: str, pair: str) -> _Events:
    _, p, q = svt_outputs(mechanism, pair)
    return cell_events(p, q, "exact enumeration (quadrature over threshold)")


def _truncated_geometric(mechanism: str, pair: str) -> _Events:
    params, tx = _setup(mechanism, pair)
    k, n = int(params.k), int(params.upper)
    if np.any(tx != np.round(tx)) or np.any(tx < 0) or np.any(tx > n):
        raise ValueError(f"Expected a pair of counts in [0, {n}], got {tx.tolist()}.")
    masses = []
    for row in tx.astype(int):
        joint = np.ones(1)
        for c in row:  # independent entries: the joint law is the outer product
            counts = geo_sample_counts(int(c), k, n)
            joint = np.multiply.outer(joint, np.array(counts) / sum(counts)).ravel()
        masses.append(joint)
    return cell_events(*masses, "exact enumeration (integer counts)")


# --- svt3: noisy answers above the threshold ---------------------------------------


def _svt3_edges(params, tx: np.ndarray, fine: float, span: float, far: int):
    """Value edges: every kink (T, the inputs), a uniform core of step ``fine``
    reaching ``span`` past them, then ``far`` geometric edges per side out to
    :data:`TAIL_SCALES` noise scales."""
    threshold_scale, query_scale = (
        float(params.threshold_scale),
        float(params.query_scale),
    )
    kinks = np.unique(np.concatenate([[float(params.threshold)], np.ravel(tx)]))
    wide = max(threshold_scale, query_scale)
    core = np.arange(kinks.min() - span, kinks.max() + span + fine, fine)
    reach = np.geomspace(span, TAIL_SCALES * wide, far)
    return np.unique(
        np.concatenate([core, kinks, kinks.min() - reach, kinks.max() + reach])
    )


class _Svt3Cells:
    r"""The integrals over the threshold noise :math:`r` that the value cells of
    ``svt3`` need, for one input ``x``: the r-cell :math:`k` is where
    :math:`T + r` lies in the value cell :math:`(e_k, e_{k+1})`."""

    def __init__(self, params, x: np.ndarray, edges: np.ndarray):
        self.x, self.edges = x, edges
        self.query_scale = float(params.query_scale)
        self.threshold = float(params.threshold)
        nodes, weights = np.polynomial.legendre.leggauss(GL_NODES)
        starts, stops = edges[:-1] - self.threshold, edges[1:] - self.threshold
        half = (stops - starts)[:, None] / 2
        self.nodes = starts[:, None] + half * (nodes + 1)  # (cells, GL_NODES)
        self.log_w = np.log(half * weights) + laplace_log_pdf(
            self.nodes, float(params.threshold_scale)
        )
        # log P[x_i + nu < T + r] at every node: (d, cells, GL_NODES)
        shifted = self.threshold + self.nodes[None] - x[:, None, None]
        self.log_below = laplace_log_sf_cdf(shifted, self.query_scale)[1]

    def base(self, below: np.ndarray) -> np.ndarray:
        r"""Weights times :math:`f_\rho(r) \prod_{i \in F} B_i(r)` at the nodes."""
        return np.exp(self.log_w + self.log_below[below].sum(axis=0))

    def value_mass(self, position: int) -> np.ndarray:
        """P[x_p + nu in each value cell]."""
        shift = self.x[position]
        return laplace_interval(
            self.edges[:-1] - shift, self.edges[1:] - shift, self.query_scale
        )

    def partial(self, position: int) -> np.ndarray:
        """P[x_p + nu in (T + r, e_{k+1})] at the nodes of r-cell k."""
        shift = self.x[position]
        return laplace_interval(
            self.threshold + self.nodes - shift,
            self.edges[1:, None] - shift,
            self.query_scale,
        )

    def one(self, base: np.ndarray, position: int) -> np.ndarray:
        """Masses of the value cells of one answer above (every answer above
        needs :math:`T + r` below its value): cells above r's cell in full, r's
        own cell in part."""
        weight = base.sum(axis=1)
        before = np.cumsum(weight) - weight  # P over r-cells below each cell
        return self.value_mass(position) * before + (base * self.partial(position)).sum(
            axis=1
        )

    def two(self, base: np.ndarray, first: int, second: int) -> np.ndarray:
        """Masses of the value cells (i, j) of two answers above."""
        weight = base.sum(axis=1)
        before = np.cumsum(weight) - weight
        m1, m2 = self.value_mass(first), self.value_mass(second)
        a1, a2 = self.one(base, first), self.one(base, second)
        both = (base * self.partial(first) * self.partial(second)).sum(axis=1)
        cells = np.triu(np.outer(a1, m2), 1) + np.tril(np.outer(m1, a2), -1)
        cells[np.diag_indices_from(cells)] = m1 * m2 * before + both
        return cells


def _svt3_masses(params, tx: np.ndarray, edges: np.ndarray):
    """The cells of every output pattern of ``svt3`` (cutoff 1 or 2) under each
    input: yields ``(p_cells, q_cells)``, the atom of no answer above included."""
    d = tx.shape[1]
    rows = svt_exact.outputs(d, svt_exact._cutoff(params))
    cells = [_Svt3Cells(params, row, edges) for row in tx]
    for y in rows:
        below, above = y == 0, np.flatnonzero(y == 1)
        if above.size == 0:
            atoms = (
                np.exp(svt_exact.single_threshold_log_probs(row, y[None], params))
                for row in tx
            )
            yield tuple(atoms)
        elif above.size == 1:
            yield tuple(c.one(c.base(below), above[0]) for c in cells)
        elif above.size == 2:
            yield tuple(c.two(c.base(below), *above) for c in cells)
        else:
            raise ValueError(f"Expected a cutoff of 1 or 2 for svt3, got {above.size}.")


def svt3_cells(mechanism: str, pair: str):
    """``(rows, edges, parts)`` of ``svt3`` on a pair: its output patterns (rows of
    1, 0 and -1 for above, below and aborted), the value cells' edges, and per
    pattern, as :func:`_svt3_masses` yields them, the masses of its cells under
    each input (one number for the pattern of no answer above)."""
    params, tx = _setup(mechanism, pair)
    rows = svt_exact.outputs(tx.shape[1], svt_exact._cutoff(params))
    edges = _svt3_edges(params, tx, fine=0.01, span=5.0, far=2000)
    return rows, edges, list(_svt3_masses(params, tx, edges))


def svt3_cell_masses(mechanism: str, pair: str) -> tuple[np.ndarray, np.ndarray]:
    """The masses ``(p, q)`` under each input of every cell of ``svt3`` on a pair
    (:func:`svt3_cells`, flat, in the order of its patterns)."""
    _, _, parts = svt3_cells(mechanism, pair)
    p = np.concatenate([np.ravel(a) for a, _ in parts])
    q = np.concatenate([np.ravel(b) for _, b in parts])
    return p, q


def _svt3(mechanism: str, pair: str) -> _Events:
    return cell_events(
        *_with_rest(*svt3_cell_masses(mechanism, pair)),
        "quadrature (cells of the answer's value)",
    )


def _svt34(mechanism: str, pair: str) -> _Events:
    """``svt3`` (cutoff 2: cells of the plane for two answers above) beside
    ``svt4``: independent outputs, so their binned losses convolve."""
    params, tx = _setup(mechanism, pair)
    width = SVT34_BIN
    edges = _svt3_edges(params.svt3, tx, fine=0.02, span=2.0, far=300)
    three = None
    for p, q in _svt3_masses(params.svt3, tx, edges):
        three = _add(three, _histogram(p, q, width))
    rows = svt_exact.outputs(tx.shape[1], svt_exact._cutoff(params.svt4))
    four = [
        np.exp(svt_exact.single_threshold_log_probs(row, rows, params.svt4))
        for row in tx
    ]
    hist = _convolve(_with_rest_bin(three), _histogram(*four, width))
    return cell_events(
        hist.p, hist.q, "quadrature (svt3's value cells) convolved with svt4"
    )


def _rappor(mechanism: str, pair: str) -> _Events:
    """Each reported bit is an independent coin whose probability depends only on
    its Bloom bit: the bits where the pair's filters differ carry the loss (a
    binomial in each direction), the others none."""
    params, tx = _setup(mechanism, pair)
    one, zero = rappor.report_probabilities(params)
    pi, pi_prime = (np.where(row > 0.5, one, zero) for row in tx)
    differ = np.flatnonzero(pi != pi_prime)
    if differ.size == 0:
        raise ValueError(f"Expected a pair whose Bloom filters differ, got {pair!r}.")
    masses = []
    for probs in (pi[differ], pi_prime[differ]):
        joint = np.ones(1)
        for prob in probs:
            joint = np.multiply.outer(joint, np.array([1 - prob, prob])).ravel()
        masses.append(joint)
    return cell_events(*masses, f"exact enumeration ({differ.size} differing bits)")


def numerical_svt_cells(mechanism: str, pair: str) -> tuple[np.ndarray, np.ndarray]:
    """The masses ``(p, q)`` under each input of the loss bins of ``numerical-svt``
    on a pair: the output's pattern (above / below / aborted per query) has Sparse
    Vector's probabilities; the answers above are fresh Laplace values, independent
    of it: per pattern, its atom convolved with the binned losses of its answers."""
    params, tx = _setup(mechanism, pair)
    (rows, log_p), (_, log_q) = (
        numerical_svt.pattern_log_probs(row, params) for row in tx
    )
    scale = float(params.answer_scale)
    width = NUMERICAL_SVT_BIN
    answers = {}
    for position in np.flatnonzero(tx[0] != tx[1]):
        cells = _laplace_cells(tx[0, position], tx[1, position], scale, width / 2)
        answers[position] = _histogram(*cells, width)
    total = None
    for y, a, b in zip(rows, np.exp(log_p), np.exp(log_q), strict=True):
        hist = _histogram([a], [b], width)
        for position in np.flatnonzero(y == 1):
            if position in answers:
                hist = _convolve(hist, answers[position])
        total = _add(total, hist)
    return total.p, total.q


def _numerical_svt(mechanism: str, pair: str) -> _Events:
    return cell_events(
        *numerical_svt_cells(mechanism, pair),
        "enumeration of patterns convolved with the answers' losses",
    )


def _snapping(mechanism: str, pair: str) -> _Events:
    """The law of each output level: counts of the 2^54 equally likely (sign, k)
    of the sampler's own arithmetic (:func:`mcdp.mechanisms.float_laplace.
    snapping_log_probs`)."""
    params, tx = _setup(mechanism, pair)
    host = float_laplace.SnappingParams(*(float(v) for v in params))
    if tx.shape[1] != 1:
        raise ValueError(f"Expected a scalar pair for snapping, got {tx.shape[1]}.")
    counts = [float_laplace.snapping_log_probs(float(row[0]), host) for row in tx]
    if counts[0] is None or counts[1] is None:
        raise ValueError("Expected snapping's output counts, got a failed check.")
    total = float(2 * 2**float_laplace.MANTISSA)
    return cell_events(
        *(np.asarray(c, np.float64) / total for c in counts),
        "exact enumeration (counts of the float uniforms)",
    )


def _not_computed(mechanism: str, pair: str) -> _Events:
    raise ValueError(
        f"Expected a mechanism with computed output probabilities, got {mechanism!r}: "
        "its best event is the float support (outputs of x that x' cannot produce), "
        "whose probability depends on every rounding of the float sampler."
    )


_BUILDERS = {
    "noisy-hist1": _noisy_hist,
    "noisy-hist2": _noisy_hist,
    "report-noisy-max1": _report_noisy_max_index,
    "report-noisy-max2": _report_noisy_max_index,
    "report-noisy-max3": _report_noisy_max_value,
    "report-noisy-max4": _report_noisy_max_value,
    "svt1": _svt_discrete,
    "svt2": _svt_discrete,
    "svt3": _svt3,
    "svt4": _svt_discrete,
    "svt5": _svt_discrete,
    "svt6": _svt_discrete,
    "svt34-parallel": _svt34,
    "prefix-sum": _noisy_hist,
    "truncated-geometric": _truncated_geometric,
    "laplace-parallel": _laplace_parallel,
    "rappor": _rappor,
    "one-time-rappor": _rappor,
    "numerical-svt": _numerical_svt,
    "laplace-float": _not_computed,
    "snapping": _snapping,
}


@functools.lru_cache(maxsize=64)
def _events(mechanism: str, pair: str) -> _Events:
    events = _BUILDERS[mechanism](mechanism, pair)
    for array in events[:4]:
        array.setflags(write=False)
    return events
