r"""Distinguishers learned from samples, and the events chosen from their scores.

The learned attack (DP-Sniper, Bichsel et al. 2021; Delta-Siege, Lokna et al. 2023)
needs three independent samples of the mechanism's outputs under both inputs:

1. on the first, :func:`fit` trains a scorer :math:`s(y)` that separates outputs of
   :math:`x` (label 1) from outputs of :math:`x'` (label 0): logistic regression on
   the features of every output coordinate (:func:`features`: its value and its
   hinges at a few quantiles, a linear spline, and an indicator of each value that
   the coordinate takes often, its *atoms*), or
   a small MLP on them, with optax. At its optimum the logit approximates the
   log-likelihood ratio, whose upper sets are the Neyman–Pearson optimal events;
2. on the second, :func:`select_thresholds` chooses a few thresholds :math:`t` of the
   score, those whose events :math:`\{s \ge t\}` and :math:`\{s < t\}` promise the
   best lower bound on the final sample's size and confidence;
3. the third is the audit's own: the engine counts the chosen events only, and the
   bounds come from those counts (:func:`mcdp.statistics.delta_bounds`, corrected
   for the events carried).

Nothing of the third sample feeds back into the first two, so the bounds hold
whatever the scorer learned. This module holds the host-side learning and selection;
:mod:`mcdp.attacks` wires them into an attack.
"""

from __future__ import annotations

import collections
import concurrent.futures
import math
import os
from collections.abc import Callable, Iterator
from functools import cache, partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from scipy import special

from mcdp._types import Array, PRNGKey
from mcdp.statistics import clopper_pearson_arrays

MODELS = ("logistic", "mlp")
HIDDEN = 32  # the MLP's hidden units
# The MLP's weights and arithmetic: its features are standardised at the audit's
# precision, then rounded to this. In float32 its steps on a CPU take 0.3-0.4x the
# time of float64's (benchmarks/RESULTS.md, "The MLP in float32"); None: the
# audit's float, as for the logistic scorers.
MLP_DTYPE: str | None = "float32"
STEPS = 400  # optimiser steps
BATCH = 1 << 16  # outputs per step: the whole sample up to this size, else a minibatch
SHUFFLE_SEED = 0  # the fixed shuffle of a sample larger than a batch
LEARNING_RATE = 0.05
SELECTION_CONFIDENCE = 0.9  # the rates a threshold is chosen on: ends of this interval


MAX_ATOMS = 16  # atoms per output coordinate, the most frequent
ATOM_SHARE = 1e-3  # an atom holds at least this share of the training outputs
ATOM_COUNT = 10  # and at least this many of them


def _sorted(column: np.ndarray) -> np.ndarray:
    """A coordinate's values other than NaN, sorted (as ``numpy.unique`` sorts
    them): its atoms, their counts and its hinges all come from one sort."""
    values = column[~np.isnan(column)]
    values.sort()
    return values


def _columns(y: np.ndarray) -> Iterator[np.ndarray]:
    """The output coordinates of ``y`` (shape ``(n, ...)``), one at a time."""
    y = np.asarray(y)
    return iter(y.reshape(y.shape[0], -1).T)


def _atoms_of_sorted(ordered: np.ndarray, least: float) -> np.ndarray:
    """A coordinate's atoms, sorted, from its sorted values: ``numpy.unique``'s
    values and counts, the :data:`MAX_ATOMS` most frequent of those counted at
    least ``least`` times."""
    first = np.ones(ordered.shape, dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    values = ordered[first]
    counts = np.diff(np.append(np.flatnonzero(first), ordered.size))
    frequent = np.argsort(-counts, kind="stable")[:MAX_ATOMS]
    frequent = frequent[counts[frequent] >= least]
    return np.sort(values[frequent])


def _least_atom_count(n: int) -> float:
    """How many of ``n`` outputs an atom holds at least."""
    return max(ATOM_COUNT, ATOM_SHARE * n)


def _padded(rows: list[np.ndarray], dtype) -> np.ndarray:
    """``rows`` of several lengths as one array, NaN-padded to the longest."""
    out = np.full((len(rows), max((len(r) for r in rows), default=0)), np.nan, dtype)
    for row, values in zip(out, rows, strict=True):
        row[: len(values)] = values
    return out


def find_atoms(y: np.ndarray) -> np.ndarray:
    r"""The values that each output coordinate takes often in ``y`` (shape
    ``(n, ...)``): shape ``(k, A)`` for the ``k`` coordinates, NaN-padded.

    Mechanisms mix discrete and continuous outputs (Sparse Vector's codes beside noisy
    answers, an argmax index, a count): such a value has positive probability, a
    point of a continuous output has none. A value is an atom of its coordinate when
    at least :data:`ATOM_SHARE` of the outputs, and :data:`ATOM_COUNT` of them, take
    it; up to :data:`MAX_ATOMS` per coordinate, the most frequent. ``A`` is 0 where
    no coordinate has one, and the features are then those of continuous outputs.
    """
    y = np.asarray(y)
    least = _least_atom_count(y.shape[0])
    atoms = [_atoms_of_sorted(_sorted(column), least) for column in _columns(y)]
    return _padded(atoms, y.dtype)


KNOT_LEVELS = (0.01, 0.05, 0.2, 0.5, 0.8, 0.95, 0.99)  # quantiles of the hinges


def find_knots(y: np.ndarray, atoms: np.ndarray) -> np.ndarray:
    """Per output coordinate, the quantiles :data:`KNOT_LEVELS` of its values in
    ``y`` that are neither atoms nor NaN: the hinges of its piecewise-linear
    features, shape ``(k, len(KNOT_LEVELS))`` (NaN where a coordinate has no such
    value)."""
    y = np.asarray(y)
    columns = (_sorted(column) for column in _columns(y))
    knots = [_knots_of_sorted(c, a, None) for c, a in zip(columns, atoms, strict=True)]
    return _stacked(knots, _hinge_width(None), y.dtype)


def _stacked(rows: list[np.ndarray], width: int, dtype) -> np.ndarray:
    """``rows`` of ``width`` values each as one array ``(len(rows), width)``."""
    return np.array(rows, dtype=dtype).reshape(len(rows), width)


def _hinge_width(knots: np.ndarray | None) -> int:
    """The hinges of a coordinate: one per level of :data:`KNOT_LEVELS`, or per
    given knot."""
    return len(KNOT_LEVELS) if knots is None else len(knots)


def _knots_of_sorted(
    ordered: np.ndarray, atoms: np.ndarray, knots: np.ndarray | None
) -> np.ndarray:
    """A coordinate's hinges from its sorted values and its atoms: the quantiles
    :data:`KNOT_LEVELS` of its values that are not atoms, or the given ``knots``;
    NaN where it has no such value."""
    rest = ordered[~np.isin(ordered, atoms)]  # sorted still
    if not rest.size:
        return np.full(_hinge_width(knots), np.nan, ordered.dtype)
    if knots is None:
        return quantiles_of_sorted(rest, np.asarray(KNOT_LEVELS)).astype(ordered.dtype)
    return np.asarray(knots, dtype=ordered.dtype)


class Basis(NamedTuple):
    """What the features are built on, found on the training sample: each output
    coordinate's atoms (:func:`find_atoms`; ``(k, A)``, NaN-padded, ``A`` may be 0)
    and the hinges of its piecewise-linear part (:func:`find_knots`)."""

    atoms: Array
    knots: Array


def find_basis(y: np.ndarray, knots: np.ndarray | None = None) -> Basis:
    """The atoms of ``y`` and the hinges: its quantiles (:func:`find_knots`), or
    the given ``knots`` (sorted values) on every coordinate that has values other
    than atoms and NaN."""
    y = np.asarray(y)
    flat = y.reshape(y.shape[0], -1)
    return _basis_of_columns(
        lambda j: flat[:, j], flat.shape[1], y.shape[0], y.dtype, knots
    )


# The most coordinates whose basis is found at once (each in a thread of its own):
# each holds about four copies of its column (2e6 training outputs: 64 MB).
BASIS_THREADS = 8


def _basis_of_columns(
    column: Callable[[int], np.ndarray],
    width: int,
    n: int,
    dtype,
    knots: np.ndarray | None,
) -> Basis:
    """:func:`find_basis` of the outputs whose ``n`` values in coordinate ``j`` are
    ``column(j)``, for ``j < width``: a few coordinates at a time (at most the
    usable cores and :data:`BASIS_THREADS`), each made, sorted and read in a thread
    of its own (NumPy's copies and sorts release the GIL), where sorting them all
    first held a second copy of the outputs (6.4 GB for 2e6 training outputs of 400
    coordinates in float64). On two cores, 2e6 pooled outputs of 100 coordinates
    took 0.45-0.50x the time of one coordinate after another."""
    least = _least_atom_count(n)

    def basis_of(j: int) -> tuple[np.ndarray, np.ndarray]:
        ordered = _sorted(column(j))
        atoms = _atoms_of_sorted(ordered, least)
        return atoms, _knots_of_sorted(ordered, atoms, knots)

    threads = max(1, min(width, usable_cores(), BASIS_THREADS))
    found: list[tuple[np.ndarray, np.ndarray]] = []
    with concurrent.futures.ThreadPoolExecutor(
        threads, thread_name_prefix="mcdp-basis"
    ) as pool:
        pending: collections.deque = collections.deque()
        for j in range(width):
            pending.append(pool.submit(basis_of, j))
            if len(pending) == threads:  # no more columns in memory than threads
                found.append(pending.popleft().result())
        found += [future.result() for future in pending]
    atoms = [a for a, _ in found]
    hinges = [h for _, h in found]
    return Basis(_padded(atoms, dtype), _stacked(hinges, _hinge_width(knots), dtype))


MAX_INPUT_KNOTS = 8  # the most distinct input values that become knots


def input_knots(pair: np.ndarray) -> np.ndarray | None:
    """The distinct finite values of the pair's inputs, sorted, where there are at
    most :data:`MAX_INPUT_KNOTS`; else ``None``. Noise added to an input's
    coordinates has a log-likelihood ratio that bends at the inputs' values and
    nowhere else (Laplace: linear between :math:`x_i` and :math:`x'_i`, flat
    beyond), so hinges there and only there fit it with a few weights."""
    values = np.unique(np.asarray(pair, dtype=np.float64))
    values = values[np.isfinite(values)]
    return values if 0 < values.size <= MAX_INPUT_KNOTS else None


def feature_parts(y: Array, basis: Basis | None = None) -> tuple[Array, ...]:
    r"""The blocks of :func:`features`, each of shape ``(n, k, m)`` for the ``n``
    output rows and their ``k`` coordinates: the value, 0 where the value is one of
    the coordinate's atoms or NaN; that value's hinges :math:`\max(0, y - t)` at
    the coordinate's knots (a linear spline: the log-likelihood ratio of Laplace or
    exponential noise is piecewise linear, and where it is flat in a tail, a square
    would bend it); an indicator of NaN; and an indicator of each atom. Without a
    ``basis``: the value, its square and the NaN indicator."""
    y = jnp.reshape(y, (y.shape[0], -1))
    nan = jnp.isnan(y)
    if basis is None:
        y = jnp.where(nan, 0.0, y)
        return y[..., None], (y * y)[..., None], nan.astype(y.dtype)[..., None]
    atoms, knots = basis
    hits = y[:, :, None] == atoms[None, :, :]  # NaN padding never equals
    continuous = ~(nan | jnp.any(hits, axis=-1))
    hinges = jnp.where(
        continuous[:, :, None] & ~jnp.isnan(knots)[None],
        jnp.maximum(y[:, :, None] - knots[None], 0.0),
        0.0,
    )
    return (
        jnp.where(continuous, y, 0.0)[..., None],
        hinges,
        nan.astype(y.dtype)[..., None],
        hits.astype(y.dtype),
    )


def ramp_feature_parts(y: Array, basis: Basis | None = None) -> tuple[Array, ...]:
    r""":func:`feature_parts` with each hinge but the last bounded by the next knot,
    :math:`\min(\max(0, y - t_k), t_{k+1} - t_k)`: the same piecewise-linear
    functions, as pieces that stay flat beyond their interval. Adam then fits a
    flat tail without cancelling the large, correlated values of every hinge
    against the value's (numerical-svt, seed 0: the best threshold's bound of the
    trained scorer, chosen a posteriori, 0.0285 with hinges and 0.0445 with ramps on
    the same knots at the inputs' values; benchmarks/RESULTS.md)."""
    value, hinges, *rest = feature_parts(y, basis)
    if basis is None:
        return (value, hinges, *rest)
    knots = basis.knots
    beyond = jnp.full_like(knots[:, :1], jnp.inf)  # the last hinge stays open
    width = jnp.diff(knots, axis=1, append=beyond)
    width = jnp.where(jnp.isnan(width), jnp.inf, width)  # no knot: no bound
    return (value, jnp.minimum(hinges, width[None]), *rest)


def _flat(parts: tuple[Array, ...]) -> Array:
    return jnp.concatenate([p.reshape(p.shape[0], -1) for p in parts], axis=-1)


def features(y: Array, basis: Basis | None = None) -> Array:
    """Per output row, the blocks of :func:`feature_parts` side by side, each
    coordinate's in turn within a block: shape ``(n, F)``."""
    return _flat(feature_parts(y, basis))


BITS = 8  # low mantissa bits per coordinate in the "bits" features
FEATURE_SETS = ("moments", "bits", "ramps")


def float_bits(y: Array) -> tuple[Array, Array, Array]:
    r"""The binary layout of float outputs, per coordinate: ``(top, precision,
    mantissa)``. ``top`` is the sign and exponent field (the *binade*: 4096 values
    in float64, 512 in float32), ``precision`` the number of significant mantissa
    bits, :math:`m - \mathrm{ctz}(\text{mantissa})` (0 for a power of two or zero),
    so a value :math:`v` lies on the grid :math:`2^{e - p}` of its binade and on no
    finer one, and ``mantissa`` the raw mantissa field. Exact integer arithmetic;
    float64 needs x64 (as the float64 runs have).
    """
    info = jnp.finfo(y.dtype)
    nmant = int(info.nmant)
    uint = jnp.uint64 if info.bits == 64 else jnp.uint32
    bits = jax.lax.bitcast_convert_type(y, uint)
    mantissa = bits & uint((1 << nmant) - 1)
    lowest = mantissa & (~mantissa + uint(1))  # the lowest set bit; 0 for 0
    trailing = jax.lax.population_count(lowest - uint(1)).astype(jnp.int32)
    precision = nmant - jnp.minimum(trailing, nmant)
    return (bits >> uint(nmant)).astype(jnp.int32), precision, mantissa


def bit_feature_parts(y: Array, basis: Basis | None = None) -> tuple[Array, ...]:
    r""":func:`feature_parts` and, per output coordinate, its number of significant
    mantissa bits (over the mantissa's width), its :data:`BITS` lowest mantissa
    bits as 0/1, and whether it is -0.0: what a float sampler's rounding leaves in
    the outputs (Mironov 2012), and a zero's sign (``np.round`` of a negative
    value), where the moments see nothing (-0.0 == 0.0). The last block is 0 on
    outputs without -0.0; of the default's records of the suite, only
    ``snapping``'s choice at 10^7 moved with it, to the same bound
    (``benchmarks/RESULTS.md``, "Discrete outputs keyed by their bits")."""
    y = jnp.reshape(y, (y.shape[0], -1))
    _, precision, mantissa = float_bits(y)
    nmant = jnp.finfo(y.dtype).nmant
    shifts = jnp.arange(BITS, dtype=mantissa.dtype)
    low = (mantissa[..., None] >> shifts[None, None, :]) & jnp.ones((), mantissa.dtype)
    negative_zero = jnp.signbit(y) & (y == 0)
    return (
        *feature_parts(y, basis),
        (precision.astype(y.dtype) / nmant)[..., None],
        low.astype(y.dtype),
        negative_zero.astype(y.dtype)[..., None],
    )


def bit_features(y: Array, basis: Basis | None = None) -> Array:
    """The blocks of :func:`bit_feature_parts` side by side: shape ``(n, F)``."""
    return _flat(bit_feature_parts(y, basis))


def ramp_features(y: Array, basis: Basis | None = None) -> Array:
    """The blocks of :func:`ramp_feature_parts` side by side: shape ``(n, F)``."""
    return _flat(ramp_feature_parts(y, basis))


FEATURES = {"moments": features, "bits": bit_features, "ramps": ramp_features}
# each feature set's blocks, side by side in FEATURES; the scores' ``parts``
FEATURE_PARTS = {
    "moments": feature_parts,
    "bits": bit_feature_parts,
    "ramps": ramp_feature_parts,
}


class Scorer(NamedTuple):
    """A trained scorer: the basis of its features, standardisation, then a linear
    map or a one-hidden-layer MLP. A pytree of arrays, so it travels into the
    compiled loop as data."""

    mean: Array
    scale: Array
    weights: Any  # logistic: (w, b); mlp: (w1, b1, w2, b2)
    basis: Basis


def _standardized(phi: Array, mean: Array, scale: Array) -> Array:
    """Features ``(n, F)`` centred by ``mean`` and divided by ``scale`` (a scorer's,
    as it was trained)."""
    return (phi - mean[None, :]) / scale[None, :]


def _logistic_head(z: Array, weights: Any) -> Array:
    w, b = weights
    return z @ w + b


def _mlp_head(z: Array, weights: Any) -> Array:
    w1, b1, w2, b2 = weights
    highest = jax.lax.Precision.HIGHEST  # a GPU's default for float32 is TF32
    hidden = jnp.tanh(jnp.dot(z.astype(w1.dtype), w1, precision=highest) + b1[None, :])
    return jnp.dot(hidden, w2, precision=highest) + b2


HEADS = {"logistic": _logistic_head, "mlp": _mlp_head}


def _weight_blocks(w: Array, k: int, widths: list[int]) -> list[Array]:
    """``w``'s rows, in the order of the flat features (:func:`_flat`), split by
    feature block: ``(k, m, ...)`` for a block of ``m`` features per each of the
    ``k`` output coordinates, for each ``m`` of ``widths`` in turn."""
    blocks, start = [], 0
    for m in widths:
        blocks.append(w[start : start + k * m].reshape((k, m) + w.shape[1:]))
        start += k * m
    return blocks


def _affine(parts: tuple[Array, ...], w: Array, scorer: Scorer) -> Array:
    r"""The standardised features times ``w`` (``(F,)`` or ``(F, H)``), plus the
    standardisation's offset: :math:`\sum_f (\phi_f - \mu_f) w_f / s_f`, summed
    block by block without building the ``(n, F)`` features: the logistic
    scorers' form off a CPU (on an H200 their counting took 0.002-0.04 of the time
    NumPy needs to draw the outputs; :func:`_affine_by_term`, the CPU's form, has
    not run there), and the probes' form of the MLP's hidden layer
    (``benchmarks/probe_candidates.py``)."""
    w = w / (scorer.scale[:, None] if w.ndim == 2 else scorer.scale)
    offset = -jnp.tensordot(scorer.mean, w, axes=1)
    total = offset if w.ndim == 1 else offset[None, :]
    blocks = _weight_blocks(w, parts[0].shape[1], [p.shape[2] for p in parts])
    for part, block in zip(parts, blocks, strict=True):
        if w.ndim == 1:
            total = total + jnp.sum(part * block[None], axis=(1, 2))
        else:
            total = total + jnp.sum(part[..., None] * block[None], axis=(1, 2))
    return total


def _affine_by_term(
    y: Array,
    w: Array,
    scorer: Scorer,
    parts: Callable = feature_parts,
    zero: tuple[tuple[int, ...], ...] = (),
) -> Array:
    r""":func:`_affine` for a logistic scorer's ``w`` (``(F,)``), its form on a CPU:
    a loop over the output coordinates that computes each one's features from its
    own column and adds each term :math:`\phi_f w_f / s_f` in turn, elementwise
    over the rows, which XLA's CPU code vectorises. The sums over each block's
    axes, which XLA there hands to a library's reduction, took 1.6-5.4x as long
    per row (benchmarks/RESULTS.md, "The logistic scorers term by term on a CPU").
    A loop rather than every coordinate unrolled: the unrolled terms ran 1.3-2.5x
    as fast but took 0.2-1.7 s more to compile, for each program, which a small
    audit would pay. The same sum in another order: the scores differ from
    :func:`_affine`'s at rounding.

    ``zero``: per feature block, the terms whose weight is 0 at every coordinate
    (:func:`zero_terms`), left out: each would add 0 times its feature, and the
    sum of the others is the score to the bit wherever the features are finite."""
    w = w / scorer.scale
    y = jnp.reshape(y, (y.shape[0], -1))
    k = y.shape[1]

    def row(a: Array, i: Any) -> Array:
        return jax.lax.dynamic_index_in_dim(a, i, axis=0, keepdims=True)

    def column_parts(i: Any) -> tuple[Array, ...]:
        column = jax.lax.dynamic_index_in_dim(y, i, axis=1, keepdims=True)
        basis = scorer.basis
        if basis is not None:
            basis = Basis(row(basis.atoms, i), row(basis.knots, i))
        return parts(column, basis)

    # each block's weights, (k, m): coordinate i's are its row i
    widths = [part.shape[-1] for part in jax.eval_shape(column_parts, 0)]
    blocks = _weight_blocks(w, k, widths)

    left_out = zero or ((),) * len(blocks)

    def add_terms(i: Any, total: Array) -> Array:
        for part, block, out in zip(column_parts(i), blocks, left_out, strict=True):
            weights = row(block, i)[0]
            for j in range(part.shape[-1]):
                if j not in out:
                    total = total + part[:, 0, j] * weights[j]
        return total

    # the offset, one per row: where every term is left out (a scorer whose every
    # weight is 0, trained on outputs whose features are all constant) the sum is
    # the offset itself, and the loop's carry is a row's scores either way
    offset = -jnp.tensordot(scorer.mean, w, axes=1)
    total = jnp.broadcast_to(offset, y.shape[:1])
    # the first coordinate outside the loop: its sums, computed from the rows, vary
    # as they do over any axis that maps them (the engine's ``shard_map``)
    return jax.lax.fori_loop(1, k, add_terms, add_terms(0, total))


def _logistic_affine(y: Array, w: Array, scorer: Scorer, parts: Callable) -> Array:
    """:func:`_affine` of ``parts(y)``: the logistic scorers' form off a CPU."""
    return _affine(parts(y, scorer.basis), w, scorer)


# On a CPU, the logistic scorers sum term by term (:func:`_affine_by_term`); False:
# by block there too (:func:`_affine`), the form off a CPU. Read where a score is
# traced: clear JAX's caches after changing it (benchmarks/bench_logistic_terms.py).
TERMS_ON_CPU = True


def score_logistic(y: Array, scorer: Scorer, parts=feature_parts, zero=()) -> Array:
    """The logit of logistic regression: high speaks for the first input. ``zero``
    (:func:`zero_terms`): the terms that the sum on a CPU leaves out."""
    w, b = scorer.weights
    by_block = partial(_logistic_affine, parts=parts)
    by_term = partial(_affine_by_term, parts=parts, zero=zero)
    affine = jax.lax.platform_dependent(
        y, w, scorer, cpu=by_term if TERMS_ON_CPU else by_block, default=by_block
    )
    return affine + b


def _mlp_hidden(
    parts: tuple[Array, ...], w: Array, scorer: Scorer, columns: tuple | None = None
) -> Array:
    """The MLP's hidden layer before its offset: the standardised features times
    ``w`` (``(F, H)``), as one product of the concatenated features, at full
    precision (a GPU's default for float32, TF32, moved the scores by up to 1.2 %).
    The sums by block of :func:`_affine` compute the same numbers up to rounding,
    but XLA's GPU compiler did not finish the counting loop of those on an H200
    (stopped after 150 s on ``snapping``, ``truncated-geometric`` and
    ``report-noisy-max3``), and on a CPU, where the engine scores one block of rows
    after another, the product counts 2.7-4.5x as fast and scores the selection
    draws 12x as fast (``svt6``, ``svt1``; benchmarks/RESULTS.md, "The MLP's hidden
    layer as one product on a CPU"). ``columns`` (:func:`zero_columns`): the
    features it reads alone, the others' rows of ``w`` being 0 (where none is
    read, the layer is 0, as the product is wherever the features are finite)."""
    if columns is None:
        z = _standardized(_flat(parts), scorer.mean, scorer.scale)
        return jnp.dot(z.astype(w.dtype), w, precision=jax.lax.Precision.HIGHEST)
    if not any(columns):  # every weight 0 (features constant on the training rows)
        return jnp.zeros((parts[0].shape[0], w.shape[1]), w.dtype)
    starts = np.cumsum([0] + [p.reshape(p.shape[0], -1).shape[1] for p in parts[:-1]])
    kept = np.concatenate(
        [s + np.asarray(c, np.intp) for s, c in zip(starts, columns, strict=True)]
    )
    z = _standardized(_chosen(parts, columns), scorer.mean[kept], scorer.scale[kept])
    return jnp.dot(z.astype(w.dtype), w[kept], precision=jax.lax.Precision.HIGHEST)


def score_mlp(y: Array, scorer: Scorer, parts=feature_parts, columns=None) -> Array:
    """The output of the MLP (tanh hidden layer): high speaks for the first input;
    in its weights' dtype (:data:`MLP_DTYPE`). ``columns`` (:func:`zero_columns`):
    the features that its hidden layer reads, the others' weights being 0."""
    w1, b1, w2, b2 = scorer.weights
    hidden = _mlp_hidden(parts(y, scorer.basis), w1, scorer, columns) + b1[None, :]
    return jnp.sum(jnp.tanh(hidden) * w2[None, :], axis=-1) + b2


SCORES = {"logistic": score_logistic, "mlp": score_mlp}
# the scores of each feature set: module-level functions, static arguments of jit
SCORES_BY_FEATURES = {
    "moments": SCORES,
    "bits": {
        "logistic": partial(score_logistic, parts=bit_feature_parts),
        "mlp": partial(score_mlp, parts=bit_feature_parts),
    },
    "ramps": {
        "logistic": partial(score_logistic, parts=ramp_feature_parts),
        "mlp": partial(score_mlp, parts=ramp_feature_parts),
    },
}


# Whether the logistic scorers' sums on a CPU leave out the terms whose weights are 0
# at every coordinate (:func:`score_of`): the features that fit left out of its steps
# (SKIP_ZERO_FEATURES), each of whose terms adds 0. The same scores to the bit
# wherever the features are finite; where one left out is infinite, the sum of every
# term is NaN (0 times it) and this one is not (benchmarks/RESULTS.md, "Features
# that are 0 on every training row left out").
SKIP_ZERO_TERMS = True
# Whether an MLP's hidden layer reads only the features whose first-layer weights are
# not all 0 (:func:`score_of`): those that no training row shows, which it weighs at
# 0 (:func:`fit`). The same scores up to the rounding of the product's sums (each
# term left out adds 0), but where a feature left out is infinite or NaN.
SKIP_ZERO_COLUMNS = True


def zero_terms(scorer: Scorer, feature_set: str) -> tuple[tuple[int, ...], ...]:
    """Per block of a logistic ``scorer``'s features (of ``feature_set``), the terms
    of a coordinate whose weight is 0 at every coordinate."""
    w = np.asarray(scorer.weights[0])
    k = scorer.basis.atoms.shape[0]
    blocks = _weight_blocks(w, k, _term_widths(feature_set, scorer.basis, w.dtype))
    return tuple(
        tuple(int(j) for j in np.flatnonzero(np.all(block == 0, axis=0)))
        for block in blocks
    )


def zero_columns(scorer: Scorer, feature_set: str) -> tuple[tuple[int, ...], ...]:
    """Per block of an MLP ``scorer``'s features (of ``feature_set``), the features
    whose first-layer weights are not all 0 (:func:`_by_part`)."""
    w = np.asarray(scorer.weights[0])
    widths = _block_widths(feature_set, scorer.basis, scorer.mean.dtype)
    return _by_part(np.flatnonzero(np.any(w != 0, axis=1)), widths)


@cache
def _score_leaving_out(feature_set: str, model: str, zero: tuple) -> Callable:
    left_out = {"logistic": "zero", "mlp": "columns"}[model]
    return partial(SCORES_BY_FEATURES[feature_set][model], **{left_out: zero})


def score_of(feature_set: str, model: str, scorer: Scorer) -> Callable:
    """``score(y, scorer)`` of this trained ``scorer``: its entry of
    :data:`SCORES_BY_FEATURES`, for a logistic scorer leaving out the terms of
    :func:`zero_terms` (:data:`SKIP_ZERO_TERMS`), for an MLP reading only the
    features of :func:`zero_columns` where it weighs some at 0
    (:data:`SKIP_ZERO_COLUMNS`); one function per feature set, model and terms
    left out, so that programs of it compile once."""
    score = SCORES_BY_FEATURES[feature_set][model]
    if scorer.basis is None:
        return score
    if model == "mlp" and SKIP_ZERO_COLUMNS:
        columns = zero_columns(scorer, feature_set)
        whole = sum(map(len, columns)) == scorer.weights[0].shape[0]
        return score if whole else _score_leaving_out(feature_set, model, columns)
    if model != "logistic" or not SKIP_ZERO_TERMS:
        return score
    zero = zero_terms(scorer, feature_set)
    return _score_leaving_out(feature_set, model, zero) if any(zero) else score


def model_dtype(model: str) -> Any:
    """The dtype that a scorer of ``model`` trains and scores in: the MLP's
    :data:`MLP_DTYPE`, else the audit's float."""
    if model == "mlp" and MLP_DTYPE is not None:
        return jnp.dtype(MLP_DTYPE)
    return jnp.result_type(float)


def _init(key: PRNGKey, model: str, width: int, dtype) -> Any:
    if model == "logistic":
        return (jnp.zeros((width,), dtype), jnp.zeros((), dtype))
    k1, k2 = jax.random.split(key)
    return (
        jax.random.normal(k1, (width, HIDDEN), dtype) / math.sqrt(width),
        jnp.zeros((HIDDEN,), dtype),
        jax.random.normal(k2, (HIDDEN,), dtype) / math.sqrt(HIDDEN),
        jnp.zeros((), dtype),
    )


class Distinct(NamedTuple):
    """A training sample of few distinct outputs, as :func:`fit` reads it: those
    outputs (padded to a power of two with copies of the first) and, per
    minibatch, how many of its rows are each of them with each label."""

    rows: Array  # (K, ...): the distinct outputs, padded
    counts: Array  # (blocks, K, 2): per minibatch, [label 1, label 0] rows of each


class TrainingSample(NamedTuple):
    """Both inputs' training outputs pooled (in the fixed shuffle where they are more
    than a batch), their labels and their basis, on the device: what
    :func:`fit` trains on, prepared once for scorers that share it; where the
    outputs are discrete and their distinct values given, their :class:`Distinct`,
    and then ``y`` holds only the first minibatch's rows, which :func:`fit`
    standardises the features by (the steps read the distinct outputs)."""

    y: Array
    labels: Array
    basis: Basis
    batch: int
    distinct: Distinct | None = None


def training_sample(
    y_first: np.ndarray,
    y_second: np.ndarray,
    knots: np.ndarray | None = None,
    distinct: tuple[np.ndarray, np.ndarray] | None = None,
) -> TrainingSample:
    """The :class:`TrainingSample` of ``y_first`` (label 1) and ``y_second`` (label
    0), with hinges at ``knots`` (sorted values) or, by default, at its quantiles
    (:func:`find_basis`); in JAX's float dtype (call it where 64-bit values are
    enabled, if they should be). Pooling, the basis and the copy are the host's
    part of a scorer's preparation: the portfolio's three scorers share one
    sample.

    The pooled outputs are never whole on the host: their basis is found a few
    coordinates at a time (one per thread), and :data:`SAMPLE_PIECE_ROWS` of their
    rows at a time are gathered and written into the device's array, so that beside
    the outputs given the preparation holds one copy of them (the device's) where it
    held two at its peaks: the same sample, to the last bit
    (``tests/test_learning.py``).

    ``distinct``: where the outputs take few values, ``(first, inverse)``: the index
    among the outputs (``y_first``'s, then ``y_second``'s) of the first output of
    each distinct bit pattern, and the index of each output's pattern among them
    (as :func:`mcdp.attacks.output_keys` gives them); the sample then holds its
    :class:`Distinct`, unless a distinct output is not finite, and only the first
    minibatch of the pooled outputs: not copying the others to the device saved
    about 0.2 s of 2 x 10^6 outputs in 10 coordinates (benchmarks/RESULTS.md,
    "The outputs keyed once in the selection draws")."""
    dtype = jnp.result_type(float)
    first, second = np.asarray(y_first), np.asarray(y_second)
    count, rows = len(first), len(first) + len(second)
    if first.shape[1:] != second.shape[1:]:
        raise ValueError(
            f"Expected outputs of one shape, got {first.shape[1:]} and "
            f"{second.shape[1:]}."
        )
    host = np.result_type(first, second)  # numpy.concatenate's
    # each pooled row's place among the outputs, first's then second's: in one
    # fixed shuffle where they are more than a batch (minibatches are its
    # consecutive rows), else in order
    order = np.arange(rows)
    if rows > BATCH:
        order = np.random.default_rng(SHUFFLE_SEED).permutation(rows)
    flat = first.reshape(count, -1), second.reshape(rows - count, -1)
    basis = _basis_of_columns(
        lambda j: np.concatenate([f[:, j] for f in flat])[order],
        flat[0].shape[1], rows, host, knots,
    )  # fmt: skip
    basis = jax.tree.map(lambda a: jnp.asarray(a, dtype), basis)
    batch = min(rows, BATCH)
    if distinct is not None:
        distinct = _distinct_counts(first, second, order, batch, *distinct)
    pooled = rows if distinct is None else batch  # the rows that fit reads
    y = jnp.zeros((pooled, *first.shape[1:]), dtype)
    for start in range(0, pooled, SAMPLE_PIECE_ROWS):
        where = order[start : min(start + SAMPLE_PIECE_ROWS, pooled)]
        piece = np.empty((len(where), *first.shape[1:]), host)
        mine = where < count
        piece[mine], piece[~mine] = first[where[mine]], second[where[~mine] - count]
        y = _put_rows(y, jnp.asarray(piece, dtype), start)
    labels = order < count
    return TrainingSample(y, jnp.asarray(labels, dtype), basis, batch, distinct)


def sample_head(sample: TrainingSample, share: float) -> TrainingSample:
    """The first minibatches of ``sample``, ``share`` (in (0, 1]) of those that the
    steps read and at least one: a scorer trained on them with ``share`` of the
    steps reads each of its rows as often as one trained on ``sample`` with every
    step (the portfolio's screening, :data:`mcdp.attacks.SCREEN_STEPS`)."""
    if sample.distinct is not None:
        counts = sample.distinct.counts
        blocks = max(1, int(counts.shape[0] * share))
        return sample._replace(
            distinct=sample.distinct._replace(counts=counts[:blocks])
        )
    blocks = max(1, int(sample.labels.shape[0] // sample.batch * share))
    rows = blocks * sample.batch
    return sample._replace(y=sample.y[:rows], labels=sample.labels[:rows])


def _distinct_counts(
    first: np.ndarray,
    second: np.ndarray,
    order: np.ndarray,
    batch: int,
    firsts: np.ndarray,
    inverse: np.ndarray,
) -> Distinct | None:
    """The :class:`Distinct` of the pooled sample ``order`` (see
    :func:`training_sample`), or None where a distinct output is not finite (one
    key holds every NaN, whatever its bits). ``firsts`` and ``inverse`` are of
    outputs keyed by their bits (:func:`mcdp.attacks.output_keys`), so each
    distinct row stands for outputs of its own bit pattern, -0.0 apart from 0.0."""
    count = len(first)
    rows = np.stack([first[i] if i < count else second[i - count] for i in firsts])
    if not np.isfinite(rows).all():
        return None
    width = 1 << max(0, len(firsts) - 1).bit_length()
    rows = np.concatenate(
        [rows, np.broadcast_to(rows[:1], (width - len(rows),) + rows.shape[1:])]
    )
    blocks = len(order) // batch
    used = order[: blocks * batch]  # the rows that the steps use, in their order
    block = np.repeat(np.arange(blocks), batch)
    which = (block * width + inverse[used]) * 2 + (used >= count)
    counts = np.bincount(which, minlength=blocks * width * 2)
    dtype = jnp.result_type(float)
    return Distinct(
        jnp.asarray(rows, dtype), jnp.asarray(counts.reshape(blocks, width, 2), dtype)
    )


SAMPLE_PIECE_ROWS = BATCH  # rows of the training sample gathered on the host at once

# Whether fit's steps leave out the standardised features that are 0 on every row
# they read (fit's docstring): the same scorer, up to the rounding of its sums; off,
# the steps move every feature's weights, those by 0. RAPPOR's 20 bits of 0.0 and 1.0
# have 40 features that vary, of the moments' 220 and the bit features' 420: on 10^6
# training outputs per input its three scorers trained in 1.4, 4.1 and 1.5 s
# against 3.5, 10.8 and 15.4 s; svt34-parallel's in 3.2, 7.8-9.3 and 4.1-4.3 s
# against 3.7-4.2, 11.2-11.9 and 15.6-15.9 s, the suite's records the same at 10^6
# and 10^7 (benchmarks/bench_zero_features.py; benchmarks/RESULTS.md, "Features
# that are 0 on every training row left out").
SKIP_ZERO_FEATURES = True


def _term_widths(feature_set: str, basis: Basis, dtype: Any) -> list[int]:
    """The features of one output coordinate in each block of ``feature_set`` on
    ``basis`` (one row of ``basis.atoms`` per coordinate), in order."""
    k = basis.atoms.shape[0]
    with jax.enable_x64(np.dtype(dtype) == np.float64):  # the shapes, in its dtype
        shapes = jax.eval_shape(
            FEATURE_PARTS[feature_set], jax.ShapeDtypeStruct((1, k), dtype), basis
        )
    return [part.shape[-1] for part in shapes]


def _block_widths(feature_set: str, basis: Basis, dtype: Any) -> list[int]:
    """The features in each block of ``feature_set`` on ``basis``, every output
    coordinate's together (the widths that :func:`_by_part` splits by)."""
    k = basis.atoms.shape[0]
    return [k * m for m in _term_widths(feature_set, basis, dtype)]


@partial(jax.jit, static_argnames="feature_set")
def _nonzero_piece(y, basis, mean, scale, feature_set):
    """Per standardised feature of ``feature_set``, whether it is not 0 on a row of
    ``y``, block by block: side by side, XLA's CPU code would concatenate the
    blocks into one array first (see :data:`FEATURE_SCALARS`)."""
    found, start = [], 0
    for part in FEATURE_PARTS[feature_set](y, basis):
        part = part.reshape(part.shape[0], -1)
        end = start + part.shape[1]
        z = _standardized(part, mean[start:end], scale[start:end])
        found.append(jnp.any(z != 0, axis=0))
        start = end
    return jnp.concatenate(found)


def _nonzero_features(y, basis, mean, scale, feature_set, rows) -> np.ndarray:
    """The indices of the standardised features of ``feature_set`` that are not 0 on
    every one of ``y``'s first ``rows`` rows, :data:`PIECE_ROWS` rows at a time."""
    found = np.zeros(mean.shape[0], bool)
    for start in range(0, rows, PIECE_ROWS):
        piece = y[start : min(start + PIECE_ROWS, rows)]
        found |= np.asarray(_nonzero_piece(piece, basis, mean, scale, feature_set))
    return np.flatnonzero(found)


def _by_part(kept: np.ndarray, widths: list[int]) -> tuple[tuple[int, ...], ...]:
    """Flat feature indices ``kept`` (sorted) as each block's own (static)."""
    bounds = np.cumsum([0, *widths])
    return tuple(
        tuple(int(i) for i in kept[(kept >= lo) & (kept < hi)] - lo)
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)
    )


def _kept_weights(weights: Any, kept: Array) -> Any:
    """A head's ``weights`` of the features ``kept`` alone (its first layer's)."""
    return (weights[0][kept], *weights[1:])


def _unseen_at_zero(weights: Any, kept: np.ndarray) -> Any:
    """An MLP's initial ``weights`` with its first layer's rows 0 but at ``kept``."""
    seen = np.zeros(weights[0].shape[0], bool)
    seen[kept] = True
    return (jnp.where(seen[:, None], weights[0], 0), *weights[1:])


def _with_kept_weights(full: Any, trained: Any, kept: Array) -> Any:
    """``full`` weights with those of ``kept`` and the rest from ``trained``."""
    return (full[0].at[kept].set(trained[0]), *trained[1:])


def fit(
    key: PRNGKey,
    y_first: np.ndarray | None = None,
    y_second: np.ndarray | None = None,
    *,
    model: str = "logistic",
    steps: int = STEPS,
    learning_rate: float = LEARNING_RATE,
    feature_set: str = "moments",
    knots: np.ndarray | None = None,
    sample: TrainingSample | None = None,
) -> Scorer:
    """Trains a scorer that separates ``y_first`` (outputs of the first input, label
    1) from ``y_second`` (label 0) by the binary cross-entropy of its logit, with
    Adam: full batch up to :data:`BATCH` outputs, else minibatches of :data:`BATCH`
    (consecutive rows of a fixed shuffle), so a step costs the same whatever the
    sample's size. The step size decays to 0 along a cosine: at a constant one,
    the last minibatches' noise stays in the weights, and a hinge fitted on the
    few outputs past an outer knot swings the score's tail far enough to mix it
    into events at the other end.

    A standardised feature that is 0 on every row the steps read (the indicator of
    NaN where none is drawn, an atom's padding, the hinges of a coordinate without
    continuous values, the bits that a discrete output's values share) has a
    gradient of 0 at every step, and Adam leaves its weights where they started.
    The steps train the other features' weights alone
    (:data:`SKIP_ZERO_FEATURES`), and the scorer holds the left-out ones at their
    initial values: the scorer trained on every feature, up to the rounding of its
    sums. Those of logistic regression start at 0; the MLP starts those rows of its
    first layer at 0 too (the others at random), so that a feature that no training
    row shows moves no score by weights that no step chose, and its hidden layer
    need not read them (:data:`SKIP_ZERO_COLUMNS`).

    Args:
      key: for the MLP's initial weights (logistic regression starts at 0).
      y_first, y_second: outputs, shape ``(n, ...)`` each.
      model: ``"logistic"`` or ``"mlp"``.
      steps, learning_rate: Adam's steps and initial step size.
      feature_set: ``"moments"`` (:func:`features`), ``"bits"``
        (:func:`bit_features`) or ``"ramps"`` (:func:`ramp_features`).
      knots: the hinges of every coordinate with values other than atoms (sorted
        values, :func:`input_knots`); by default its quantiles (:func:`find_basis`).
      sample: the :func:`training_sample` of ``y_first``, ``y_second`` and
        ``knots``, prepared already (then those three are not given).
    """
    if sample is None:
        if y_first is None or y_second is None:
            raise ValueError("Expected y_first and y_second, or a training sample.")
        sample = training_sample(y_first, y_second, knots)
    elif y_first is not None or y_second is not None or knots is not None:
        raise ValueError(
            "Expected either y_first, y_second (and knots) or sample, not both."
        )
    dtype = model_dtype(model)
    y, labels, basis, batch = sample.y, sample.labels, sample.basis, sample.batch
    phi = FEATURES[feature_set](y[:batch], basis)  # one batch: it only preconditions
    mean = jnp.mean(phi, axis=0)
    scale = jnp.std(phi, axis=0)
    scale = jnp.where(scale > 0, scale, 1.0)
    full_mean, full_scale = mean, scale
    width, itemsize = phi.shape[-1], phi.dtype.itemsize
    del phi  # not held while the scorer trains: 400 coordinates' moments, 1.9 GB
    weights = _init(key, model, width, dtype)
    rate = jnp.asarray(learning_rate, dtype)
    if sample.distinct is not None:
        if model == "mlp":  # the features of the distinct outputs that steps read
            read = np.flatnonzero(np.asarray(sample.distinct.counts).sum(axis=(0, 2)))
            rows = sample.distinct.rows[read]
            kept = _nonzero_features(rows, basis, mean, scale, feature_set, len(read))
            if kept.size < width:
                weights = _unseen_at_zero(weights, kept)
        with jax.numpy_dtype_promotion("standard"):
            trained = _train_distinct(
                *sample.distinct, mean, scale, weights, basis, rate, model=model,
                steps=steps, batch=batch, feature_set=feature_set,
            )  # fmt: skip
        return Scorer(mean, scale, trained, basis)
    blocks = y.shape[0] // batch
    rows = blocks * batch  # the rows that the steps use
    full, kept, columns = weights, None, None
    if SKIP_ZERO_FEATURES or model == "mlp":
        kept = _nonzero_features(y, basis, mean, scale, feature_set, rows)
    if model == "mlp" and kept.size < width:
        weights = full = _unseen_at_zero(weights, kept)
    if SKIP_ZERO_FEATURES and 0 < kept.size < width:
        columns = _by_part(kept, _block_widths(feature_set, basis, y.dtype))
        kept = jnp.asarray(kept, jnp.int32)
        weights, mean, scale = _kept_weights(weights, kept), mean[kept], scale[kept]
        width = int(kept.size)
    scalars = rows * width
    # built piece by piece, then trained on as they are: one array of them at the
    # peak, where one program for every row holds a second
    pieces = scalars > FEATURE_SCALARS and feature_set in BUILT_IN_PIECES
    if not features_fit(scalars, itemsize, copies=1 if pieces else FEATURE_COPIES):
        form = "every step"
    elif pieces:
        form = "given"
    else:
        form = "once"
    by_batch = form != "every step" and _by_batch(blocks)
    if form == "given":
        y = _standardized_in_pieces(
            y, basis, mean, scale, feature_set, rows=rows,
            batch=batch if by_batch else None, columns=columns,
        )  # fmt: skip
    with jax.numpy_dtype_promotion("standard"):  # optax mixes its int32 step count
        trained = _train(
            y, labels, mean, scale, weights, basis, rate, model=model, steps=steps,
            batch=batch, feature_set=feature_set, form=form, by_batch=by_batch,
            columns=columns,
        )  # fmt: skip
    if columns is not None:
        trained = _with_kept_weights(full, trained, kept)
    return Scorer(full_mean, full_scale, trained, basis)


def _standardized_features(y, basis, mean, scale, feature_set, columns=None):
    """The features of ``feature_set`` of ``y``'s rows, standardised; where
    ``columns`` are given (:func:`_by_part`), only those, ``mean`` and ``scale``
    then theirs."""
    if columns is None:
        return _standardized(FEATURES[feature_set](y, basis), mean, scale)
    return _standardized(
        _chosen(FEATURE_PARTS[feature_set](y, basis), columns), mean, scale
    )


def _chosen(parts: tuple[Array, ...], columns: tuple) -> Array:
    """The features ``columns`` (each block's, :func:`_by_part`) of the blocks
    ``parts``, side by side."""
    chosen = [
        part.reshape(part.shape[0], -1)[:, np.asarray(local, dtype=np.intp)]
        for part, local in zip(parts, columns, strict=True)
        if local
    ]
    return jnp.concatenate(chosen, axis=-1)


_standardized_piece = jax.jit(
    _standardized_features, static_argnames=("feature_set", "columns")
)


@partial(jax.jit, donate_argnums=0)
def _put_rows(out, rows, start):
    return jax.lax.dynamic_update_slice_in_dim(out, rows, start, 0)


def _standardized_in_pieces(
    y: Array,
    basis: Basis,
    mean: Array,
    scale: Array,
    feature_set: str,
    *,
    rows: int | None = None,
    batch: int | None = None,
    columns: tuple[tuple[int, ...], ...] | None = None,
) -> Array | tuple[Array, ...]:
    """The standardised features of ``y``'s first ``rows`` rows (by default all of
    them), each :data:`PIECE_ROWS` of them computed by one program and written in
    place into one array: at the peak, that array and a piece's, where one program
    for all the rows held the bit features' concatenation beside it. With a
    ``batch`` (that divides ``rows``), one array per ``batch`` rows instead, in
    order: a minibatch's features for :func:`_train` ``by_batch``.

    The same numbers as that program's, to the last bit
    (``tests/test_learning.py``): a program of a piece's rows fuses their
    arithmetic as one of all the rows does, where a loop over the pieces inside
    one program, or a program that also wrote its piece into the array, fused the
    bit features' ``precision / nmant`` into their standardisation otherwise and
    changed them at rounding."""
    rows = y.shape[0] if rows is None else rows
    if batch is not None:
        pieces = partial(_standardized_in_pieces, columns=columns)
        return tuple(
            pieces(y[first : first + batch], basis, mean, scale, feature_set)
            for first in range(0, rows, batch)
        )
    out = jnp.zeros((rows, mean.shape[0]), mean.dtype)
    for start in range(0, rows, PIECE_ROWS):
        part = _standardized_piece(
            y[start : min(start + PIECE_ROWS, rows)], basis, mean, scale, feature_set,
            columns,
        )  # fmt: skip
        out = _put_rows(out, part, start)
    return out


# The training features are computed once where they hold at most FEATURE_SCALARS
# numbers, on any device; on a CPU also where FEATURE_COPIES arrays of their size
# (one, where they are built in pieces, below) fit in FEATURE_MEMORY_SHARE of the
# memory the process may use; else every step.
# They live only while the scorer trains. In one program, XLA's CPU code
# concatenates the bit features' blocks into one array before it standardises
# them: on 2e6 training outputs in 10 coordinates, 6.0 GB of temporaries for 3.0 GB
# of features. Past FEATURE_SCALARS they are therefore built in pieces (below). On
# an accelerator a batch's features cost next to nothing beside its step (the H200
# trains each of svt1's scorers on 1e6 outputs per input in well under a second),
# so there the memory is kept.
FEATURE_SCALARS = 1 << 26
FEATURE_MEMORY_SHARE = 1 / 3
FEATURE_COPIES = 2
# Past FEATURE_SCALARS, the feature sets whose features are built PIECE_ROWS rows
# at a time (_standardized_in_pieces). A process that fitted svt1's bit scorer on
# 2e6 outputs (3.3 GB of features) peaked at 7.4 GB with one program for all the
# rows, 4.4 GB in pieces, and the fit took 14.7-15.6 s against 11.1-11.4 s
# (prefix-sum: 6.4 GB against 3.9 GB, 12.8-13.5 s against 9.3-9.7 s; noisy-hist1's
# 1.4 GB of bit features, the same peak, 0.3-0.5 s slower in pieces). The moments'
# one program held no such copy (2.8 GB against 2.9-3.0 GB) and was 0.3-1.9 s
# faster. Pieces of 65536 rows faulted in 2.6 million pages for svt1's bit features
# where those of 8192 rows faulted in 1.0 million, about 2 s faster (2-core Intel
# Xeon; benchmarks/RESULTS.md, "The bit features built in pieces"). Built in
# pieces, they are held once, and fit asks memory for one array of them:
# laplace-parallel's 340 bit features that vary, on 10^6 training outputs per
# input (5.35 GB), were computed every step on a machine of 24 GB under two
# copies, and its bit scorer trained in 6.0-7.7 s against 13.6-14.9 s, the
# process's peak 6.5 GB against 3.7 GB (2-core AMD EPYC; benchmarks/RESULTS.md, "The bit
# features built in pieces held once").
BUILT_IN_PIECES = frozenset({"bits"})
PIECE_ROWS = 8192


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity where the system says)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def machine_memory() -> int | None:
    """The memory this process may use, in bytes: the machine's physical memory, or
    its container's limit where that is less (:func:`cgroup_memory_limit`: a
    container sees its host's memory through ``os.sysconf``); ``None`` where the
    system does not say (``os.sysconf`` outside POSIX)."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
    if total <= 0:
        return None
    limit = cgroup_memory_limit()
    return total if limit is None else min(total, limit)


def cgroup_memory_limit(
    proc: str = "/proc/self/cgroup", root: str = "/sys/fs/cgroup"
) -> int | None:
    """The memory limit of this process's Linux control group, in bytes (version 2:
    ``memory.max``; version 1: the memory controller's ``memory.limit_in_bytes``):
    the least of those at its own group's path and at ``root``'s; ``None`` where
    there is none (no such files, ``max``, or an unlimited value past 2^60)."""
    try:
        with open(proc) as lines:
            groups = [line.rstrip("\n").split(":", 2) for line in lines]
    except OSError:
        return None
    places = []
    for fields in groups:
        if len(fields) != 3:
            continue
        _, controllers, path = fields
        if controllers == "":  # version 2, one hierarchy
            places.append((os.path.join(root, path.lstrip("/")), "memory.max"))
        elif "memory" in controllers.split(","):
            folder = os.path.join(root, "memory", path.lstrip("/"))
            places.append((folder, "memory.limit_in_bytes"))
    places += [
        (root, "memory.max"),
        (os.path.join(root, "memory"), "memory.limit_in_bytes"),
    ]
    limits = []
    for folder, name in places:
        try:
            with open(os.path.join(folder, name)) as file:
                text = file.read().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 60:
            limits.append(int(text))
    return min(limits, default=None)


def features_fit(
    scalars: int,
    itemsize: int,
    platform: str | None = None,
    *,
    copies: int = FEATURE_COPIES,
) -> bool:
    """Whether a scorer's training features, ``scalars`` numbers of ``itemsize``
    bytes, are computed once rather than every step: up to
    :data:`FEATURE_SCALARS` numbers on any ``platform`` (by default JAX's), and on a
    CPU up to what ``copies`` arrays of their size hold in
    :data:`FEATURE_MEMORY_SHARE` of :func:`machine_memory` (one where they are
    built in pieces, :data:`FEATURE_COPIES` where one program computes them all).
    It decides how long a scorer takes to train, never what it learns."""
    if scalars <= FEATURE_SCALARS:
        return True
    if (platform or jax.default_backend()) != "cpu":
        return False
    memory = machine_memory()
    peak = copies * scalars * itemsize
    return memory is not None and peak <= FEATURE_MEMORY_SHARE * memory


# On a CPU, each minibatch's training features are an array of their own, read by a
# switch over the minibatches (_train's by_batch), up to BY_BATCH_BLOCKS of them: a
# step that sliced its minibatch from the features of every row copied it first (63
# MB for svt1's 120 moments per output); svt1's three scorers on 10^6 training
# outputs per input trained in 14.5-15.0 s against 19.6-20.6 s, to the same weights
# (benchmarks/RESULTS.md, "Each minibatch's features an array of their own"). A
# switch compiles each branch: past BY_BATCH_BLOCKS minibatches (a training sample
# of 2^20 outputs per input, the default's most), the steps slice their minibatch
# again. Off a CPU the slice is kept: a switch there has not been measured.
BY_BATCH = True
BY_BATCH_BLOCKS = 32


def _by_batch(blocks: int, platform: str | None = None) -> bool:
    """Whether :func:`_train` reads ``blocks`` minibatches by a switch (above)."""
    return (
        BY_BATCH
        and 1 < blocks <= BY_BATCH_BLOCKS
        and (platform or jax.default_backend()) == "cpu"
    )


@partial(
    jax.jit,
    static_argnames=(
        "model", "steps", "batch", "feature_set", "form", "by_batch", "columns",
    ),
)  # fmt: skip
def _train(
    y, labels, mean, scale, weights, basis, learning_rate, *, model, steps, batch,
    feature_set, form, by_batch=False, columns=None,
):  # fmt: skip
    """``steps`` Adam steps on the cross-entropy, full batch where ``batch`` is the
    sample's size, else on its consecutive blocks of ``batch`` rows in turn; one
    compile per model, feature set, sample shape, dtype and ``form``. Where it is
    ``"once"``, the standardised features of the rows used are computed once; where
    ``"given"``, ``y`` is those features already (:func:`_standardized_in_pieces`);
    ``"every step"`` computes them on each step's batch: the same numbers in every
    form (the features are elementwise per row, and XLA fuses their arithmetic alike
    in each: the suite's scorers are the same to the last bit,
    ``benchmarks/RESULTS.md``; a form that computed them block by block inside one
    program, ``lax.map`` or a loop, fused the bit features' ``precision / nmant``
    into their standardisation otherwise and changed them at rounding).

    ``by_batch`` (forms ``"once"`` and ``"given"``): each minibatch's features are
    an array of their own (computed once, or given as a tuple of them), and a step
    reads its own by a switch over the minibatches, where it would slice it from
    the features of every row, a copy each step (:data:`BY_BATCH`). The same steps
    on the same numbers.

    ``columns`` (each block's, :func:`_by_part`): the features that the steps
    train, ``mean``, ``scale`` and the first layer's ``weights`` theirs alone; the
    others are left out (:func:`fit`)."""
    head = HEADS[model]
    dtype = jax.tree.leaves(weights)[0].dtype  # the model's (:func:`model_dtype`)
    blocks = labels.shape[0] // batch  # a label per row of the sample, in every form
    labels = labels[: blocks * batch].astype(dtype)

    def standardized(y):
        z = _standardized_features(y, basis, mean, scale, feature_set, columns)
        return z.astype(dtype)

    # the steps slice their batches from the first blocks * batch rows; only the
    # features computed once are of those rows alone (a slice of the outputs would
    # be a copy of them: 6.4 GB for 2e6 outputs of 400 coordinates in float64)
    if form != "once":
        inputs = y
    elif by_batch:
        inputs = tuple(
            standardized(y[k * batch : (k + 1) * batch]) for k in range(blocks)
        )
    else:
        inputs = standardized(y[: blocks * batch])

    def loss(weights, inputs, labels):
        z = standardized(inputs) if form == "every step" else inputs
        return jnp.mean(optax.sigmoid_binary_cross_entropy(head(z, weights), labels))

    def grads_of(k, weights):
        """The gradient on minibatch ``k``'s own features."""
        return jax.grad(loss)(weights, inputs[k], labels[k * batch : (k + 1) * batch])

    def grads_at(i, weights):
        if by_batch:
            branches = [partial(grads_of, k) for k in range(blocks)]
            return jax.lax.switch(i % blocks, branches, weights)
        start = (i % blocks) * batch
        return jax.grad(loss)(
            weights,
            jax.lax.dynamic_slice_in_dim(inputs, start, batch),
            jax.lax.dynamic_slice_in_dim(labels, start, batch),
        )

    return _adam_steps(weights, grads_at, learning_rate, steps)


def _adam_steps(weights: Any, grads_at: Callable, learning_rate, steps: int) -> Any:
    """``steps`` Adam steps from ``weights``, step ``i`` on ``grads_at(i, weights)``,
    the step size decaying from ``learning_rate`` to 0 along a cosine (traced
    inside the trainers' programs)."""
    optimizer = optax.adam(optax.cosine_decay_schedule(learning_rate, steps))

    def step(i, state):
        weights, opt_state = state
        updates, opt_state = optimizer.update(grads_at(i, weights), opt_state)
        return optax.apply_updates(weights, updates), opt_state

    state = (weights, optimizer.init(weights))
    return jax.lax.fori_loop(0, steps, step, state)[0]


@partial(jax.jit, static_argnames=("model", "steps", "batch", "feature_set"))
def _train_distinct(
    rows, counts, mean, scale, weights, basis, learning_rate, *, model, steps, batch,
    feature_set,
):  # fmt: skip
    """:func:`_train`'s steps on a sample of few distinct outputs: each minibatch's
    cross-entropy is its rows', each distinct output's counted as often as the
    minibatch holds it with each label (:class:`Distinct`). The same loss and
    gradient in exact arithmetic; summed in another order, so equal to
    :func:`_train`'s to rounding, not to the bit. A step costs the distinct
    outputs' features, not the minibatch's."""
    head = HEADS[model]
    blocks = counts.shape[0]
    dtype = jax.tree.leaves(weights)[0].dtype  # the model's (:func:`model_dtype`)
    z = _standardized_features(rows, basis, mean, scale, feature_set).astype(dtype)
    ones = jnp.ones(rows.shape[0], dtype)

    def loss(weights, counted):
        logit = head(z, weights)
        first = optax.sigmoid_binary_cross_entropy(logit, ones)
        second = optax.sigmoid_binary_cross_entropy(logit, 1 - ones)
        return jnp.sum(counted[:, 0] * first + counted[:, 1] * second) / batch

    def grads_at(i, weights):
        counted = jax.lax.dynamic_index_in_dim(counts, i % blocks, keepdims=False)
        return jax.grad(loss)(weights, counted.astype(dtype))

    return _adam_steps(weights, grads_at, learning_rate, steps)


# --- choosing events on the second sample ------------------------------------------


class Selection(NamedTuple):
    """The thresholds chosen, sorted, and the bound each promised."""

    thresholds: np.ndarray
    predicted: np.ndarray  # the predicted lower bound of each threshold's events


def quantiles_of_sorted(ordered: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """``numpy.quantile(ordered, levels)`` (its default, linear interpolation;
    ``levels`` in [0, 1]) of scores sorted already, NaN last, read off at the two
    order statistics around each level instead of partitioning a copy (0.6 s of
    the 0.9 s that a choice of thresholds took on 2^23 scores per input, 2-core
    CPU). The same values to the last bit: the virtual index :math:`(n - 1) q`, its
    floor and the weight between them as NumPy computes them, its interpolation
    from the nearer end (at the last index, from the last value to itself, as
    NumPy's weight past the end gives), and NaN at every level where a score is
    NaN."""
    n = len(ordered)
    virtual = (n - 1) * np.asarray(levels)
    previous = np.minimum(np.floor(virtual), n - 1).astype(np.intp)
    following = np.minimum(previous + 1, n - 1)
    weight = virtual - previous
    low, high = ordered[previous], ordered[following]
    step = high - low
    value = np.asarray(low + step * weight)
    upper = weight >= 0.5  # from the upper end there: exact at the weight 1
    value[upper] = (high - step * (1 - weight))[upper]
    if np.isnan(ordered[-1]):
        value[:] = ordered[-1]
    return value


def _candidates(s_first: np.ndarray, s_second: np.ndarray, count: int) -> np.ndarray:
    """Thresholds at quantiles of both inputs' scores (sorted), dense in both tails
    (where the rare events with the largest ratios are)."""
    n = min(len(s_first), len(s_second))
    tail = np.logspace(math.log10(1 / n), -1, count // 4)
    middle = np.linspace(0.1, 0.9, count // 4)
    levels = np.unique(np.concatenate([tail, middle, 1 - tail]))
    with np.errstate(invalid="ignore"):  # inf - inf between infinite scores: dropped
        values = np.concatenate(
            [
                quantiles_of_sorted(s_first, levels),
                quantiles_of_sorted(s_second, levels),
            ]
        )
    values = values[np.isfinite(values)]
    return np.unique(values)


def _runs(ordered: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The first index and the length of each run of equal values of ``ordered``
    (sorted), or ``None`` where the runs average fewer than four values: then an
    elementwise function is as cheap on every value as on the runs."""
    if ordered.size == 0:
        return None
    firsts = np.concatenate([[0], np.flatnonzero(ordered[1:] != ordered[:-1]) + 1])
    if 4 * firsts.size > ordered.size:
        return None
    return firsts, np.diff(np.append(firsts, ordered.size))


# The running sums of loss_weighted_counts' weights are taken this many at a time:
# a piece's weights and sums stay in the cache, where the sums of every weight
# at once wrote and read two arrays of the sample's size (10^7 per input: 80 MB each).
SUM_PIECE = 1 << 16


def _logits(scores: np.ndarray, prior: float) -> np.ndarray:
    """The logit of each score: ``score + prior`` in float64."""
    return scores.astype(np.float64, copy=False) + prior


def _weights(
    scores: np.ndarray, prior: float, sign: int, start: int, stop: int
) -> np.ndarray:
    """``expit(sign * logit)`` of positions ``start:stop`` (:func:`_logits`)."""
    return special.expit(sign * _logits(scores[start:stop], prior))


def _weights_of_runs(
    firsts: np.ndarray, lengths: np.ndarray, of_run: np.ndarray, start: int, stop: int
) -> np.ndarray:
    """The weights of positions ``start:stop`` of a sorted array whose runs of equal
    values begin at ``firsts``, of ``lengths``, with the weight ``of_run`` each:
    ``np.repeat(of_run, lengths)[start:stop]``, the piece alone."""
    low = np.searchsorted(firsts, start, side="right") - 1
    high = np.searchsorted(firsts, stop, side="left")
    ends = np.minimum(firsts[low:high] + lengths[low:high], stop)
    return np.repeat(of_run[low:high], ends - np.maximum(firsts[low:high], start))


def _running_sums_at(
    weights: Callable[[int, int], np.ndarray], size: int, at: np.ndarray
) -> tuple[np.ndarray, float]:
    """The running sums of ``size`` weights (``weights(start, stop)`` gives those of
    positions ``start:stop``, a new array) at the positions ``at`` (0 at a position
    outside ``[0, size)``), and their total: ``np.cumsum``'s, to the bit, which adds
    each weight to the sum of those before it, as this does a piece at a time (each
    piece's first weight is added to the sum before it, then ``np.cumsum``)."""
    values = np.zeros(len(at))
    total = 0.0
    for start in range(0, size, SUM_PIECE):
        stop = min(start + SUM_PIECE, size)
        piece = weights(start, stop)
        if start:
            piece[0] = total + piece[0]
        tail = np.cumsum(piece)
        inside = (at >= start) & (at < stop)
        values[inside] = tail[at[inside] - start]
        total = tail[-1]
    return values, total


def loss_weighted_counts(
    sorted_first: np.ndarray, sorted_second: np.ndarray, thresholds: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    r"""The counts of :math:`\{L \ge t\}` among ``n_1`` and ``n_2`` outputs of each
    input, estimated from both samples at once where the scores (sorted, no NaN)
    are the exact privacy loss :math:`L = \ln p_1/p_2` of each output.

    Pooled, the :math:`n_1 + n_2` outputs are a sample of the mixture
    :math:`(n_1 p_1 + n_2 p_2)/(n_1 + n_2)`, and an output of loss :math:`L` came
    from the first input with the posterior probability
    :math:`w(L) = n_1 / (n_1 + n_2 e^{-L})`. Each pooled output of the event counts
    :math:`w` for the first input and :math:`1 - w` for the second (the balance
    heuristic of multiple importance sampling), over the same sums of all the
    outputs, which estimate :math:`n_1` and :math:`n_2`: a self-normalised estimate
    of :math:`n_1 P_1` and :math:`n_2 P_2`, exactly 0 for an empty event and the
    sample's size for every output, so that the complement :math:`\{L < t\}`, which
    the bound also weighs as size less count, gets its own weighted estimate, not
    the noise of the whole sample's (an empty lower set would otherwise promise a
    bound from that noise alone). Far less noisy than the counts of one input alone
    where the event is rare under it, as the tail events of the best bounds are."""
    n_first, n_second = len(sorted_first), len(sorted_second)
    prior = math.log(n_first / n_second)
    sums = np.zeros((2, len(thresholds)))  # over the pooled outputs, per input
    totals = np.zeros((2, 1))
    for scores in (sorted_first, sorted_second):  # pooled without a merge
        # from the largest score down, so that a tail's small weights add first;
        # in float64 whatever the scores' dtype: a float32 running sum of 2^20
        # weights rounds each addition at its size, by the same amount at every
        # output of a tied level, and an event of a few percent is the difference
        # of two such sums
        # (each piece's logits made where summed: no array of them all, 80 MB at
        # 10^7 scores)
        ordered = scores[::-1]
        count = len(scores) - np.searchsorted(scores, thresholds, side="left")
        # the loss of discrete outputs takes few values: each weight is computed
        # once per run of equal losses and repeated, the same numbers (equal
        # losses have equal logits)
        runs = _runs(ordered)
        logit = None if runs is None else _logits(ordered[runs[0]], prior)
        # the second input's weight as expit(-logit), not 1 - w, which rounds to
        # 0 early
        for i, sign in enumerate((1, -1)):
            if runs is None:
                weights = partial(_weights, ordered, prior, sign)
            else:
                weights = partial(_weights_of_runs, *runs, special.expit(sign * logit))
            tail, total = _running_sums_at(weights, ordered.size, count - 1)
            totals[i] += total
            sums[i] += np.where(count > 0, tail, 0.0)
    first, second = np.array([[n_first], [n_second]]) * sums / totals
    return first, second


def predicted_bounds(
    s_first: np.ndarray,
    s_second: np.ndarray,
    thresholds: np.ndarray,
    *,
    draws: int,
    confidence: float,
    num_events: int,
    epsilon: float,
    delta: float,
    estimate: bool = False,
) -> np.ndarray:
    r"""For every threshold :math:`t`, the lower bound that the events
    :math:`\{s \ge t\}` and :math:`\{s < t\}` (both orders) would give on a final
    sample of ``draws`` per input: the pure-epsilon bound :math:`\ln P_{lo}/P_{hi}`
    where ``delta`` is 0, else :math:`P_{lo} - e^\varepsilon P_{hi}`, each
    Clopper–Pearson end at the Bonferroni share of ``2 num_events`` intervals.

    The rates it assumes are pessimistic ends of their own estimates here (the
    Clopper–Pearson interval at :data:`SELECTION_CONFIDENCE` of this sample's
    counts): the input the event speaks for at its lower end, the other at its upper
    end. Taken at face value, the counts of a rare event promise too much: among
    many thresholds, the rarest win by their noise (the winner's curse), and the
    final sample, which has no such luck, bounds nothing.
    """
    return _predicted_of_sorted(
        np.sort(s_first), np.sort(s_second), thresholds, draws=draws,
        confidence=confidence, num_events=num_events, epsilon=epsilon, delta=delta,
        estimate=estimate,
    )  # fmt: skip


def _predicted_of_sorted(sorted_first, sorted_second, thresholds, **promise):
    """:func:`predicted_bounds` of scores already sorted."""
    k_first, k_second = (
        len(s) - np.searchsorted(s, thresholds, side="left")
        for s in (sorted_first, sorted_second)
    )
    return promises_of_counts(
        k_first, len(sorted_first), k_second, len(sorted_second), **promise
    )[0]


def promises_of_counts(
    k_first: np.ndarray,
    n_first: int,
    k_second: np.ndarray,
    n_second: int,
    *,
    draws: int,
    confidence: float,
    num_events: int,
    epsilon: float,
    delta: float,
    estimate: bool = False,
    optimistic: bool = False,
    interval: float = SELECTION_CONFIDENCE,
) -> tuple[np.ndarray, np.ndarray]:
    r""":func:`predicted_bounds` from the counts of the events ``{s >= t}`` among
    ``n_first`` and ``n_second`` outputs of each input (arrays over the events;
    the rates at the pessimistic ends of their ``interval`` Clopper-Pearson
    intervals, the rate of the input the event speaks for at its lower end and the
    other's at its upper end; ``optimistic=True`` takes the other ends, and
    ``estimate=True`` the rates themselves) and, per event, the standard
    deviation of the bound that its best set and order measure on this sample
    (the delta method on the two binomial counts, each with half a count added so
    that an empty cell is finite):
    :math:`\sqrt{(1-p)/(np) + (1-q)/(mq)}` for the log ratio :math:`\ln p/q`
    where ``delta`` is 0, else
    :math:`\sqrt{p(1-p)/n + e^{2\varepsilon} q(1-q)/m}`. It is how far the
    promise moves with the luck of the counts that judge it."""
    k_first, k_second = np.asarray(k_first), np.asarray(k_second)
    per_interval = 1 - (1 - confidence) / (2 * num_events)
    best = np.full(k_first.shape, -np.inf)
    spread = np.full(k_first.shape, np.inf)
    events = (  # (count, size) under each input, for {s >= t} and {s < t}
        ((k_first, n_first), (k_second, n_second)),
        ((n_first - k_first, n_first), (n_second - k_second, n_second)),
    )
    for a, b in events:
        for high, low in ((a, b), (b, a)):  # the event speaks for `high`'s input
            if estimate:
                p_high, p_low = high[0] / high[1], low[0] / low[1]
            elif optimistic:
                _, p_high = clopper_pearson_arrays(*high, interval)
                p_low, _ = clopper_pearson_arrays(*low, interval)
            else:
                p_high, _ = clopper_pearson_arrays(*high, interval)
                _, p_low = clopper_pearson_arrays(*low, interval)
            lower, _ = clopper_pearson_arrays(p_high * draws, draws, per_interval)
            _, upper = clopper_pearson_arrays(p_low * draws, draws, per_interval)
            (k_h, n_h), (k_l, n_l) = high, low
            r_h, r_l = (k_h + 0.5) / (n_h + 1), (k_l + 0.5) / (n_l + 1)
            with np.errstate(divide="ignore"):
                if delta == 0:
                    value = np.log(lower) - np.log(upper)
                    sd = np.sqrt((1 - r_h) / (n_h * r_h) + (1 - r_l) / (n_l * r_l))
                else:
                    value = lower - math.exp(epsilon) * upper
                    sd = np.sqrt(
                        r_h * (1 - r_h) / n_h
                        + math.exp(2 * epsilon) * r_l * (1 - r_l) / n_l
                    )
            better = value > best
            best = np.where(better, value, best)
            spread = np.where(better, sd, spread)
    return best, spread


def select_thresholds(
    s_first: np.ndarray,
    s_second: np.ndarray,
    *,
    draws: int,
    confidence: float,
    max_events: int,
    epsilon: float,
    delta: float,
    candidates: int = 200,
    adjust: Callable[[np.ndarray], np.ndarray] | None = None,
    estimate: bool = False,
    near: float = 2.0,
    exact_loss: bool = False,
) -> Selection:
    r"""Up to ``max_events`` thresholds whose :func:`predicted_bounds` are best, from
    scores of a sample that the final bound never sees.

    Taken greedily, best first, skipping a threshold whose event is nearly one
    already taken: both tail masses of the pooled scores within a factor ``near``
    of theirs (it would cost its share of the correction and add little).
    ``adjust`` maps the candidate thresholds (quantiles of the scores) to those
    that are evaluated and returned, e.g. a hair below atoms of the score;
    ``estimate=True`` ranks them by the bounds at the sample's rates themselves
    rather than at their pessimistic ends (for scores of few distinct values,
    whose few events the winner's curse touches little).

    ``exact_loss=True`` declares the scores to be the exact privacy loss
    :math:`\ln p_1(y)/p_2(y)` of each output: each event's masses are then those of
    :func:`loss_weighted_counts`, which spend every pooled output on both inputs,
    and are taken at face value (they lack the count noise that the pessimistic
    ends guard against; ``estimate`` is ignored). The scores of a loss with a NaN
    fall back to the counts."""
    if not near > 1:
        raise ValueError(f"Expected near > 1 (a factor of tail masses), got {near!r}.")
    # each input's scores sorted once: quantiles, counts and the pooled ranks below
    # come from them (a selection sample has up to 2^24 scores per input)
    s_first, s_second = np.sort(s_first), np.sort(s_second)
    thresholds = _candidates(s_first, s_second, candidates)
    if adjust is not None:
        thresholds = adjust(thresholds)
    if thresholds.size == 0:  # every score was NaN or infinite: one dummy event
        return Selection(np.array([0.0]), np.array([-np.inf]))
    promise = dict(
        draws=draws, confidence=confidence, num_events=max_events, epsilon=epsilon,
        delta=delta,
    )  # fmt: skip
    if exact_loss and not (
        np.isnan(s_first[-1:]).any() or np.isnan(s_second[-1:]).any()
    ):
        k_first, k_second = loss_weighted_counts(s_first, s_second, thresholds)
        predicted = promises_of_counts(
            k_first, len(s_first), k_second, len(s_second), estimate=True, **promise
        )[0]
    else:
        predicted = _predicted_of_sorted(
            s_first, s_second, thresholds, estimate=estimate, **promise
        )
    # the pooled scores below each threshold: those of each input below it
    pooled_size = len(s_first) + len(s_second)
    below = (
        np.searchsorted(s_first, thresholds) + np.searchsorted(s_second, thresholds)
        + 0.5
    ) / (pooled_size + 1)  # fmt: skip
    chosen: list[int] = []
    for i in np.argsort(-predicted, kind="stable"):
        taken = any(
            abs(math.log(below[i] / below[j])) < math.log(near)
            and abs(math.log((1 - below[i]) / (1 - below[j]))) < math.log(near)
            for j in chosen
        )
        if not taken:
            chosen.append(int(i))
        if len(chosen) == max_events:
            break
    order = np.array(sorted(chosen, key=lambda i: thresholds[i]))
    return Selection(thresholds[order], predicted[order])
