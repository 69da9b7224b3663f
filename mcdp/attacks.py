r"""Attacks (distinguishers): every one of them, and the closed registry ``ATTACKS``.

An :class:`Attack` maps mechanism outputs ``y`` of shape ``(n, d)`` to integer
outcomes in ``[0, num_outcomes)``; the engine (:mod:`mcdp.sampling`) counts how often
each outcome occurs under each input, and :mod:`mcdp.statistics` turns the counts
into bounds. Outcomes are *ordered*: the events of an audit are the upper sets
:math:`\{o \ge k\}` and the lower sets :math:`\{o < k\}`, taken in both orders of the
pair, so which end speaks for which input does not matter.

An attack that needs data of the audit (the inputs, the parameters, the epsilons
where the profile is read) declares ``prepare``: before any draw that counts, the
audit calls ``prepare(context)`` with an :class:`AttackContext` and runs the attack
it returns, with the ``aux`` it returns (a pytree of arrays passed into the compiled
loop as data). Whatever ``prepare`` computes is fixed before the counted sample
exists, so the bounds stay valid however it was chosen; ``context.key`` is there for
an attack that draws samples of its own, on keys that the counted sample never
uses.

Registered attacks (``ATTACKS``, :func:`get_attack`):

* ``majority``: the ACL 2022 reconstruction attack, two outcomes;
* ``support``: an output outside :math:`x' + [-A, A]^d` is impossible under
  :math:`x'`, for mechanisms whose noise is bounded by a declared :math:`A`;
* ``lr``: the exact privacy loss :math:`\ln p(y|x) - \ln p(y|x')` binned at
  thresholds fixed in advance, for mechanisms with a declared density;
* ``learned``: a scorer trained on one sample and thresholds chosen on a second
  (:mod:`mcdp.learning`), for any mechanism, density or not;
* ``float-support``: an output on a finer float grid than any that one input
  produced on a training sample (:func:`float_support_attack`);
* ``structure``: a release structure (dict keys, lengths, NaN, an exception)
  that one input produced on a training sample and the other did not, for dataset
  audits (:mod:`mcdp.core.releases`);
* ``auto``: the portfolio of all of these that apply, and of the histogram of
  discrete outputs (the plug-in likelihood ratio, :func:`histogram_table`), the
  best on fresh draws counted alone (:func:`auto_attack`); the default of every
  (epsilon, delta) audit and of the input search.
"""

from __future__ import annotations

import concurrent.futures
import functools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from mcdp import _validate, learning
from mcdp._bits import bit_floats, bit_order
from mcdp._types import Array, PRNGKey
from mcdp.core.attack import Attack, AttackContext
from mcdp.core.mechanism import Mechanism
from mcdp.core.releases import ReleaseCall
from mcdp.engines.base import device_tree
from mcdp.engines.device import CHUNK_SCALARS, host_array
from mcdp.sampling import BLOCK_DRAWS, draw

LR_GRID = 24  # evenly spaced thresholds on each side, besides the epsilons


# --- the majority vote ------------------------------------------------------------


def majority_vote_guess(y: Array, aux: Any = None) -> Array:
    """The ACL 2022 reconstruction attack.

    Each coordinate rounds to 0 below 0.5 and to 1 otherwise (NaN compares false, so
    it rounds to 1); the mean of the rounded coordinates, rounded half-to-even, is
    the guess. A tie at ``d/2`` rounds to 0, so the guess is 1 iff more than half of
    the coordinates round to 1.

    Returns:
      int32 array of shape ``(n,)``: 0 guesses ``D = 0^d``, 1 guesses ``D' = 1^d``.
    """
    del aux
    ones = jnp.sum(~(y < 0.5), axis=-1, dtype=jnp.int32)
    return (2 * ones > y.shape[-1]).astype(jnp.int32)


MAJORITY_VOTE = Attack(
    name="majority",
    num_outcomes=2,
    guess=majority_vote_guess,
    events=("more than half of the coordinates >= 1/2",),
)


# --- the support test -------------------------------------------------------------


def _support_guess(y, aux):
    """0: outside the support of x only (speaks for x'); 2: outside that of x' only
    (speaks for x); 1: otherwise."""
    tx, tx_prime, bound = aux
    tx = jnp.broadcast_to(tx, y.shape)
    tx_prime = jnp.broadcast_to(tx_prime, y.shape)
    in_x = jnp.all(jnp.abs(y - tx) <= bound, axis=-1)
    in_x_prime = jnp.all(jnp.abs(y - tx_prime) <= bound, axis=-1)
    only_x = in_x & ~in_x_prime
    only_x_prime = in_x_prime & ~in_x
    return jnp.where(only_x, 2, jnp.where(only_x_prime, 0, 1)).astype(jnp.int32)


def _prepare_support(context: AttackContext) -> tuple[Attack, Any]:
    mechanism, tx = context.mechanism, context.transformed
    if mechanism.noise_bound is None:
        raise ValueError(
            f"attack 'support' needs bounded noise; {mechanism.name!r} has none."
        )
    bound = float(mechanism.noise_bound(jax.tree.map(np.asarray, context.params)))
    # outputs computed as tx + eta can land a few ulps past tx +- A: widen the box
    # by that much (a fixed event either way, so the bound stays valid)
    slack = 8 * np.finfo(context.dtype).eps * (np.abs(tx).max() + bound)
    return SUPPORT_TEST, (tx[0], tx[1], bound + slack)


SUPPORT_TEST = Attack(
    "support",
    3,
    _support_guess,
    prepare=_prepare_support,
    # outcome 2 (outside the support of x') cannot come from x', 0 not from x
    impossible=((1, 2), (0, 0)),
    events=("inside the support of x", "outside the support of x'"),
)


# --- the likelihood-ratio test ----------------------------------------------------


@functools.cache
def likelihood_ratio_attack(mechanism: Mechanism, num_thresholds: int) -> Attack:
    """Outcome = how many of the sorted thresholds the privacy loss reaches.

    ``aux = (tx, tx_prime, params, thresholds)`` with the transformed (clipped)
    inputs. Cached, so equal arguments give the same (hashable) attack and the
    engine compiles once.
    """
    if mechanism.privacy_loss is None:
        raise ValueError(
            "attack 'lr' needs a mechanism with a known density, "
            f"not {mechanism.name!r}."
        )
    loss_fn = mechanism.privacy_loss

    def guess(y, aux):
        tx, tx_prime, params, thresholds = aux
        loss = loss_fn(y, tx, tx_prime, params)
        return jnp.searchsorted(thresholds, loss, side="right").astype(jnp.int32)

    return Attack("lr", num_thresholds + 1, guess, by_block=mechanism.loss_by_block)


def _lr_events(cut: np.ndarray) -> tuple[str, ...]:
    return tuple(f"privacy loss >= {t:.6g}" for t in cut)


def lr_thresholds(epsilons: Sequence[float]) -> np.ndarray:
    r"""Fixed thresholds: :math:`\pm\varepsilon` for every epsilon of interest (the
    Neyman–Pearson optimal events :math:`\{L \ge \varepsilon\}`), 0, and an even
    grid in between."""
    top = max(epsilons, default=1.0) or 1.0
    grid = np.linspace(-top, top, 2 * LR_GRID + 1)
    values = np.concatenate([grid, np.asarray(epsilons), -np.asarray(epsilons), [0.0]])
    return np.unique(np.round(values, 12))


def _prepare_lr(context: AttackContext) -> tuple[Attack, Any]:
    thresholds = lr_thresholds(context.epsilons)
    attack = likelihood_ratio_attack(context.mechanism, len(thresholds))
    # A loss atom can sit exactly on a threshold (Laplace at its calibration has
    # atoms at +-epsilon); rounding would split it differently under x and x' (their
    # outputs lie on different float grids), a distinguisher of rounding, not of the
    # mechanism. Cut a hair below each threshold: the events stay fixed in advance.
    cut = _below_atoms(thresholds, context.dtype)
    tx = context.transformed
    attack = attack._replace(events=_lr_events(cut))
    params = loss_params(context.mechanism, tx, context.params, context.dtype)
    return attack, (tx[0], tx[1], params, cut)


def loss_params(mechanism: Mechanism, tx: np.ndarray, params: Any, dtype: str) -> Any:
    """The params that the exact loss of ``mechanism`` reads on the pair ``tx``:
    with what it reads for every output made once, before the draws, in ``dtype``,
    where the mechanism says what (``Mechanism.loss_tables``); else ``params``."""
    if mechanism.loss_tables is None:
        return params
    with jax.enable_x64(dtype == "float64"):
        return mechanism.loss_tables(*device_tree((tx[0], tx[1], params), dtype))


@functools.cache
def _loss_score(mechanism: Mechanism) -> Any:
    """``score(y, aux, key=None)``: the exact privacy loss of ``y``, ``aux = (tx,
    tx_prime, params, memo)``, looked up in ``memo`` (a :class:`ValueMemo`) where
    it is not None, by ``key`` where given (:func:`memoised_values`; cached per
    mechanism: one compile)."""
    loss_fn = mechanism.privacy_loss

    def score(y, aux, key=None):
        tx, tx_prime, params, memo = aux
        if memo is None:
            return loss_fn(y, tx, tx_prime, params)
        return memoised_loss(y, memo, loss_fn, (tx, tx_prime, params), key=key)

    return score


@functools.cache
def _loss_guess_of(mechanism: Mechanism) -> Any:
    """The outcome of the loss's thresholds, one per mechanism (one compile)."""
    return functools.partial(_thresholded_guess, score=_loss_score(mechanism))


def _below_atoms(thresholds: np.ndarray, dtype: str) -> np.ndarray:
    """Each threshold cut a hair below itself, so that an atom of the loss sitting
    on it (Laplace's at +-epsilon) is not split by rounding (see
    :func:`_prepare_lr`)."""
    eps = np.finfo(dtype).eps
    return thresholds - math.sqrt(eps) * np.maximum(1.0, np.abs(thresholds))


def _unprepared(y: Array, aux: Any) -> Array:
    raise ValueError("this attack runs only as prepared by an audit (see bind).")


LIKELIHOOD_RATIO = Attack("lr", 0, _unprepared, prepare=_prepare_lr)


# --- the learned attack -----------------------------------------------------------

# The sample sizes per input that follow the counted sample's, ``draws``, unless set:
# training on draws / TRAIN_SHARE, selection on draws / SELECT_SHARE, each within
# [MIN_DRAWS, its cap]. Selection sees the events that the final sample can bound
# (an event needs a few counts in it). A scorer of many output coordinates whose
# evidence is weak in each needs its training sample (laplace-parallel at 1e7 draws:
# 0.009 trained on 1e5, 0.024 on 1e6); past 1e6 it gains little for the models here,
# and minibatches keep the cost of a step flat.
TRAIN_SHARE, SELECT_SHARE = 10, 10
MIN_DRAWS = 100_000
TRAIN_CAP = 1_000_000
SELECT_CAP = 1 << 24  # ~1.7e7, DP-Sniper's order; the scores of both inputs on the host
MAX_EVENTS = 3  # thresholds carried into the counted sample


def learned_sizes(
    draws: int, train_draws: int | None = None, select_draws: int | None = None
) -> tuple[int, int]:
    """The training and selection sample sizes per input for a counted sample of
    ``draws`` per input: the given ones, else ``draws / 10`` each, within
    ``[1e5, 1e6]`` and ``[1e5, 2^24]``."""

    def scaled(share: int, cap: int) -> int:
        return int(min(cap, max(MIN_DRAWS, draws // share)))

    return (
        scaled(TRAIN_SHARE, TRAIN_CAP) if train_draws is None else train_draws,
        scaled(SELECT_SHARE, SELECT_CAP) if select_draws is None else select_draws,
    )


class LearnedSettings(NamedTuple):
    train_draws: int | None = None  # None: from the counted sample's size
    select_draws: int | None = None
    model: str = "logistic"
    max_events: int = MAX_EVENTS
    features: str = "moments"


def _thresholded_guess(y, aux, *, score):
    """How many of the sorted thresholds ``score(y, scorer)`` reaches, ``aux =
    (scorer, thresholds)``."""
    scorer, thresholds = aux
    return jnp.searchsorted(thresholds, score(y, scorer), side="right").astype(
        jnp.int32
    )


# feature set -> model -> the guess of a thresholded scorer
_LEARNED_GUESSES = {
    features: {
        model: functools.partial(_thresholded_guess, score=score)
        for model, score in scores.items()
    }
    for features, scores in learning.SCORES_BY_FEATURES.items()
}


def _prepare_learned(
    settings: LearnedSettings, context: AttackContext
) -> tuple[Attack, Any]:
    """Trains on the first sample, selects on the second (see :mod:`mcdp.learning`);
    both come from ``context.key``, which the counted sample never uses."""

    key_init, key_train, key_select = (
        jax.random.fold_in(context.key, stage) for stage in range(3)
    )
    mech, pair, params, dtype = (
        context.mechanism, context.pair, context.params, context.dtype,
    )  # fmt: skip
    train_draws, select_draws = learned_sizes(
        context.draws, settings.train_draws, settings.select_draws
    )
    engine = context.engine
    outputs = draw(
        key_train, mech, pair, params, train_draws, dtype=dtype, engine=engine
    )
    with jax.enable_x64(dtype == "float64"):
        sample = learning.training_sample(
            outputs[0], outputs[1], distinct=_distinct(output_keys(outputs))
        )
        del outputs  # the sample holds them, in a copy as large, while it trains
        scorer = learning.fit(
            key_init, model=settings.model, feature_set=settings.features,
            sample=sample,
        )  # fmt: skip
    scores = draw(
        key_select, mech, pair, params, select_draws, dtype=dtype,
        transform=learning.SCORES_BY_FEATURES[settings.features][settings.model],
        aux=scorer, engine=engine,
    )  # fmt: skip
    selection = learning.select_thresholds(
        scores[0], scores[1], draws=max(context.draws, 1),
        confidence=context.confidence, max_events=settings.max_events,
        epsilon=context.epsilon, delta=context.delta,
    )  # fmt: skip
    thresholds = selection.thresholds
    features = settings.features
    model = (
        settings.model if features == "moments" else f"{settings.model} ({features})"
    )
    attack = _scored("learned", settings.model, features, thresholds, model)
    return attack, (scorer, thresholds)


def _scored(
    name: str,
    model: str,
    features: str,
    thresholds: np.ndarray,
    label: str,
    selection: tuple[tuple[str, float], ...] = (),
    memoised: Any = None,
) -> Attack:
    """The attack that counts how many of the sorted ``thresholds`` a scorer's
    score reaches; its events named ``"{label} score >= t"``. ``memoised``: the
    portfolio candidate's value (its score looked up, :func:`_memoised_score`), its
    aux ``((scorer, memo), thresholds)`` (:func:`_memoised_guess`); else the aux is
    ``(scorer, thresholds)``."""
    guess = (
        _memoised_guess(memoised)
        if memoised is not None
        else _LEARNED_GUESSES[features][model]
    )
    return Attack(
        name,
        len(thresholds) + 1,
        guess,
        events=tuple(f"{label} score >= {t:.6g}" for t in thresholds),
        selection=selection,
        by_block=model == "mlp",  # its product over a chunk: slower on a CPU
    )


def learned_attack(
    *,
    train_draws: int | None = None,
    select_draws: int | None = None,
    model: str = "logistic",
    max_events: int = MAX_EVENTS,
    features: str = "moments",
) -> Attack:
    """The learned attack with its own sample sizes and model (``ATTACKS["learned"]``
    has the defaults).

    Args:
      train_draws: draws per input of the training sample; by default 1/10 of the
        counted sample's, within [1e5, 1e6] (:func:`learned_sizes`).
      select_draws: draws per input of the selection sample; by default 1/10 of the
        counted sample's, within [1e5, 2^24].
      model: ``"logistic"`` (logistic regression on :func:`mcdp.learning.features`)
        or ``"mlp"`` (one hidden layer on the same features).
      max_events: thresholds of the score carried into the counted sample; each
        costs its share of the Bonferroni correction.
      features: what the scorer sees of each output: ``"moments"`` (default;
        :func:`mcdp.learning.features`), ``"bits"``, those and the float
        layout of every coordinate (:func:`mcdp.learning.bit_features`), or
        ``"ramps"``, the moments with each hinge cut at the next knot
        (:func:`mcdp.learning.ramp_features`).
    """
    settings = LearnedSettings(
        train_draws=_validate.draws_or_none("train_draws", train_draws),
        select_draws=_validate.draws_or_none("select_draws", select_draws),
        model=_validate.one_of("model", model, learning.MODELS),
        max_events=_validate.integer("max_events", max_events, low=1, high=64),
        features=_validate.one_of("features", features, learning.FEATURE_SETS),
    )
    return Attack(
        "learned", 0, _unprepared, prepare=functools.partial(_prepare_learned, settings)
    )


LEARNED = learned_attack()


# --- the support of float outputs -------------------------------------------------


def _float_support_guess(y, aux):
    """0: outside what x produced only (speaks for x'); 2: outside what x' produced
    only (speaks for x); 1: otherwise. An output is outside input j's observed
    support where some coordinate has more significant bits than every training
    output of j in the same coordinate and binade (sign and exponent). ``aux``: both
    inputs' tables side by side, one row per coordinate and binade
    (:func:`_float_support_aux`), read in one gather whose cells are in range by
    construction: the gather of two indices into each table, bounds-checked, took
    3-9x as long on a CPU (benchmarks/RESULTS.md, "The float-support lookup")."""
    y = jnp.reshape(y, (y.shape[0], -1))
    top, precision, _ = learning.float_bits(y)
    width = y.shape[1]
    cells = jnp.arange(width, dtype=jnp.int32)[None, :] * (aux.shape[0] // width)
    seen = aux.at[cells + top].get(mode="promise_in_bounds")  # (n, width, 2)
    outside = jnp.any(precision[..., None] > seen, axis=1)
    out_x, out_x_prime = outside[:, 0], outside[:, 1]
    only_x = out_x_prime & ~out_x
    only_x_prime = out_x & ~out_x_prime
    return jnp.where(only_x, 2, jnp.where(only_x_prime, 0, 1)).astype(jnp.int32)


# Values per piece of a float-support table's outputs: a piece's bits, layout and
# cell indices take about 30 bytes a float64 value on the device (some 130 MB),
# where a 400-bin histogram's 10^6 training outputs at once took about 10 GB.
FLOAT_SUPPORT_PIECE = 1 << 22


@functools.partial(jax.jit, donate_argnums=0)
def _float_support_max(table, y, rows):
    """``table`` (``(width, bins)``) raised to the significant bits of the first
    ``rows`` outputs of ``y`` (``(m, width)``), per coordinate and binade."""
    top, precision, _ = learning.float_bits(y)
    width, bins = table.shape
    cell = jnp.arange(width, dtype=jnp.int32)[None, :] * bins + top
    kept = jnp.arange(y.shape[0], dtype=jnp.int32)[:, None] < rows
    precision = jnp.where(kept, precision, -1)  # a padded row leaves the table
    return table.ravel().at[cell.ravel()].max(precision.ravel()).reshape(table.shape)


def float_support_table(
    outputs: np.ndarray, dtype: str, *, piece: int = FLOAT_SUPPORT_PIECE
) -> np.ndarray:
    r"""Per input, coordinate and binade, the most significant mantissa bits seen:
    int32 of shape ``(num_inputs, width, 2^{1 + exponent bits})``, -1 where a
    binade was never seen. ``outputs``: ``(num_inputs, n, width)``, taken in pieces
    of about ``piece`` values, each one scatter-max into the table on the device
    (every piece but a last short one of one shape: one compile)."""
    piece = _validate.integer("piece", piece, low=1)
    info = np.finfo(dtype)
    bins = 1 << (1 + info.nexp)
    num_inputs, n, width = outputs.shape
    rows = max(1, min(n, piece // max(width, 1)))
    table = np.full((num_inputs, width, bins), -1, dtype=np.int32)
    with jax.enable_x64(dtype == "float64"):
        for i in range(num_inputs):
            raised = jnp.asarray(table[i])
            for start in range(0, n, rows):
                block = np.asarray(outputs[i, start : start + rows], dtype=dtype)
                m = block.shape[0]
                if m < rows:  # the last piece, padded to the others' shape
                    block = np.concatenate([block, np.zeros((rows - m, width), dtype)])
                raised = _float_support_max(raised, jnp.asarray(block), m)
            table[i] = np.asarray(raised)
    return table


def _prepare_float_support(
    train_draws: int, context: AttackContext
) -> tuple[Attack, Any]:
    """Learns each input's float grid on a training sample from ``context.key``,
    which the counted sample never uses."""

    outputs = draw(
        jax.random.fold_in(context.key, 0), context.mechanism, context.pair,
        context.params, train_draws, dtype=context.dtype, engine=context.engine,
    )  # fmt: skip
    return FLOAT_SUPPORT_EVENTS, _float_support_aux(outputs, context.dtype)


def _float_support_aux(outputs: np.ndarray, dtype: str) -> np.ndarray:
    """Each input's float grid on training ``outputs`` (``(2, n, ...)``), as
    :func:`_float_support_guess` reads them: shape ``(width * bins, 2)``, the row
    of coordinate ``j`` and binade ``b`` at ``j * bins + b``."""
    flat = outputs.reshape(outputs.shape[0], outputs.shape[1], -1)
    table = float_support_table(flat, dtype)
    return np.ascontiguousarray(table.reshape(table.shape[0], -1).T)


FLOAT_SUPPORT_EVENTS = Attack(
    "float-support",
    3,
    _float_support_guess,
    events=(
        "inside the float grid x produced",
        "outside the float grid x' produced",
    ),
)


def float_support_attack(*, train_draws: int = MIN_DRAWS) -> Attack:
    r"""The support attack on floating-point outputs (``ATTACKS["float-support"]``
    has the default sample).

    A float sampler's outputs under one input can lie on a coarser grid than under
    the other: :math:`x' + \eta` rounds to a multiple of half an ulp of
    :math:`x'`, so with :math:`x' = 1` every output is a multiple of
    :math:`2^{-53}` (float64), while :math:`0 + \eta` has all the bits of
    :math:`\eta`; the event "finer than that grid" has probability 0 under
    :math:`x'` and about :math:`P[|\eta| < 1/2]` under :math:`x` (Mironov 2012,
    in the black-box form of Jin et al. 2022). On a training sample of
    ``train_draws`` per input, the attack records, per input, coordinate and
    binade (sign and exponent), the most significant bits seen
    (:func:`float_support_table`); an output is outside input j's observed grid
    where some coordinate has more (or lies in a binade j never reached). The
    counted sample then counts the three outcomes (outside x's only, neither or
    both, outside x''s only), and the bounds come from those counts alone: no
    probability is taken as 0. A mechanism that snaps its outputs to one grid for
    every input (OpenDP's) gives the same grids under both inputs.
    """
    train_draws = _validate.integer(
        "train_draws", train_draws, low=2, high=_validate.MAX_DRAWS
    )
    return Attack(
        "float-support",
        0,
        _unprepared,
        prepare=functools.partial(_prepare_float_support, train_draws),
    )


FLOAT_SUPPORT = float_support_attack()


# --- the structure of releases -----------------------------------------------------


def _structure_guess(y, aux):
    """0: a structure x never produced in training, x' did (speaks for x'); 2: the
    other way round; 1: otherwise. The structure is column 0 of an encoded release
    (:mod:`mcdp.core.releases`); ``aux`` holds each input's structures, sorted."""
    seen_x, seen_x_prime = aux
    sid = y[:, 0]

    def member(seen):
        i = jnp.clip(jnp.searchsorted(seen, sid), 0, seen.shape[0] - 1)
        return seen[i] == sid

    in_x, in_x_prime = member(seen_x), member(seen_x_prime)
    return jnp.where(in_x & ~in_x_prime, 2, jnp.where(in_x_prime & ~in_x, 0, 1)).astype(
        jnp.int32
    )


STRUCTURE_EVENTS = Attack(
    "structure",
    3,
    _structure_guess,
    events=(
        "a release structure x produced (or neither)",
        "a release structure only x produced",
    ),
)


def _released(mechanism: Mechanism) -> bool:
    """Whether the mechanism's outputs are encoded releases (a dataset audit)."""
    return isinstance(mechanism.host_sample, ReleaseCall)


def structure_table(outputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each input's structures seen in ``outputs`` (``(2, n, 1 + width)``), sorted;
    a NaN (never equal) stands for none."""
    seen = []
    for rows in outputs:
        values = np.unique(rows[:, 0])
        seen.append(values if values.size else np.array([np.nan]))
    return seen[0], seen[1]


def _prepare_structure(train_draws: int, context: AttackContext) -> tuple[Attack, Any]:
    """Learns each input's release structures on a training sample from
    ``context.key``, which the counted sample never uses."""
    if not _released(context.mechanism):
        raise ValueError(
            "attack 'structure' reads the structure of releases: it applies to "
            "dataset audits (a black box on mcdp.Datasets)."
        )
    outputs = draw(
        jax.random.fold_in(context.key, 0), context.mechanism, context.pair,
        context.params, train_draws, dtype=context.dtype, engine=context.engine,
    )  # fmt: skip
    return STRUCTURE_EVENTS, structure_table(outputs)


STRUCTURE = Attack(
    "structure",
    0,
    _unprepared,
    prepare=functools.partial(_prepare_structure, MIN_DRAWS),
)


# --- the histogram of discrete outputs ----------------------------------------------

# Outputs whose training sample takes at most this many distinct values (rows) get
# the plug-in likelihood ratio: each value's log ratio of its training frequencies.
HISTOGRAM_VALUES = 4096
# How a scorer of few distinct values (at most HISTOGRAM_VALUES on the selection
# draws: the histogram, and any scorer of a discrete output) has its thresholds
# chosen: ranked by the bounds at the selection rates themselves, and events whose
# tail masses are within 1.5x of one taken skipped; each a hair below its atom
# (_below_atoms), as the exact loss's are. Its events are unions of few
# values, few enough that the winner's curse of rare thresholds, which the
# pessimistic ends guard the continuous scores against, costs less than the ends'
# bias towards large events; and the best events of a discrete output are often
# the one or two values of the most extreme ratio, within a factor 2 of each
# other. On the exact output probabilities of svt1, svt2 and svt4 (N = 1e7, the
# histogram's table and selection drawn 30 times from their multinomials:
# benchmarks/sim_discrete_choice.py), the mean bound of the chosen events rose from
# 0.974-0.978x the ceiling to 0.991-0.994x, and from 0.886x to 0.946x on svt6's
# 1,024 values.
DISCRETE_CHOICE = dict(estimate=True, near=1.5)
_KEY_LIMIT = 2**31 - 1  # the keys are int32 on every backend
# Where an output's coordinates times their training values are at most this many,
# the compiled lookups find an output's key by comparing each coordinate with every
# training value, all at once, in one sum (:func:`_compared_keys`), not by a binary
# search per coordinate: on a CPU, one column at a time, svt6's keys cost more than
# its exact loss in the counting loop (benchmarks/RESULTS.md). The host's keys of
# the training draws search.
COMPARISONS = 256


class HistogramTable(NamedTuple):
    """The training sample's distinct values of each output coordinate, bit
    pattern by bit pattern (``values[j, :lengths[j]]``, in :func:`bit_order`'s
    order: -0.0 and 0.0 apart, -0.0 first; padded with +inf), and the keys of its
    distinct outputs (sorted, padded to :data:`HISTOGRAM_VALUES` with a key that no
    output has) with each one's log ratio ``scores``."""

    values: np.ndarray  # (d, V) float
    lengths: np.ndarray  # (d,) int32
    strides: np.ndarray  # (d,) int32: key = sum_j index_j * strides[j]
    keys: np.ndarray  # (HISTOGRAM_VALUES,) int32, sorted
    scores: np.ndarray  # (HISTOGRAM_VALUES,) float: ln P[y | x] - ln P[y | x'],
    # add-1/2 smoothed (0 at the padding)


def _coordinate_indices(xp, flat, values, lengths):
    """Per coordinate, the index of the output's value among the training values,
    ``lengths[j]`` for one never seen, shape ``flat.shape`` (both as
    :func:`bit_order` gives them): comparisons only, exact on every backend. A
    binary search per coordinate."""
    found = []
    for j in range(flat.shape[1]):
        column = flat[:, j]
        at = xp.searchsorted(values[j], column, side="left")
        at = xp.minimum(at, values.shape[1] - 1)
        seen = values[j][at] == column
        found.append(xp.where(seen & (at < lengths[j]), at, lengths[j]))
    return xp.stack(found, axis=-1)


def _compared_keys(xp, flat, values, lengths, strides, *, zeros=True):
    """The keys of :func:`_coordinate_indices`' indices, in one sum over every
    coordinate's comparisons with every training value: ``sum_j lengths[j] *
    strides[j]``, plus ``(v - lengths[j]) * strides[j]`` where coordinate ``j``
    equals its ``v``-th value (at most one does: the values below ``lengths[j]``
    are distinct, the padding is left out). One reduction reads the outputs once:
    on a CPU, XLA computes the sampler's outputs again inside each fused reduction
    that reads them (an index and a "seen" reduced apart drew ``svt6``'s counted
    outputs three times with the default stream).

    ``flat`` and ``values`` are floats, compared by their bits: as floats, but a
    zero output, which equals both zeros of its coordinate, has the weight of the
    zero of the other sign taken off (0 where there is none). That costs an
    operation per coordinate rather than per value: on a CPU the keys of 4 x 10^6
    outputs of 10 coordinates, 4 values each, took 1.17x the time of the floats'
    comparisons alone (twice), where comparing :func:`bit_order`'s integers took
    1.31-1.32x and their raw bit patterns 1.67x; with a tenth of the outputs
    -0.0 (5 values), 1.09x, 1.22x and 1.04x (``benchmarks/bench_keys.py``).
    ``zeros=False``: the comparisons alone (of integers, or of floats where -0.0
    == 0.0)."""
    position = xp.arange(values.shape[1], dtype=xp.int32)
    valid = position[None, :] < lengths[:, None]
    weights = xp.where(
        valid, strides[:, None] * (position[None, :] - lengths[:, None]), 0
    )
    matched = (flat[:, :, None] == values[None, :, :]) & valid[None, :, :]
    base = xp.sum(strides * lengths, dtype=xp.int32)
    keys = base + xp.sum(
        xp.where(matched, weights[None, :, :], 0), axis=(1, 2), dtype=xp.int32
    )
    if not zeros:
        return keys
    zero, negative = valid & (values == 0), xp.signbit(values)
    positive_zero = xp.sum(
        xp.where(zero & ~negative, weights, 0), axis=1, dtype=xp.int32
    )
    negative_zero = xp.sum(
        xp.where(zero & negative, weights, 0), axis=1, dtype=xp.int32
    )
    other = xp.where(
        flat == 0, xp.where(xp.signbit(flat), positive_zero, negative_zero), 0
    )
    return keys - xp.sum(other, axis=1, dtype=xp.int32)


def _histogram_keys(xp, y, values, lengths, strides):
    """The keys of outputs ``y`` by their coordinates' ``values`` (a
    :class:`HistogramTable`'s, :class:`ValueMemo`'s or :class:`OutputKeys`'):
    ``sum_j index_j * strides[j]``, each output's value compared with them by its
    bits, both in the outputs' dtype (the training values are those of outputs in
    it): so -0.0 is not 0.0. A binary search compares :func:`bit_order`'s
    integers."""
    flat = y.reshape(y.shape[0], -1)
    if not xp.issubdtype(flat.dtype, xp.floating):
        flat = flat.astype(values.dtype)  # as a float comparison would promote it
    values = values.astype(flat.dtype)
    if xp is jnp and values.size <= COMPARISONS:
        return _compared_keys(xp, flat, values, lengths, strides)
    ordered = bit_order(xp, flat), bit_order(xp, values)
    indices = _coordinate_indices(xp, *ordered, lengths)
    return xp.sum(indices.astype(xp.int32) * strides[None, :], axis=-1, dtype=xp.int32)


class OutputKeys(NamedTuple):
    """The training sample's distinct values of each output coordinate, bit
    pattern by bit pattern (``values[j, :lengths[j]]``, in :func:`bit_order`'s
    order, padded with +inf), its outputs' distinct keys, and where each first
    occurs and which one every output has (:func:`output_keys`)."""

    values: np.ndarray  # (d, V) float
    lengths: np.ndarray  # (d,) int32
    strides: np.ndarray  # (d,) int32: key = sum_j index_j * strides[j]
    distinct: np.ndarray  # (K,) int32, sorted
    first: np.ndarray  # (K,): the first of the 2n outputs (both inputs') with each
    inverse: np.ndarray  # (2n,): the index in distinct of each output's key


# A column whose probe takes at most this many values is searched among them by
# comparing it with each (_compared_indices), where a binary search per output took
# longer: on 2 x 10^6 outputs in 10 coordinates of 3 values each, 0.11-0.13 s
# against 0.27-0.30 s for all 10 (benchmarks/RESULTS.md, "The outputs keyed once in
# the selection draws").
COMPARED_COLUMN_VALUES = 8


def _compared_indices(
    column: np.ndarray, probed: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``np.searchsorted(probed, column, side="left")`` where ``column``'s value is
    one of ``probed`` (sorted, no NaN), and whether it is: one comparison with each
    value (``column`` contiguous, both as :func:`bit_order` gives them)."""
    at = np.zeros(column.shape, np.intp)
    found = np.zeros(column.shape, bool)
    for value in probed:
        at += column > value
        found |= column == value
    return at, found


def _column_values(column: np.ndarray, probed: np.ndarray) -> tuple[np.ndarray, Any]:
    """The distinct bit patterns of float ``column`` but NaN's, as
    :func:`bit_order` gives them, sorted, given ``probed``, those of its first
    rows; and each one's index among them (:func:`_coordinate_indices`', where an
    output is never NaN and found) where they are the probe's, else None. The
    column is read once, into a contiguous copy of its bits (the outputs' columns
    are strided). One binary search among the probe's few values per output (one
    comparison with each, where they are at most :data:`COMPARED_COLUMN_VALUES`),
    where a sort of the whole column took longer (:func:`output_keys` of
    ``svt2``'s 2 x 10^6 training outputs: 0.27 s against 1.2 s;
    benchmarks/RESULTS.md, "The scorers trained on distinct outputs")."""
    dtype = column.dtype
    column = bit_order(np, np.ascontiguousarray(column))

    def numbers(bits):
        return bits[~np.isnan(bit_floats(bits, dtype))]

    if probed.size == 0:  # the probe's rows all NaN
        return np.unique(numbers(column)), None
    if probed.size <= COMPARED_COLUMN_VALUES:
        at, found = _compared_indices(column, probed)
    else:
        at = np.searchsorted(probed, column, side="left")
        found = probed[np.minimum(at, probed.size - 1)] == column
    if found.all():
        return probed, at
    rest = numbers(column[~found])
    if rest.size == 0:
        return probed, None  # NaN: not a value, and its index is the key's "not seen"
    return np.union1d(probed, rest), None


# Keys below this many (and below the number of outputs) are told apart by counting
# them, not by sorting them (distinct_keys).
COUNTED_KEYS = 1 << 22


def distinct_keys(
    keys: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(keys, return_index=True, return_inverse=True)`` for integer
    ``keys`` in ``[0, size)``: the distinct keys, sorted, where each first occurs,
    and each key's index among them. Where ``size`` is at most
    :data:`COUNTED_KEYS` and the number of keys, by counting them (a pass over the
    keys per result, and three over ``size`` entries), where NumPy sorts them: on
    2 x 10^6 keys of 17, 1025 and 12291 possible values, 0.010-0.012 s against
    0.062-0.144 s (benchmarks/RESULTS.md, "The outputs' keys counted")."""
    if size > min(COUNTED_KEYS, keys.size):
        return np.unique(keys, return_index=True, return_inverse=True)
    seen = np.bincount(keys, minlength=size) > 0
    distinct = np.flatnonzero(seen).astype(keys.dtype)
    inverse = (np.cumsum(seen) - 1)[keys]
    first = np.full(size, keys.size, np.intp)
    np.minimum.at(first, keys, np.arange(keys.size))
    return distinct, first[distinct], inverse


def output_keys(outputs: np.ndarray) -> OutputKeys | None:
    """An int32 key per output of discrete ``outputs`` (``(2, n, ...)``, the
    training sample of both inputs), by the bit patterns of its coordinates
    (:func:`bit_order`: -0.0 is not 0.0), or None where they take more than
    :data:`HISTOGRAM_VALUES` values in a coordinate."""
    n = outputs.shape[1]
    flat = outputs.reshape(2 * n, -1)
    if flat.shape[1] == 0:
        return None
    if flat.dtype.kind != "f":
        flat = flat.astype(np.float64)  # the values are floats, and keyed by bits
    probe = flat[:DISCRETE_PROBE]
    probed = [np.unique(c) for c in probe.T]  # NaN once, -0.0 with 0.0
    if any(c.size > HISTOGRAM_VALUES for c in probed):
        return None  # continuous: settled on a probe, cheaply
    probed = [np.unique(bit_order(np, c[~np.isnan(c)])) for c in probe.T]
    if math.prod(c.size + 1 for c in probed) > _KEY_LIMIT:
        return None  # too many keys already (rappor's bits)
    columns, indices = [], []
    for c, seen in zip(flat.T, probed, strict=True):
        distinct, at = _column_values(c, seen)
        if distinct.size > HISTOGRAM_VALUES:
            return None
        columns.append(distinct)
        indices.append(at)
    lengths = np.array([c.size for c in columns], dtype=np.int64)
    if math.prod(c.size + 1 for c in columns) > _KEY_LIMIT:
        return None  # in Python's integers: int64's product of 40 3s wraps below 0
    radices = np.cumprod(np.concatenate([[1], lengths + 1]))
    # padded to a power of two, so that few shapes reach the compiled programs
    width = 1 << max(0, int(lengths.max()) - 1).bit_length()
    ordered = np.full(
        (len(columns), width), bit_order(np, np.array(np.inf, flat.dtype))
    )
    for j, c in enumerate(columns):
        ordered[j, : c.size] = c
    lengths32, strides = lengths.astype(np.int32), radices[:-1].astype(np.int32)
    # the keys of _histogram_keys, added column by column; a column whose values
    # are the probe's has its indices already
    keys = np.zeros(2 * n, dtype=np.int32)
    for j, at in enumerate(indices):
        if at is None:
            column = bit_order(np, np.ascontiguousarray(flat[:, j : j + 1]))
            at = _coordinate_indices(np, column, ordered[j : j + 1],
                                     lengths32[j : j + 1])[:, 0]  # fmt: skip
        keys += at.astype(np.int32) * strides[j]
    distinct, first, inverse = distinct_keys(keys, int(radices[-1]))
    values = bit_floats(ordered, flat.dtype)
    return OutputKeys(values, lengths32, strides, distinct, first, inverse)


def _distinct(keyed: OutputKeys | None) -> tuple[np.ndarray, np.ndarray] | None:
    """What :func:`mcdp.learning.training_sample` needs to train a scorer on the
    distinct outputs of ``keyed`` (their first occurrences and each output's
    index among them), where they are at most :data:`HISTOGRAM_VALUES`: a step
    then costs their features, not those of a minibatch of 65,536 outputs, and
    the counts are the same (benchmarks/RESULTS.md, "The scorers trained on
    distinct outputs")."""
    if keyed is None or keyed.distinct.size > HISTOGRAM_VALUES:
        return None
    return keyed.first, keyed.inverse


def histogram_table(
    outputs: np.ndarray, keyed: OutputKeys | None = None
) -> HistogramTable | None:
    """The plug-in likelihood ratio of discrete ``outputs`` (``(2, n, ...)``, the
    training sample of both inputs), or None where they take more than
    :data:`HISTOGRAM_VALUES` values in a coordinate or as rows. ``keyed``: their
    :func:`output_keys`, where already computed."""
    n = outputs.shape[1]
    keyed = output_keys(outputs) if keyed is None else keyed
    if keyed is None:
        return None
    distinct, inverse = keyed.distinct, keyed.inverse
    if distinct.size > HISTOGRAM_VALUES:
        return None
    first = np.bincount(inverse[:n], minlength=distinct.size)
    second = np.bincount(inverse[n:], minlength=distinct.size)
    scores = np.log((first + 0.5) / (n + 0.5)) - np.log((second + 0.5) / (n + 0.5))
    return HistogramTable(
        keyed.values, keyed.lengths, keyed.strides, *_padded(distinct, scores)
    )


def _padded(keys: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted ``keys`` and their ``scores`` padded to :data:`HISTOGRAM_VALUES`
    entries with a key that no output has (and a score of 0), so that every table
    has one shape and the programs that take it compile once."""
    pad = HISTOGRAM_VALUES - keys.size
    return (
        np.concatenate([keys, np.full(pad, _KEY_LIMIT)]).astype(np.int32),
        np.concatenate([scores, np.zeros(pad, scores.dtype)]),
    )


def histogram_score(y: Array, table: HistogramTable, key: Array | None = None) -> Array:
    """Each output's log ratio in ``table``; 0 (no evidence) for one not seen.
    ``key``: the outputs' keys by ``table``'s values, where computed already."""
    if key is None:
        key = _histogram_keys(jnp, y, table.values, table.lengths, table.strides)
    at = jnp.minimum(jnp.searchsorted(table.keys, key), table.keys.shape[0] - 1)
    hit = table.keys[at] == key
    return jnp.where(hit, table.scores[at], 0.0).astype(jnp.result_type(float))


# Whether the portfolio looks up an expensive exact loss (a mechanism's
# loss_by_block) at the distinct outputs of discrete training draws, computed once
# (ValueMemo), rather than computing it at every output; benchmarks switch it off to
# compare (benchmarks/bench_loss_memo.py).
LOSS_MEMO = True
# Whether the portfolio's scorers that share the training sample are looked up so
# too, in the selection draws and, where one wins, in the counting loop: at 1e8 on
# a CPU the selection draws of svt1, svt6 and svt2 took 4.3-6.0 s against 9.5-12.6
# s (benchmarks/RESULTS.md, "The scorers looked up").
SCORE_MEMO = True
# Whether the selection draws key the outputs once for every candidate looked up by
# key (_shared_keys), rather than each candidate keying them itself: the same
# values; benchmarks switch it off to compare (benchmarks/bench_loss_memo.py --keys).
SHARED_KEYS = True


class ValueMemo(NamedTuple):
    """A candidate's values (the exact loss, a scorer's score) at each distinct
    output of the training sample: the outputs' keys as :class:`HistogramTable`
    makes them, and a table of the value at every key (NaN at a key that no
    training output has)."""

    values: np.ndarray  # (d, V) float
    lengths: np.ndarray  # (d,) int32
    strides: np.ndarray  # (d,) int32
    table: np.ndarray  # (S,) float, S a power of two above every key


# The largest table of a ValueMemo (entries): one lookup per output, where a search
# in the sorted keys gathered a dozen times on a CPU.
MEMO_ENTRIES = 1 << 22


class MemoRows(NamedTuple):
    """The distinct outputs of discrete training draws, padded to
    :data:`HISTOGRAM_VALUES` rows with the first, and their keys: what every
    :class:`ValueMemo` of those draws is computed from."""

    rows: np.ndarray  # (HISTOGRAM_VALUES, ...) outputs
    keyed: OutputKeys
    top: int  # one past the largest key


def memo_rows(outputs: np.ndarray, keyed: OutputKeys | None) -> MemoRows | None:
    """The :class:`MemoRows` of ``outputs`` (``(2, n, ...)``, keyed by ``keyed``,
    their :func:`output_keys`), or None where they are not discrete (``keyed``
    None), take more than :data:`HISTOGRAM_VALUES` values, or have keys past
    :data:`MEMO_ENTRIES`. Padded to one number of rows, so that few compiled
    programs serve every audit."""
    if keyed is None:
        return None
    top = int(np.sum(keyed.lengths.astype(np.int64) * keyed.strides)) + 1
    if top > MEMO_ENTRIES or keyed.distinct.size > HISTOGRAM_VALUES:
        return None
    rows = outputs.reshape((-1,) + outputs.shape[2:])[keyed.first]
    pad = (HISTOGRAM_VALUES - rows.shape[0],) + rows.shape[1:]
    return MemoRows(np.concatenate([rows, np.broadcast_to(rows[:1], pad)]), keyed, top)


def value_memo(fn: Any, aux: Any, rows: MemoRows, dtype: str) -> ValueMemo:
    """``fn(y, aux)`` (jitted) at each distinct output of ``rows``, tabulated on a
    power of two of keys."""
    with jax.enable_x64(dtype == "float64"):
        values = np.asarray(_jitted(fn)(jnp.asarray(rows.rows, dtype), aux))
    keyed = rows.keyed
    table = np.full(1 << (rows.top - 1).bit_length(), np.nan, values.dtype)
    table[keyed.distinct] = values[: keyed.distinct.size]
    return ValueMemo(keyed.values, keyed.lengths, keyed.strides, table)


def loss_memo(
    mechanism: Mechanism,
    aux: tuple,
    outputs: np.ndarray,
    keyed: OutputKeys | None,
    dtype: str,
) -> ValueMemo | None:
    """The exact loss of ``mechanism`` (``aux = (tx, tx_prime, params)``) at each
    distinct output of ``outputs`` (``(2, n, ...)``, keyed by ``keyed``, their
    :func:`output_keys`), or None where :func:`memo_rows` has none."""
    rows = memo_rows(outputs, keyed)
    if rows is None:
        return None
    return value_memo(_loss_score(mechanism), (*aux, None), rows, dtype)


@functools.cache
def _jitted(fn: Any) -> Any:
    return jax.jit(fn)


def memoised_values(
    y: Array, memo: ValueMemo, fn: Any, key: Array | None = None
) -> Array:
    """``fn(y)`` (a value per output) looked up in ``memo``, by the outputs' keys
    (``key``, where computed already by ``memo``'s values); where one is not
    there, ``fn(y)`` is computed, and gives those. A loop of at most one pass
    rather than a ``cond``: a block of outputs all in the memo skips ``fn``, one
    block at a time (``lax.map``) or batched (``vmap``: the pass runs where any
    block of the batch needs it; JAX 0.10 turns a batched ``cond`` into a select
    whose operands fail ``shard_map``'s check of varying axes). The pass reads the
    outputs through its own number: a value of the outputs alone is loop-invariant,
    and XLA's CPU code computed it before the loop, at every batch (``svt1``'s loss
    memo on 64 blocks: 0.25 s, against 0.004 s for its lookups;
    benchmarks/RESULTS.md, "The exact loss looked up, batched")."""
    if key is None:
        key = _histogram_keys(jnp, y, memo.values, memo.lengths, memo.strides)
    known = memo.table[key]
    hit = ~jnp.isnan(known)

    def computed(state):
        pending, values, turn = state
        # y itself on the one pass: read through the pass's number, the value is
        # not loop-invariant, which XLA would compute before the loop, every time
        mine = jnp.where(turn == 0, y, jnp.zeros_like(y))
        values = jnp.where(hit, values, fn(mine).astype(values.dtype))
        return pending & False, values, turn + 1

    start = (~jnp.all(hit), known, jnp.zeros((), jnp.int32))
    return jax.lax.while_loop(lambda state: state[0], computed, start)[1]


def memoised_loss(
    y: Array, memo: ValueMemo, loss_fn, args: tuple, key: Array | None = None
) -> Array:
    """The loss of each output of ``y`` looked up in ``memo``, computed as
    ``loss_fn(y, *args)`` where one is not there (:func:`memoised_values`)."""
    return memoised_values(y, memo, lambda z: loss_fn(z, *args), key)


@functools.cache
def _memoised_score(score: Any) -> Any:
    """``value(y, (scorer, memo), key=None)``: ``score(y, scorer)``, looked up in
    ``memo`` (a :class:`ValueMemo`) where it is not None, by ``key`` where given
    (:func:`memoised_values`; cached per score: one compile)."""

    def value(y, aux, key=None):
        scorer, memo = aux
        if memo is None:
            return score(y, scorer)
        return memoised_values(y, memo, lambda z: score(z, scorer), key)

    return value


@functools.cache
def _memoised_guess(value: Any) -> Any:
    """The guess of a thresholded scorer whose score is ``value`` (a
    :func:`_memoised_score`), ``aux = ((scorer, memo), thresholds)``: the
    portfolio's scorers, as counted."""
    return functools.partial(_thresholded_guess, score=value)


def _histogram_guess(y: Array, aux: Any) -> Array:
    table, thresholds = aux
    score = histogram_score(y, table)
    return jnp.searchsorted(thresholds, score, side="right").astype(jnp.int32)


# --- the portfolio ----------------------------------------------------------------

# Outputs that take at most this many values on the training sample (the first rows
# of it) are discrete: the majority vote joins the portfolio.
DISCRETE_VALUES = 16
DISCRETE_PROBE = 10_000

# The learned candidates: label -> (model, features).
_SCORERS = {
    "learned": ("logistic", "moments"),
    "learned-mlp": ("mlp", "moments"),
    "learned-bits": ("logistic", "bits"),
    "learned-inputs": ("logistic", "ramps"),  # hinges at the inputs' values only
}
# The default candidates, in the order that breaks ties (the cheaper, fixed events
# first).
AUTO_CANDIDATES = (
    "lr", "structure", "majority", "support", "float-support", "learned",
    "learned-mlp", "learned-bits", "histogram",
)  # fmt: skip
# Every candidate that the portfolio accepts: the defaults and, after them, the
# scorer whose hinges sit at the inputs' values (it assumes most of the scorers).
CANDIDATES = (*AUTO_CANDIDATES, "learned-inputs")


# How many standard deviations of the best promise a later candidate must promise
# beyond an earlier one to displace it (the one-standard-error rule of model
# selection). On the selection draws a promise is uncertain by several times the
# counted sample's spread (the judged half is a twentieth of the counted draws at
# N = 1e7), and candidates within that luck of each other were chosen by it: the
# MLP and the histogram over the logistic scorer on svt6 and numerical-svt at 1e7,
# the bit-pattern scorer over it on report-noisy-max4 at 1e6, each counting less
# than the logistic scorer would have (benchmarks/RESULTS.md). The order of
# AUTO_CANDIDATES is the prior that breaks such near-ties: the exact loss first,
# the fixed events next, then the scorers from the most constrained.
CHOICE_MARGIN = 1.0


# The screening: from SCREEN_FROM selection draws per input (a counted sample of
# about 8.4e7 draws per input and more), every candidate is judged first on the
# selection sample's first 1/SCREEN_SHARE (in whole calls of the engine's draw),
# and only those that could still be chosen are scored on the rest: a candidate is
# left where its promise with each judged rate at the optimistic end of its
# interval is below the best promise with every rate at its pessimistic end, the
# intervals at SCREEN_CONFIDENCE (:func:`_kept`), and so is a scorer whose judged
# counts are those of an earlier one kept (:func:`_untwinned`). The sample is the
# same, so a candidate kept is judged, and its thresholds chosen, on the very values
# it had without the screening; where the one kept is an outcome attack, which chooses
# nothing on the selection draws, or where the choice on the screening's draws is
# the exact loss or an outcome attack (:func:`_settled`), the rest is not drawn at
# all. At 1e8 draws the float cases' selection draws took 0.14-0.71 of their
# time, and every suite case kept its choice and bound (benchmarks/RESULTS.md,
# "The candidates screened").
# Below SCREEN_FROM the selection sample is judged whole: on a smaller sample,
# rare events that a scorer finds on the whole one are not yet seen in an eighth
# of it (svt6's scorers promised nothing on 1e5 selection draws per input, and
# within the noise of the best on 1e6: the suite's records at 1e6 and 1e7).
SCREEN_FROM = 1 << 23
SCREEN_SHARE = 8
SCREEN_CONFIDENCE = 1 - 1e-4
# The scorers that the screening judges are trained on SCREEN_STEPS of their
# learning.STEPS (a whole training of that length, its step size decaying to 0 over
# them) on as large a share of the training sample's minibatches, so as many epochs
# (learning.sample_head), and those that it keeps are trained again on every step
# of the whole sample, from the same key: the scorers of the portfolio without a
# screening. A scorer that it leaves costs about a quarter of its training, its
# features included: where float-support wins by far, the scorers' training was
# most of the preparation, and a fresh process's audit of laplace-parallel at 1e8
# took 37-39 s, where it took 48-49 s. Where a scorer is kept, its short training
# is spent for nothing and its screening's values are drawn again with it: rappor's
# took 43-45 s, where 43 s (benchmarks/RESULTS.md, "The scorers screened on a
# quarter of their training"). So the scorers are trained short only where
# float-support, the candidate that left them behind on every suite case where
# they were left, has something to count: where the two inputs' float grids on the
# training outputs differ (on 10^6 training outputs per input, report-noisy-max4's,
# rappor's and one-time-rappor's are the same, and their scorers are kept); or
# where the exact loss is a candidate, on which the screening most likely settles
# (_settled), so that the scorers are never trained again (rappor's and
# one-time-rappor's). Scorers of few distinct outputs, which train in a tenth of a
# second or so, are trained once, on every step, too.
SCREEN_STEPS = learning.STEPS // 4


class AutoSettings(NamedTuple):
    train_draws: int | None = None  # None: from the counted sample's size
    select_draws: int | None = None
    max_events: int = MAX_EVENTS
    candidates: tuple[str, ...] = AUTO_CANDIDATES
    margin: float = CHOICE_MARGIN
    screen_from: int | None = None  # None: SCREEN_FROM, read when it prepares
    screen_steps: int | None = None  # None: SCREEN_STEPS, read when it prepares


class _Candidate(NamedTuple):
    """A prepared candidate: ``value(y, aux)`` is its outcome (an outcome attack) or
    its score (a scorer, whose events are thresholds chosen on the selection
    draws)."""

    label: str
    value: Any
    aux: Any
    attack: Attack | None  # the outcome attack as it is counted; None: a scorer
    model: str = ""
    features: str = ""
    # where its values are looked up by the outputs' keys: the arrays that key them
    # (values, lengths, strides), and ``value(y, aux, key=...)`` takes those keys
    keys: tuple | None = None
    # a scorer trained on the screening's steps alone (SCREEN_STEPS): ``full()`` is
    # the same scorer trained on every step, as the portfolio without a screening
    # would have it; None for one trained so already
    full: Callable[[], _Candidate] | None = None


def _keys_of(table: Any) -> tuple | None:
    """The arrays that key the outputs for ``table`` (a :class:`ValueMemo` or
    :class:`HistogramTable`; ``None`` for none)."""
    return None if table is None else (table.values, table.lengths, table.strides)


def _shared_keys(candidates: Sequence[_Candidate]) -> tuple | None:
    """The arrays that key the outputs for every candidate looked up by key, where
    there is one, they all key alike (all made from the training draws'
    :func:`output_keys`) and the outputs have more than one coordinate: the
    selection draws then compute the keys once, where each such candidate computed
    them again. At 10^8 draws on a CPU, the selection draws of svt1, svt6 and svt2
    (10 coordinates) took 0.83-0.99x as long so, in two runs; those of
    truncated-geometric and report-noisy-max1 (one coordinate, whose key is one
    search) 1.09-1.21x, and there each candidate keys them itself
    (benchmarks/bench_selection_keys.py; 2 to 9 coordinates are not measured and
    share them)."""
    tables = [c.keys for c in candidates if c.keys is not None]
    if not tables:
        return None
    first = tables[0]
    values, _, _ = first  # (coordinates, values of each)
    if values.shape[0] < 2:
        return None
    same = all(
        all(
            np.array_equal(bit_order(np, np.asarray(a)), bit_order(np, np.asarray(b)))
            for a, b in zip(t, first, strict=True)
        )  # by bits: values of -0.0 and 0.0 key apart
        for t in tables[1:]
    )
    return first if same else None


def _portfolio_values(y, aux, *, fns, keyed, dtypes=None):
    """Each candidate's values of ``y``, one array each: on the host each is then
    contiguous, where a last axis over the candidates would leave every candidate's
    values a strided column, several times slower to sort, count and compare.
    ``aux`` is ``(keys, auxes)``: the arrays that key the outputs for the
    candidates that ``keyed`` marks (:func:`_shared_keys`; computed once here),
    and each candidate's own aux. Each array is of the candidate's dtype in
    ``dtypes`` (:func:`_values_dtype`), where one is given, else of floats."""
    keys, auxes = aux
    key = None if keys is None else _histogram_keys(jnp, y, *keys)
    floats = jnp.result_type(float)
    dtypes = (None,) * len(fns) if dtypes is None else dtypes
    return tuple(
        (fn(y, a, key=key) if by_key else fn(y, a)).astype(dtype or floats)
        for fn, a, by_key, dtype in zip(fns, auxes, keyed, dtypes, strict=True)
    )


@functools.cache
def _values_transform(fns: tuple, keyed: tuple, dtypes: tuple | None = None) -> Any:
    """The selection draws' transform for these candidates (cached: one compile)."""
    return functools.partial(_portfolio_values, fns=fns, keyed=keyed, dtypes=dtypes)


# Whether an outcome attack's values on the selection draws are held in the
# narrowest unsigned integer that holds its outcomes (one byte for up to 256),
# rather than in floats: the same outcomes, so the same counts, in an eighth of the
# host memory, which a CPU writes to fresh pages, each a page fault on first touch.
NARROW_OUTCOMES = True


def _values_dtype(candidate: _Candidate) -> str | None:
    """The dtype of ``candidate``'s values on the selection draws: for an outcome
    attack, the narrowest unsigned integer that holds its outcomes
    (:data:`NARROW_OUTCOMES`); ``None`` (floats) for a scorer."""
    if not NARROW_OUTCOMES or candidate.attack is None:
        return None
    return np.min_scalar_type(max(candidate.attack.num_outcomes - 1, 0)).name


def _discrete(outputs: np.ndarray) -> bool:
    probe = outputs[:, :DISCRETE_PROBE]
    return np.unique(probe[~np.isnan(probe)]).size <= DISCRETE_VALUES


def inputs_knots(transformed: np.ndarray, outputs: np.ndarray) -> np.ndarray | None:
    """The knots of ``learned-inputs`` (:func:`mcdp.learning.input_knots` of the
    transformed pair), or ``None`` where it does not apply: too many input values,
    or training ``outputs`` that are discrete."""
    knots = learning.input_knots(transformed)
    return None if knots is None or _discrete(outputs) else knots


class _Stopwatch:
    """Seconds of a preparation by stage, in order, for the records."""

    def __init__(self) -> None:
        self.stages: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, stage: str, *pending: Any) -> None:
        """The time since the last lap (once ``pending`` arrays are computed) goes
        to ``stage``."""
        jax.block_until_ready(pending)
        now = time.perf_counter()
        self.stages[stage] = self.stages.get(stage, 0.0) + now - self._last
        self._last = now


def _prepared_candidates(
    settings: AutoSettings,
    context: AttackContext,
    key: PRNGKey,
    train_draws: int,
    watch: _Stopwatch,
    steps: int | None = None,
) -> list[_Candidate]:
    """Every candidate of ``settings`` that applies, in the portfolio's order,
    prepared on ``train_draws`` training outputs per input drawn from ``key`` or on
    the context alone; ``watch`` laps after the draws and after each candidate.
    Where ``steps`` is given (the screening's, :data:`SCREEN_STEPS`), the two
    inputs' float grids differ (:func:`_grids_differ`) or the exact loss is
    among the candidates, and the outputs are not few distinct ones, the scorers
    that share the training sample train on that many steps of its first
    minibatches (as many epochs as on every step of the whole sample,
    :func:`mcdp.learning.sample_head`), and each holds, in
    ``full``, its training on every step of the whole sample: the sample stays
    held until those are dropped.

    The scorers that share one training sample are prepared last, and the outputs
    are dropped once that sample holds them: the sample is a copy of them, as large
    (2 x 1e6 outputs of a 400-bin histogram: 6.4 GB each in float64), and the
    scorers' features come on top of it while they train. Every other candidate is
    prepared first, on the outputs themselves. Each candidate is what it would be
    in any order: its key is that of its place in the portfolio."""
    mech, pair, params, dtype = (
        context.mechanism, context.pair, context.params, context.dtype,
    )  # fmt: skip
    outputs = draw(
        key, mech, pair, params, train_draws, dtype=dtype, engine=context.engine
    )
    watch.lap("training draws", outputs)
    # the keys of discrete outputs, made once for the loss's memo and the histogram
    keyed = functools.cache(lambda: output_keys(outputs))
    shared = [
        i
        for i, label in enumerate(settings.candidates)
        if label in _SCORERS and label != "learned-inputs"
    ]
    prepared: dict[int, _Candidate | None] = {}

    def prepare(
        i: int, outputs: Any, sample: Any, keyed: Any, rows=None, short=None
    ) -> None:
        """Candidate ``i`` prepared; a scorer on ``short`` steps where given."""
        label = settings.candidates[i]
        whole = functools.partial(
            _prepared_candidate, i, label, context, outputs, keyed=keyed, rows=rows
        )
        if short is None:
            candidate = whole(sample)
        else:
            head = learning.sample_head(sample, short / learning.STEPS)
            candidate = whole(head, steps=short)
            if candidate is not None:
                candidate = candidate._replace(full=functools.partial(whole, sample))
        watch.lap(f"prepare {label}", None if candidate is None else candidate.aux)
        prepared[i] = candidate

    for i in range(len(settings.candidates)):
        if i not in shared:
            prepare(i, outputs, None, keyed)
    if shared:
        # the scorers on quantile hinges (all but learned-inputs) share one sample
        with jax.enable_x64(dtype == "float64"):
            sample = learning.training_sample(
                outputs[0], outputs[1], distinct=_distinct(keyed())
            )
        # their values at the distinct outputs, where discrete, looked up after
        rows = memo_rows(outputs, keyed()) if SCORE_MEMO else None
        watch.lap("training sample", sample.y)
        del outputs, keyed  # the sample holds all that the scorers read
        # trained short for the screening, or on every step at once: a scorer of
        # few distinct outputs trains in a tenth of a second or so, which a short
        # training would not save; where float-support has nothing to count and
        # the exact loss is not there, the short training would most likely be
        # kept and spent for nothing (report-noisy-max4). Where the exact loss is
        # there, the screening most likely settles on it (_settled), and the
        # scorers are never trained on every step (rappor, one-time-rappor)
        short = None
        if steps is not None and sample.distinct is None:
            if _grids_differ(prepared) or _has_exact_loss(prepared):
                short = steps
        for i in shared:
            prepare(i, None, sample, None, rows, short)
    return [prepared[i] for i in sorted(prepared) if prepared[i] is not None]


def _grids_differ(prepared: dict[int, _Candidate | None]) -> bool:
    """Whether float-support is among the ``prepared`` candidates and the two
    inputs' float grids on its training outputs differ: where they are the same,
    no training output lies outside the other input's grid, and float-support,
    the candidate that left the scorers behind at the screening on every suite
    case where one was left, has nothing to count."""
    support = [
        c for c in prepared.values() if c is not None and c.label == "float-support"
    ]
    return bool(support) and bool(np.any(support[0].aux[:, 0] != support[0].aux[:, 1]))


def _has_exact_loss(prepared: dict[int, _Candidate | None]) -> bool:
    """Whether the exact loss (``lr``) is among the ``prepared`` candidates."""
    return any(c is not None and c.label == "lr" for c in prepared.values())


def _prepared_candidate(
    i: int,
    label: str,
    context: AttackContext,
    outputs: np.ndarray | None,
    sample: learning.TrainingSample | None,
    keyed: Any,
    rows: MemoRows | None = None,
    steps: int = learning.STEPS,
) -> _Candidate | None:
    """Candidate ``label`` (the ``i``-th of the portfolio) prepared, or ``None``
    where it does not apply; a scorer on ``steps`` training steps. The scorers on
    the default hinges train on ``sample``,
    the :func:`mcdp.learning.training_sample` of the training outputs that each
    would make, and are given neither ``outputs`` nor ``keyed``, but the
    :class:`MemoRows` of the outputs where they are discrete (``rows``): their
    values there are looked up (:func:`_memoised_score`). The others read
    ``outputs``, and ``keyed()`` gives the :func:`output_keys` of them."""
    mech, dtype = context.mechanism, context.dtype
    if label == "lr":
        if mech.privacy_loss is None:
            return None
        tx = context.transformed  # a scorer: the exact loss
        aux = (tx[0], tx[1], loss_params(mech, tx, context.params, dtype))
        memo = None
        if LOSS_MEMO and mech.loss_by_block:
            memo = loss_memo(mech, aux, outputs, keyed(), dtype)
        return _Candidate(
            label, _loss_score(mech), (*aux, memo), None, label, keys=_keys_of(memo)
        )
    if label == "support" and mech.noise_bound is not None:
        attack, aux = _prepare_support(context)
    elif label == "structure" and _released(mech):
        attack, aux = STRUCTURE_EVENTS, structure_table(outputs)
    elif label == "majority" and _discrete(outputs):
        attack, aux = MAJORITY_VOTE, None
    elif label == "float-support":
        attack, aux = FLOAT_SUPPORT_EVENTS, _float_support_aux(outputs, dtype)
    elif label == "histogram":
        table = None if keyed() is None else histogram_table(outputs, keyed())
        if table is None:
            return None
        return _Candidate(
            label, histogram_score, table, None, label, keys=_keys_of(table)
        )
    elif label in _SCORERS:
        knots = None
        if label == "learned-inputs":
            knots = inputs_knots(context.transformed, outputs)
            if knots is None:
                return None
        model, features = _SCORERS[label]
        key = jax.random.fold_in(jax.random.fold_in(context.key, 2), i)
        with jax.enable_x64(dtype == "float64"):
            if knots is not None:  # learned-inputs: hinges of its own
                sample = learning.training_sample(outputs[0], outputs[1], knots)
            scorer = learning.fit(
                key, model=model, feature_set=features, sample=sample, steps=steps
            )
        score = learning.score_of(features, model, scorer)
        # looked up where the outputs are discrete (the shared sample's scorers)
        memo = None if rows is None else value_memo(score, scorer, rows, dtype)
        value = _memoised_score(score)
        return _Candidate(
            label, value, (scorer, memo), None, model, features, _keys_of(memo)
        )
    else:
        return None  # not applicable to this mechanism
    return _Candidate(label, attack.guess, aux, attack)


def _few_values(scores: np.ndarray) -> bool:
    """Whether ``scores`` (``(2, n)``) take at most :data:`HISTOGRAM_VALUES` distinct
    values; ``False`` at once where their first :data:`DISCRETE_PROBE` per input
    already take more (continuous scores are then not sorted whole for it)."""
    if np.unique(scores[:, :DISCRETE_PROBE]).size > HISTOGRAM_VALUES:
        return False
    return np.unique(scores).size <= HISTOGRAM_VALUES


def _promise(k_first, k_second, events, *, n, **bound):
    """A candidate's score, the best bound its events promise from their judged
    counts (``bound`` as :func:`mcdp.learning.promises_of_counts` takes it), and
    the standard deviation of that promise."""
    values, sds = learning.promises_of_counts(
        k_first, n, k_second, n, num_events=events, **bound
    )
    if values.size == 0:
        return -math.inf, math.inf
    at = int(np.argmax(values))
    return float(values[at]), float(sds[at])


def _choice(scores: Sequence[float], spreads: Sequence[float], margin: float) -> int:
    """The first candidate, in the portfolio's order, whose score is within
    ``margin`` standard deviations of the best score (the spread of the best
    candidate's promise) and, where the best promises a positive bound, is itself
    positive: a later candidate displaces an earlier one only by promising more
    than the luck of the judged counts explains."""
    best = int(np.argmax(scores))  # the first of equals
    floor = scores[best] - margin * spreads[best]
    if scores[best] > 0:  # one that promises no bound never displaces one that does
        floor = max(floor, math.nextafter(0.0, 1.0))
    return next(j for j, s in enumerate(scores) if s >= floor)


def _screen_draws(select_draws: int, screen_from: int) -> int:
    """The selection draws per input that screen the candidates
    (:data:`SCREEN_FROM`): the first ``1/SCREEN_SHARE`` of ``select_draws``, cut
    to whole calls of the device engine's draw, or 0 (no screening) below
    ``screen_from``."""
    if select_draws < screen_from:
        return 0
    head = select_draws // SCREEN_SHARE
    # in whole calls of the engine's draw where it is many (CHUNK_SCALARS values
    # per input: one call for one coordinate, or on a CPU eight of its 128 blocks,
    # draw_call_blocks, for up to eight), so that the screening's last call and
    # the rest's do not each draw past their end
    unit = CHUNK_SCALARS if head >= CHUNK_SCALARS else BLOCK_DRAWS
    head = head // unit * unit
    return head if 0 < head < select_draws else 0


def _kept(
    scores: Sequence[float], lowest: Sequence[float], highest: Sequence[float]
) -> list[int]:
    """The candidates that the screening keeps, in order: every one where no score
    is positive (``scores``, as :func:`_judged` gives them: nothing to tell them
    apart by), else
    those whose promise at the optimistic ends of their judged rates (``highest``)
    reaches the best promise at the pessimistic ends (``lowest``), each rate's
    interval at :data:`SCREEN_CONFIDENCE`. (A standard deviation does not serve:
    an event that one input never showed has a spread of about 1.4 in the log
    ratio at any number of draws, so that float-support, whose every event is such,
    left no other candidate behind however far ahead it was.)"""
    if max(scores) <= 0:
        return list(range(len(scores)))
    floor = max(lowest)
    return [j for j, high in enumerate(highest) if high >= floor]


def _untwinned(
    candidates: Sequence[_Candidate], kept: Sequence[int], counts: Sequence[tuple]
) -> list[int]:
    """``kept`` less every scorer trained on every step whose judged counts
    (:func:`_judged`'s, on the screening's draws) are those of an earlier one kept
    and trained so, where they are not all 0: its events and their counts are the
    earlier one's, so is its promise, and :func:`_choice` gives the earlier one such
    ties (events that no input showed on the screening's draws say nothing of the
    rest's, and such a scorer is kept). Scorers that rank the outputs alike (a
    logistic and an MLP of report-noisy-max4's one released maximum; svt5's scorers
    and histogram on its few outputs) tie so, and were judged and scored on every
    selection draw for nothing. One trained short for the screening is kept: its
    whole training may rank otherwise."""

    def trained(j: int) -> bool:  # a scorer trained on every step
        return candidates[j].attack is None and candidates[j].full is None

    distinct: list[int] = []
    for j in kept:
        counted = any(np.any(c) for c in counts[j][:-2])
        if (
            trained(j)
            and counted
            and any(trained(i) and _same_counts(counts[i], counts[j]) for i in distinct)
        ):
            continue
        distinct.append(j)
    return distinct


def _same_counts(a: tuple, b: tuple) -> bool:
    """Whether two judged counts (``(*at_least, events, n)``) are the same."""
    return len(a) == len(b) and all(
        np.array_equal(u, v) for u, v in zip(a, b, strict=True)
    )


def _worth_leaving(candidates: Sequence[_Candidate], kept: Sequence[int]) -> bool:
    """Whether the rest of the selection draws should leave the candidates that
    the screening did not keep: not where those are all outcome attacks and a
    scorer is kept. Their values are a byte each, and a program without them is
    compiled anew: `rappor` at 1e8, its majority vote left, took 2.0 s longer in
    a fresh process."""
    left = [c for j, c in enumerate(candidates) if j not in kept]
    scorer_kept = any(candidates[j].attack is None for j in kept)
    return not (scorer_kept and all(c.attack is not None for c in left))


def _settled(
    candidates: Sequence[_Candidate], kept: Sequence[int], lead: int
) -> int | None:
    """The candidate that the screening's choice settles on, with no more of the
    selection draws, or None where the rest must judge the ``kept`` ones: the one
    kept where it is an outcome attack, which chooses nothing on the selection
    draws; else the choice on the screening's draws (``lead``, :func:`_choice`)
    where it is the exact loss, or an outcome attack and no scorer kept was trained
    short for the screening. Never a scorer: its thresholds, chosen on a sample an
    eighth the size, lost bound (snapping's learned-bits at 2e8, 0.78 of the
    ceiling where 1.0), and a scorer trained short may be judged below what its
    whole training would promise. The exact loss ranks the outputs as their own
    likelihood ratio does, so a scorer's events can at best tie with its where the
    outputs follow the mechanism's density (:data:`CHOICE_MARGIN` gives ties to
    it), and its thresholds, chosen on its weighted masses on an eighth of the
    sample, gave at 2e8 the bound of the whole sample's on discrete outputs and
    one within two thirds of a seed's spread on continuous ones
    (benchmarks/RESULTS.md, "The choice settled at the screening")."""
    if len(kept) == 1 and candidates[kept[0]].attack is not None:
        return kept[0]
    if lead not in kept:
        return None
    if candidates[lead].label == "lr":
        return lead
    if candidates[lead].attack is None:  # a scorer
        return None
    return None if any(candidates[j].full is not None for j in kept) else lead


def _selection_values(
    candidates: Sequence[_Candidate],
    context: AttackContext,
    key: PRNGKey,
    num_draws: int,
    *,
    first_draw: int = 0,
    out: tuple[np.ndarray, ...] | None = None,
) -> tuple[np.ndarray, ...]:
    """The values of the ``candidates`` on the selection draws ``first_draw`` ..
    ``first_draw + num_draws - 1`` of ``key``, one ``(2, num_draws)`` array each
    (``out``'s, where given)."""
    fns = tuple(c.value for c in candidates)
    # the outputs keyed once for every candidate looked up
    keys = _shared_keys(candidates) if SHARED_KEYS else None
    keyed = tuple(keys is not None and c.keys is not None for c in candidates)
    dtypes = tuple(_values_dtype(c) for c in candidates)
    return draw(
        key, context.mechanism, context.pair, context.params, num_draws,
        dtype=context.dtype, transform=_values_transform(fns, keyed, dtypes),
        aux=(keys, tuple(c.aux for c in candidates)), engine=context.engine,
        first_draw=first_draw, out=out,
    )  # fmt: skip


def _judged(
    candidates: Sequence[_Candidate],
    values: Sequence[np.ndarray],
    *,
    select: Any,
    max_events: int,
    dtype: str,
    promise: Any,
) -> tuple[tuple[dict, ...], tuple[tuple, ...], tuple[float, ...], tuple[float, ...]]:
    """Each candidate judged on its ``values`` (``(2, n)``): how it chooses its
    final events, its judged counts (``(*at_least, events, n)``: the counts on the
    second half of events chosen on the first), and its score and spread
    (:func:`_promise`; where nothing promises a positive bound at the judged rates'
    pessimistic ends, the bounds at the rates themselves)."""
    # The scorers choose their thresholds on the first half of the selection draws;
    # every candidate is judged on the second half, so that a scorer's promise is
    # not that of thresholds fitted to the very draws that judge them (the
    # winner's curse of rare events).
    half = values[0].shape[1] // 2
    n = values[0].shape[1] - half

    def judge(j: int) -> tuple[dict, tuple]:
        """How candidate ``j`` chooses its final events, and its judged counts."""
        candidate, judged = candidates[j], values[j][:, half:]
        few = candidate.attack is None and _few_values(values[j][:, :half])
        # a hair below the loss's atoms, and below a few-valued scorer's: the
        # counting scores in another program than the selection draws, and on a
        # GPU two programs rounded equal outputs' MLP scores apart in their last
        # bits (tests/test_learning.py); a threshold on an atom would then drop
        # it. The hair is of the values' own precision (the MLP's float32).
        floats = np.issubdtype(values[j].dtype, np.floating)
        hair_dtype = values[j].dtype.name if floats else dtype
        hair = dict(adjust=functools.partial(_below_atoms, dtype=hair_dtype))
        if candidate.label == "lr":
            choice = hair
        elif few:
            choice = {**DISCRETE_CHOICE, **hair}
        else:
            choice = {}
        if candidate.attack is None:
            # the events of few values are ranked at their rates on the first
            # half, the exact loss's as every scorer's (its final events, where it
            # wins, come from its weighted masses instead)
            first_half = {**choice, **DISCRETE_CHOICE} if few else choice
            chosen = select(
                values[j][0, :half], values[j][1, :half], **first_half
            ).thresholds
            at_least = [
                np.array([np.count_nonzero(v >= t) for t in chosen]) for v in judged
            ]
            events = max_events
        else:
            k = candidate.attack.num_outcomes
            at_least = [
                np.bincount(v.astype(np.intp), minlength=k)[::-1].cumsum()[::-1][1:]
                for v in judged
            ]
            events = max(k - 1, 1)
        return choice, (*at_least, events, n)

    # the candidates judged side by side: NumPy's sorts and counts on large arrays
    # release the GIL, and each candidate's work is its own
    workers = min(len(candidates), learning.usable_cores())
    with concurrent.futures.ThreadPoolExecutor(
        workers, thread_name_prefix="mcdp-choice"
    ) as pool:
        choices, counts = zip(*pool.map(judge, range(len(candidates))), strict=True)
    scores, spreads = zip(*(promise(*c[:-1], n=n) for c in counts), strict=True)
    if max(scores) <= 0:
        # Nothing promises a positive bound at the judged rates' pessimistic ends
        # (a small selection sample): compare the bounds at the rates themselves
        # instead, rather than let the order of the candidates decide.
        scores, spreads = zip(
            *(promise(*c[:-1], n=n, estimate=True) for c in counts), strict=True
        )
    return choices, counts, scores, spreads


def _fully_trained(candidate: _Candidate, watch: _Stopwatch) -> _Candidate:
    """``candidate``, a scorer trained on the screening's steps alone, trained on
    every step (as it is, where it was so already); ``watch`` laps after it."""
    if candidate.full is None:
        return candidate
    full = candidate.full()
    watch.lap(f"train {candidate.label}", full.aux)
    return full


def _whole_values(
    selected: Callable,
    kept: Sequence[_Candidate],
    head_values: Sequence[np.ndarray],
    head: int,
    select_draws: int,
) -> tuple[np.ndarray, ...]:
    """The values of the candidates ``kept`` on the whole selection sample of
    ``select_draws`` per input: their screening's (``head_values``, each kept
    candidate's, on its first ``head``), and the rest drawn by ``selected``
    (:func:`_selection_values` of the context and key) into the same arrays.
    Concatenating the parts wrote each value again to fresh memory
    (truncated-geometric at 1e8, every candidate kept: 2.73 s for the rest of its
    selection draws, 1.33 s for all of them whole)."""
    whole = tuple(host_array((2, select_draws), v.dtype) for v in head_values)
    for w, v in zip(whole, head_values, strict=True):
        w[:, :head] = v
    selected(
        kept, select_draws - head, first_draw=head,
        out=tuple(w[:, head:] for w in whole),
    )  # fmt: skip
    return whole


def _prepare_auto(settings: AutoSettings, context: AttackContext) -> tuple[Attack, Any]:
    """:func:`_portfolio_choice`, with the seconds of its stages in the attack's
    ``preparation``."""
    watch = _Stopwatch()
    attack, aux = _portfolio_choice(settings, context, watch)
    watch.lap("choice", aux)
    return attack._replace(preparation=tuple(watch.stages.items())), aux


def _portfolio_choice(
    settings: AutoSettings, context: AttackContext, watch: _Stopwatch
) -> tuple[Attack, Any]:
    """Prepares every applicable candidate on a training sample, scores each on a
    selection sample by the bound its events promise on the counted sample
    (:func:`mcdp.learning.promises_of_counts`; a scorer's thresholds chosen on the
    sample's first half, every candidate judged on its second), and returns the one
    :func:`_choice` takes alone, a scorer with thresholds chosen on the whole
    selection sample: only its events reach the counted sample, so only they enter
    the correction. The exact loss's thresholds are chosen, where it wins, on the
    masses that :func:`mcdp.learning.loss_weighted_counts` estimates from both
    inputs' draws. Both samples come from ``context.key``, which the counted sample
    never uses."""
    mech, dtype = context.mechanism, context.dtype
    key_train, key_select = (jax.random.fold_in(context.key, s) for s in range(2))
    train_draws, select_draws = learned_sizes(
        context.draws, settings.train_draws, settings.select_draws
    )
    screen_from = SCREEN_FROM if settings.screen_from is None else settings.screen_from
    head = _screen_draws(select_draws, screen_from)
    steps = SCREEN_STEPS if settings.screen_steps is None else settings.screen_steps
    steps = steps if head and steps < learning.STEPS else None
    candidates = _prepared_candidates(
        settings, context, key_train, train_draws, watch, steps
    )
    labels = [c.label for c in candidates]
    if not candidates:
        raise ValueError(
            f"attack 'auto': none of the candidates {settings.candidates} applies "
            f"to {mech.name!r}."
        )

    def selected(chosen, num_draws, **part):
        return _selection_values(chosen, context, key_select, num_draws, **part)

    draws, confidence = max(context.draws, 1), context.confidence
    select = functools.partial(
        learning.select_thresholds, draws=draws, confidence=confidence,
        max_events=settings.max_events, epsilon=context.epsilon, delta=context.delta,
    )  # fmt: skip
    promise = functools.partial(
        _promise, draws=draws, confidence=confidence,
        epsilon=context.epsilon, delta=context.delta,
    )  # fmt: skip
    judged = functools.partial(
        _judged, select=select, max_events=settings.max_events, dtype=dtype,
        promise=promise,
    )  # fmt: skip
    left: dict[str, float] = {}  # the candidates left at the screening: their scores
    piloted: dict[str, int] = {}  # and the scorers' steps, where one of them was left
    if head:
        values = selected(candidates, head)
        watch.lap("screening draws", values)
        choices, counts, scores, spreads = judged(candidates, values)
        ends = [
            [promise(*c, n=n, interval=SCREEN_CONFIDENCE, optimistic=o)[0]
             for *c, n in counts]
            for o in (False, True)
        ]  # fmt: skip
        kept = _untwinned(candidates, _kept(scores, *ends), counts)
        if not _worth_leaving(candidates, kept):
            kept = list(range(len(candidates)))
        lead = _settled(candidates, kept, _choice(scores, spreads, settings.margin))
        watch.lap("screening")
        if lead is not None:
            # the screening's choice stands: the rest of the selection draws are
            # not drawn, and every score is the screening's
            if any(c.full is not None for c in candidates):
                piloted = dict(screen_steps=steps)
            table = tuple((c.label, s) for c, s in zip(candidates, scores, strict=True))
            screened = dict(
                screened=tuple(labels), screen_draws=head, **piloted
            )  # fmt: skip
            return _chosen(
                candidates[lead], values[lead], choices[lead], table, screened,
                select=select, mechanism=mech,
            )  # fmt: skip
        left = {
            c.label: s
            for j, (c, s) in enumerate(zip(candidates, scores, strict=True))
            if j not in kept
        }
        if any(c.full is not None for j, c in enumerate(candidates) if j not in kept):
            piloted = dict(screen_steps=steps)
        if any(candidates[j].full is not None for j in kept):
            # the kept scorers trained on every step, then every kept candidate's
            # values drawn on the whole sample again: the kept scorers' values on
            # its first part are not those of their screening
            candidates = [_fully_trained(candidates[j], watch) for j in kept]
            values = selected(candidates, select_draws)
        else:
            heads = [values[j] for j in kept]
            candidates = [candidates[j] for j in kept]
            values = _whole_values(selected, candidates, heads, head, select_draws)
    else:
        values = selected(candidates, select_draws)
    watch.lap("selection draws", values)  # (2, select_draws) per candidate
    choices, _, scores, spreads = judged(candidates, values)
    best = _choice(scores, spreads, settings.margin)
    by_label = {c.label: s for c, s in zip(candidates, scores, strict=True)} | left
    table = tuple((label, by_label[label]) for label in labels)
    screened = dict(screened=tuple(left), screen_draws=head, **piloted) if left else {}
    return _chosen(
        candidates[best], values[best], choices[best], table, screened,
        select=select, mechanism=mech,
    )  # fmt: skip


def _chosen(
    winner: _Candidate,
    values: np.ndarray,
    choice: dict,
    table: tuple,
    screened: dict,
    *,
    select: Any,
    mechanism: Mechanism,
) -> tuple[Attack, Any]:
    """The attack that counts ``winner``, the candidate chosen on its selection
    ``values`` (``(2, n)``): an outcome attack as it is, a scorer with thresholds
    chosen on those values (how, ``choice`` from :func:`_judged`); ``table`` is
    every candidate's score, ``screened`` the record of the screening."""
    if winner.attack is not None:
        return winner.attack._replace(selection=table, **screened), winner.aux
    # The winner's thresholds, chosen on the selection values it was chosen on
    # (the whole sample, or the screening's eighth where the choice settled
    # there). The exact loss's are chosen on its weighted masses at face value:
    # they aim at the counted sample's best events, rarer than those that its
    # pessimistic counts promise most for on the judged half, as every candidate
    # was judged.
    exact = dict(exact_loss=True) if winner.label == "lr" else {}
    thresholds = select(values[0], values[1], **choice, **exact).thresholds
    if winner.label == "lr":
        # a loss looked up is counted batched, a loss computed by block where the
        # mechanism asks (memoised_loss computes it only in a chunk that needs it)
        memo = winner.aux[-1]
        attack = Attack(
            "lr", len(thresholds) + 1, _loss_guess_of(mechanism),
            events=_lr_events(thresholds), selection=table,
            by_block=mechanism.loss_by_block and memo is None, **screened,
        )  # fmt: skip
        return attack, (winner.aux, thresholds)
    if winner.label == "histogram":
        events = tuple(f"histogram log ratio >= {t:.6g}" for t in thresholds)
        attack = Attack(
            "histogram", len(thresholds) + 1, _histogram_guess, events=events,
            selection=table, **screened,
        )  # fmt: skip
        return attack, (winner.aux, thresholds)
    attack = _scored(
        winner.label, winner.model, winner.features, thresholds, winner.label, table,
        memoised=winner.value,
    )  # fmt: skip
    return attack._replace(**screened), (winner.aux, thresholds)


def auto_attack(
    *,
    train_draws: int | None = None,
    select_draws: int | None = None,
    max_events: int = MAX_EVENTS,
    candidates: Sequence[str] = AUTO_CANDIDATES,
    margin: float = CHOICE_MARGIN,
    screen_from: int | None = None,
    screen_steps: int | None = None,
) -> Attack:
    """The portfolio (``ATTACKS["auto"]`` has the defaults): every applicable
    attack is prepared, the best on fresh draws is counted.

    On a training sample of ``train_draws`` per input, it prepares the likelihood
    ratio (a mechanism with a density: its exact privacy loss as a score, whose
    ``max_events`` thresholds are chosen as the scorers' are, a hair below the
    loss's atoms; the explicit ``"lr"`` attack counts a fixed grid of 51), the
    structure of releases (a dataset audit),
    the support test (bounded noise), the majority vote (discrete outputs), the
    float-support test, three scorers (logistic regression and an MLP on the
    outputs' moments, logistic regression on their float bit patterns) and, for
    outputs of at most :data:`HISTOGRAM_VALUES` distinct values, the histogram: each
    value's log ratio of training frequencies (the plug-in likelihood ratio),
    thresholds chosen as for the scorers. Asked for (it is not among the
    defaults), ``"learned-inputs"`` adds, for outputs that are not discrete and a
    pair of at most :data:`mcdp.learning.MAX_INPUT_KNOTS` distinct values,
    logistic regression on pieces that bend at those values only
    (:func:`mcdp.learning.input_knots`, :func:`mcdp.learning.ramp_features`).
    On a selection sample of ``select_draws`` per input, it scores each by the best
    lower bound its events promise on the counted sample, at the pessimistic ends of
    their rates on the sample's second half (the scorers, the loss and the histogram
    after choosing their ``max_events`` thresholds on its first half, so that no promise
    is that of thresholds fitted to the draws that judge them), and hands the counted
    sample to one alone, its thresholds chosen on the whole selection sample, so the
    correction counts its events only and the bound is valid whatever was
    compared. The one is the first, in the order of ``candidates``, whose
    score is within ``margin`` standard deviations of the best score (the spread
    of the best candidate's promise on the judged counts,
    :func:`mcdp.learning.promises_of_counts`); ``margin=0`` takes the best score.
    Scores of at most :data:`HISTOGRAM_VALUES` distinct values choose by
    :data:`DISCRETE_CHOICE`. The sample sizes default to the learned attack's
    (:func:`learned_sizes`). From ``screen_from`` selection draws per input, the
    candidates are screened on the sample's first eighth, and only those that
    could still be chosen are scored on the rest (:data:`SCREEN_FROM`), less any
    scorer whose counts there are those of an earlier one (:func:`_untwinned`):
    the same values, so the same choice unless the screening left the one that
    would have won. Where the choice on the screening's draws is the exact loss or an
    outcome attack, the rest is not drawn (:func:`_settled`). The scorers that it
    judges train on ``screen_steps`` of their steps and as large a share of the
    training sample (:data:`SCREEN_STEPS`), and those it keeps train again on
    every step, so that they are those of the portfolio without a screening.
    The result's ``attack`` names the winner; ``Attack.selection`` (the records'
    ``selection``) keeps every score, and ``Attack.screened`` names those whose
    score is the screening's. Where no candidate promises a positive bound at
    the judged rates' pessimistic ends (a small selection sample), the scores are
    the bounds at the rates themselves.

    Args:
      candidates: the labels to consider, from :data:`CANDIDATES` (by default
        :data:`AUTO_CANDIDATES`); one not applicable to the mechanism is skipped.
      margin: how many standard deviations of the best promise a later candidate
        must promise beyond an earlier one to be chosen over it
        (:data:`CHOICE_MARGIN`), a finite number >= 0.
      screen_from: the selection draws per input from which the candidates are
        screened on the first ``1/SCREEN_SHARE`` of them, and only those that
        could still be chosen scored on the rest (``None``: :data:`SCREEN_FROM`;
        at least 2).
      screen_steps: the training steps of the scorers that the screening judges
        (``None``: :data:`SCREEN_STEPS`; at least 1): those it keeps are trained
        again on every step (:data:`mcdp.learning.STEPS`; from so many, the
        scorers are trained once, on every step).
    """
    chosen = tuple(dict.fromkeys(candidates))
    for label in chosen:
        _validate.one_of("candidates", label, CANDIDATES)
    if not chosen:
        raise ValueError("Expected at least one candidate for attack 'auto'.")
    settings = AutoSettings(
        train_draws=_validate.draws_or_none("train_draws", train_draws),
        select_draws=_validate.draws_or_none("select_draws", select_draws),
        max_events=_validate.integer("max_events", max_events, low=1, high=64),
        candidates=chosen,
        margin=_validate.nonnegative("margin", margin),
        screen_from=_validate.draws_or_none("screen_from", screen_from),
        screen_steps=None
        if screen_steps is None
        else _validate.integer("screen_steps", screen_steps, low=1, high=1 << 20),
    )
    return Attack(
        "auto", 0, _unprepared, prepare=functools.partial(_prepare_auto, settings)
    )


AUTO = auto_attack()


# --- the registry -----------------------------------------------------------------

ATTACKS: Mapping[str, Attack] = MappingProxyType(
    {
        a.name: a
        for a in (
            MAJORITY_VOTE,
            SUPPORT_TEST,
            LIKELIHOOD_RATIO,
            LEARNED,
            FLOAT_SUPPORT,
            STRUCTURE,
            AUTO,
        )  # fmt: skip
    }
)


def get_attack(attack: str | Attack) -> Attack:
    """Looks a name up in ``ATTACKS`` (an :class:`Attack` is returned as it is); the
    error lists the known attacks."""
    if isinstance(attack, Attack):
        return attack
    try:
        return ATTACKS[attack]
    except (KeyError, TypeError):
        raise ValueError(
            f"Unknown attack {attack!r}; expected one of: {', '.join(sorted(ATTACKS))}"
            " or an mcdp.Attack."
        ) from None
