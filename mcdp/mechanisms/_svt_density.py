r"""Log densities of the Sparse Vector outputs as JAX functions (the exact privacy
loss of an output row, which the likelihood-ratio attack scores).

Given the threshold noise :math:`\rho = r`, query :math:`i` is above with
probability :math:`A_i(r) = P[\nu_i \ge T + r - x_i]` and below with :math:`B_i(r)
= 1 - A_i(r)` (:mod:`mcdp.mechanisms._svt_exact`, whose host integrals these
follow). An output's pattern has the probability

.. math:: P[\text{pattern}] = \int f_\rho(r) \prod_{i \in P} A_i(r)
   \prod_{i \in F} B_i(r)\,dr

(:func:`pattern_log_probs`; P above, F below, the aborted queries in neither). Where
the answers above are released as noisy values :math:`v_p = x_p + \nu_p`
(``svt3``), every one of them needs :math:`r \le v_p - T`, so the density is
:math:`\prod_{p \in P} f_\nu(v_p - x_p)\,G_F(\min_p v_p - T)` with
:math:`G_F(u) = \int_{-\infty}^{u} f_\rho(r) \prod_{i \in F} B_i(r)\,dr`
(:func:`capped_log_probs`).

The integrals are taken by Gauss–Legendre quadrature (:data:`GL_ORDER` nodes per
piece) on pieces that the pair fixes: split at every kink of the integrand (0,
where :math:`f_\rho` bends, and :math:`x_i - T`, :math:`x'_i - T`, where
:math:`A_i` and :math:`B_i` do) and half-way between neighbouring kinks, and on
tails past them whose pieces grow from a fraction of the integrand's steepest
decay (:data:`STEEP`) to 50 wide noise scales (:data:`FAR`), where it has decayed
by :math:`e^{-50}`. Both inputs share the nodes, so
that their quadrature errors largely cancel in the log ratio. The shapes are
static (the number of queries), so one compiled program serves every pair and
scale. Left of every kink :math:`G_F` is :math:`C e^{\lambda r}` and is taken in
closed form; the piece that :math:`u` cuts gets nodes of its own per output.
Against the host's float64 integrals (tests) the log probabilities agree to within
1e-4 in float64, on the peers' pairs and on pairs spread over several noise scales
(on the peers' pairs 3e-5; 3e-6 with 5 nodes per piece, 2e-7 with 6, 2e-9 with 8,
each node costing as much): the loss only ranks outputs into events, whose bounds
stay valid whatever its rounding, and an error of 1e-4 moves an event's edge past
a negligible share of its outputs.

Up to :data:`TABLE_QUERIES` queries, the integrals that do not depend on an
output's continuous part are tabled once per pair for every pattern, and each
output reads its own: the probability of every pattern of above, below and aborted
queries (:func:`tabled_pattern_log_probs`, each row integrated as above, so an
output reads the number that integrating it alone gives), and for :math:`G_F` the
integral over every whole piece right of the kinks, cumulated piece by piece, for
every F (:func:`capped_log_probs`). The tables do not depend on the outputs: over
outputs already drawn, XLA computes them once per program, outside a loop over
blocks. Inside the engine's draws the table of whole pieces cost 3.0 s of
``svt3``'s 7.7 s of loss on 2e7 outputs, as if made again for each block, where
``capped_log_probs`` given it (``pieces``) did not
(``benchmarks/bench_svt_tables.py --engine``): the default attack's exact loss is
given its tables, made once per pair before the draws
(``Mechanism.loss_tables``, :func:`mcdp.attacks.loss_params`). What is left per
output of :math:`G_F` is the piece that its cap cuts, where every :math:`\ln B_i`
is linear in :math:`r` left of its kink and :math:`\ln(1 - \tfrac12 e^{-t_i/b})`
right of it: with the exponentials of the piece's start tabled too, its nodes need
one exponential each instead of one per query.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from mcdp._types import Array
from mcdp.mechanisms._base import laplace_log_pdf, laplace_log_sf

GL_ORDER = 4  # Gauss–Legendre nodes per piece
# the tail pieces' ends past the kinks: in units of the integrand's steepest decay
# (1 / (1/b_rho + d/b_nu)), and of the wider noise scale
STEEP = (0.5, 1.5, 4.0, 10.0, 25.0, 60.0)
FAR = (1.0, 3.0, 8.0, 20.0, 50.0)
_GL_X, _GL_W = np.polynomial.legendre.leggauss(GL_ORDER)
_LOG_HALF = math.log(0.5)
# Up to this many queries the losses read each output's integrals from tables of
# every pattern (2^(d + 1) rows of about 280 nodes for the patterns; 2^d rows of the
# pieces for G_F). Past it a table would outgrow what it saves (at 12: 8,192 rows),
# and each output is integrated alone. numerical-svt's patterns, tabled first: the
# same numbers on the engine's blocks (tests/test_svt_density.py), its default
# audit's selection draws at 1e7 took 2.4x less time, and the exact loss's audit
# counted 2.7x as fast (benchmarks/bench_loss_memo.py --table).
TABLE_QUERIES = 12


def _log(weights: Array) -> Array:
    """``log`` of non-negative weights, ``-inf`` at 0 (a piece of length 0)
    without a NaN in its gradient."""
    positive = weights > 0
    return jnp.where(positive, jnp.log(jnp.where(positive, weights, 1)), -jnp.inf)


class Quadrature:
    """The pieces and nodes of one pair: ``breaks`` (sorted), ``lo`` (the least
    kink), and per node its position, log weight and its piece's ends."""

    def __init__(self, tx: Array, tx_prime: Array, params, dtype):
        threshold_scale = jnp.asarray(params.threshold_scale, dtype)
        query_scale = jnp.asarray(params.query_scale, dtype)
        threshold = jnp.asarray(params.threshold, dtype)
        kinks = jnp.sort(
            jnp.concatenate([
                jnp.zeros(1, dtype),
                jnp.asarray(tx, dtype) - threshold,
                jnp.asarray(tx_prime, dtype) - threshold,
            ])
        )  # fmt: skip
        # past the kinks the integrand's log falls at most at the threshold noise's
        # rate plus d times the query noise's: its shortest decay length
        decay = 1 / (1 / threshold_scale + kinks.size // 2 / query_scale)
        wide = jnp.maximum(threshold_scale, query_scale)
        reach = jnp.concatenate([
            decay * jnp.asarray(STEEP, dtype), wide * jnp.asarray(FAR, dtype)
        ])  # fmt: skip
        self.lo = kinks[0]
        self.breaks = jnp.sort(
            jnp.concatenate([
                kinks,
                (kinks[1:] + kinks[:-1]) / 2,
                kinks[0] - reach,
                kinks[-1] + reach,
            ])
        )  # fmt: skip
        starts, stops = self.breaks[:-1, None], self.breaks[1:, None]
        half = (stops - starts) / 2
        self.nodes = (starts + half * (jnp.asarray(_GL_X, dtype)[None, :] + 1)).ravel()
        self.log_weights = _log(half * jnp.asarray(_GL_W, dtype)[None, :]).ravel()
        self.piece_starts, self.piece_stops = (
            jnp.broadcast_to(ends, half.shape[:1] + (GL_ORDER,)).ravel()
            for ends in (starts, stops)
        )
        self.threshold_scale, self.query_scale = threshold_scale, query_scale
        self.threshold, self.dtype = threshold, dtype

    def query_log_probs(self, x: Array, r: Array) -> tuple[Array, Array]:
        """``(log A_i(r), log B_i(r))`` for every query and every ``r``, shape
        ``(d,) + r.shape``."""
        t = (
            self.threshold
            + r[None]
            - jnp.asarray(x, self.dtype).reshape((-1,) + (1,) * r.ndim)
        )
        return laplace_log_sf(t, self.query_scale)

    def base(self) -> Array:
        """``log f_rho + log w`` at every node."""
        return laplace_log_pdf(self.nodes, self.threshold_scale) + self.log_weights


def _dot(mask: Array, table: Array) -> Array:
    """``mask @ table`` at full precision (an accelerator's default may round the
    factors to fewer bits)."""
    return jnp.matmul(
        mask.astype(table.dtype), table, precision=jax.lax.Precision.HIGHEST
    )


def pattern_log_probs(above: Array, below: Array, x: Array, quad: Quadrature) -> Array:
    """``log P[pattern | x]`` of every row of the masks ``above`` and ``below``
    (shape ``(n, d)``; a query in neither is aborted) under one threshold draw."""
    log_above, log_below = quad.query_log_probs(x, quad.nodes)
    integrand = quad.base()[None, :] + _dot(above, log_above) + _dot(below, log_below)
    return jax.nn.logsumexp(integrand, axis=-1)


@functools.cache
def patterns(d: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``(above, below)`` masks, shape ``(2^(d + 1), d)`` each, of every
    pattern of ``d`` queries by its key (:func:`pattern_keys`): row ``m`` has the
    queries of ``m``'s bits above and the others below; row ``2^d + m`` the same up
    to its last query above, and those past it aborted."""
    m = np.arange(1 << d)
    above = (m[:, None] >> np.arange(d)) & 1 == 1
    last = np.max(above * np.arange(1, d + 1), axis=1) - 1  # -1: none above
    aborted = np.arange(d) > last[:, None]
    return np.concatenate([above, above]), np.concatenate([~above, ~above & ~aborted])


def pattern_keys(above: Array, aborted: Array) -> Array:
    """Each output row's row of :func:`patterns`: its queries above as bits, plus
    ``2^d`` where it aborted. An output aborts only past its last answer above
    (the c-th), so the key gives its whole pattern."""
    d = above.shape[-1]
    return _bit_keys(above) + jnp.where(jnp.any(aborted, axis=-1), 1 << d, 0)


def tabled_pattern_log_probs(
    above: Array, below: Array, aborted: Array, x: Array, quad: Quadrature
) -> Array:
    """:func:`pattern_log_probs` of every row, read from those of every pattern
    (by its :func:`pattern_keys`) up to :data:`TABLE_QUERIES` queries, else
    integrated per row. A query in none of the masks is aborted too, so ``aborted``
    is only read for the key."""
    d = above.shape[-1]
    if d > TABLE_QUERIES:
        return pattern_log_probs(above, below, x, quad)
    rows = tuple(jnp.asarray(m) for m in patterns(d))
    return pattern_log_probs(*rows, x, quad)[pattern_keys(above, aborted)]


def capped_log_probs(
    below: Array, u: Array, x: Array, quad: Quadrature, pieces: Array | None = None
) -> Array:
    r""":math:`\ln G_F(u)` per row: :math:`\int_{-\infty}^{u} f_\rho(r) \prod_{i
    \in F} B_i(r)\,dr` with F the row's ``below`` mask (shape ``(n, d)``) and ``u``
    its cap (shape ``(n,)``; ``inf``: the whole line). Up to :data:`TABLE_QUERIES`
    queries the whole pieces come from a table of every F (``pieces``, the
    :func:`whole_pieces` of ``x``, where given, else computed here; past that
    ``pieces`` is not read), and the cut piece's factors from the piece's start
    (see the module's notes)."""
    dtype = quad.dtype
    x = jnp.asarray(x, dtype)
    breaks = quad.breaks
    below_f = below.astype(dtype)
    # left of every kink the integrand is C e^{lambda r}: closed form up to there
    count = below_f.sum(axis=-1)
    rate = 1 / quad.threshold_scale + count / quad.query_scale
    log_c = (
        -jnp.log(2 * quad.threshold_scale)
        + count * _LOG_HALF
        + _dot(below_f, (quad.threshold - x) / quad.query_scale)
    )
    tail = log_c + rate * jnp.minimum(u, quad.lo) - jnp.log(rate)
    # the whole pieces right of the kinks and left of the one that the cap cuts
    cap = jnp.clip(u, quad.lo, breaks[-1])
    piece = jnp.clip(
        jnp.searchsorted(breaks, cap, side="right") - 1, 0, breaks.size - 2
    )
    start = breaks[piece]
    # the cut piece [start, cap], with nodes of its own per row
    half = (cap - start)[:, None] / 2
    nodes = start[:, None] + half * (jnp.asarray(_GL_X, dtype)[None, :] + 1)  # (n, G)
    log_weights = laplace_log_pdf(nodes, quad.threshold_scale) + _log(
        half * jnp.asarray(_GL_W, dtype)[None, :]
    )
    if below.shape[-1] <= TABLE_QUERIES:
        if pieces is None:
            pieces = whole_pieces(x, quad, below.shape[-1])
        whole = pieces[_bit_keys(below), piece]
        cut = log_weights + _cut_piece(below, piece, nodes, x, quad)
        terms = jnp.concatenate([tail[:, None], whole[:, None], cut], axis=-1)
        return jax.nn.logsumexp(terms, axis=-1)
    _, log_below = quad.query_log_probs(x, quad.nodes)
    whole = quad.base()[None, :] + _dot(below_f, log_below)
    inside = (quad.piece_stops[None, :] <= start[:, None]) & (
        quad.piece_starts[None, :] >= quad.lo
    )
    whole = jnp.where(inside, whole, -jnp.inf)
    _, node_below = quad.query_log_probs(x, nodes)  # (d, n, G)
    cut = log_weights + jnp.einsum(
        "nd,dng->ng", below_f, node_below, precision=jax.lax.Precision.HIGHEST
    )
    terms = jnp.concatenate([tail[:, None], whole, cut], axis=-1)
    return jax.nn.logsumexp(terms, axis=-1)


def _bit_keys(mask: Array) -> Array:
    """Each row's queries in ``mask`` as the bits of an integer (query ``i``: bit
    ``i``): the rows of :func:`patterns` and of :func:`whole_pieces`."""
    bits = jnp.left_shift(1, jnp.arange(mask.shape[-1], dtype=jnp.int32))
    return jnp.sum(jnp.where(mask, bits, 0), axis=-1)


def whole_pieces(x: Array, quad: Quadrature, d: int) -> Array:
    r"""For every F (row ``m``: the queries of ``m``'s bits) and every piece ``k``,
    the integral of :math:`f_\rho \prod_{i \in F} B_i` over the pieces right of the
    least kink and left of piece ``k``, in log space: shape ``(2^d, pieces + 1)``,
    ``-inf`` where there are none."""
    masks = jnp.asarray(patterns(d)[0][: 1 << d])  # row m: m's bits
    _, log_below = quad.query_log_probs(x, quad.nodes)
    terms = quad.base()[None, :] + _dot(masks, log_below)
    terms = jnp.where((quad.piece_starts >= quad.lo)[None, :], terms, -jnp.inf)
    by_piece = jax.nn.logsumexp(terms.reshape(1 << d, -1, GL_ORDER), axis=-1)
    none = jnp.full((1 << d, 1), -jnp.inf, quad.dtype)
    return jnp.concatenate([none, jax.lax.cumlogsumexp(by_piece, axis=1)], axis=1)


def _cut_piece(
    below: Array, piece: Array, nodes: Array, x: Array, quad: Quadrature
) -> Array:
    r""":math:`\sum_{i \in F} \ln B_i(r)` at the ``nodes`` (shape ``(n, G)``) of
    each row's cut piece, ``piece``. No kink lies inside a piece, so a query is on
    one side of its kink over the whole piece (read at its middle): left of it,
    :math:`\ln B_i = \ln\tfrac12 + t_i/b` with :math:`t_i = T + r - x_i`, linear in
    :math:`r`; right of it, :math:`\ln(1 - \tfrac12 e^{-t_i/b})`, with
    :math:`e^{-t_i/b}` the piece start's (tabled, at most 1) times
    :math:`e^{-(r - \mathrm{start})/b}`: one exponential per node for every query.
    The factors right of the kinks, each in :math:`[\tfrac12, 1)`, are multiplied
    before one logarithm: at most :data:`TABLE_QUERIES` of them."""
    dtype, b = quad.dtype, quad.query_scale
    starts = quad.breaks[:-1]
    middles = (starts + quad.breaks[1:]) / 2
    right = quad.threshold + middles[:, None] - x[None, :] >= 0  # (pieces, d)
    at_start = jnp.exp(
        -jnp.maximum(quad.threshold + starts[:, None] - x[None, :], 0) / b
    )
    right_f = below & right[piece]  # (n, d)
    left_f = (below & ~right[piece]).astype(dtype)
    offsets = nodes - starts[piece][:, None]
    decays = (
        jnp.where(right_f, at_start[piece], 0)[:, :, None]
        * jnp.exp(-offsets / b)[:, None, :]
    )  # (n, d, G)
    nonlinear = jnp.log(jnp.prod(1 - 0.5 * decays, axis=1))
    left = left_f.sum(axis=-1)[:, None]
    linear = (
        left * (_LOG_HALF + nodes / b) + _dot(left_f, (quad.threshold - x) / b)[:, None]
    )
    return linear + nonlinear


def laplace_answers_log_ratio(
    values: Array, above: Array, x: Array, x_prime: Array, scale
) -> Array:
    r""":math:`\sum_{p \in P} \ln f_\nu(v_p - x_p) - \ln f_\nu(v_p - x'_p)` per row
    for Laplace noise of ``scale`` on the released answers ``values``."""
    x, x_prime = (jnp.broadcast_to(v, values.shape) for v in (x, x_prime))
    terms = (jnp.abs(values - x_prime) - jnp.abs(values - x)) / scale
    return jnp.sum(jnp.where(above, terms, 0), axis=-1)
