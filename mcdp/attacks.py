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
  produced on a training sample (:func:`float_support_attack`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from mcdp import _validate, learning
from mcdp._types import Array
from mcdp.core.attack import Attack, AttackContext
from mcdp.core.mechanism import Mechanism
from mcdp.sampling import draw

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

    return Attack("lr", num_thresholds + 1, guess)


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
    eps = np.finfo(context.dtype).eps
    cut = thresholds - math.sqrt(eps) * np.maximum(1.0, np.abs(thresholds))
    tx = context.transformed
    attack = attack._replace(events=_lr_events(cut))
    return attack, (tx[0], tx[1], context.params, cut)


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


def _learned_guess_logistic(y, aux):
    scorer, thresholds = aux
    score = learning.score_logistic(y, scorer)
    return jnp.searchsorted(thresholds, score, side="right").astype(jnp.int32)


def _learned_guess_mlp(y, aux):
    scorer, thresholds = aux
    score = learning.score_mlp(y, scorer)
    return jnp.searchsorted(thresholds, score, side="right").astype(jnp.int32)


_LEARNED_GUESSES = {"logistic": _learned_guess_logistic, "mlp": _learned_guess_mlp}


def _learned_guess_bits(y, aux, *, score):
    scorer, thresholds = aux
    return jnp.searchsorted(thresholds, score(y, scorer), side="right").astype(
        jnp.int32
    )


_LEARNED_GUESSES_BITS = {
    model: functools.partial(_learned_guess_bits, score=score)
    for model, score in learning.SCORES_BY_FEATURES["bits"].items()
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
    bits = settings.features == "bits"
    with jax.enable_x64(dtype == "float64"):
        scorer = learning.fit(
            key_init, outputs[0], outputs[1], model=settings.model,
            feature_set=settings.features,
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
    guesses = _LEARNED_GUESSES_BITS if bits else _LEARNED_GUESSES
    model = f"{settings.model} (bits)" if bits else settings.model
    attack = Attack(
        "learned",
        len(thresholds) + 1,
        guesses[settings.model],
        events=tuple(f"{model} score >= {t:.6g}" for t in thresholds),
    )
    return attack, (scorer, thresholds)


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
        :func:`mcdp.learning.features`) or ``"bits"``, those and the float
        layout of every coordinate (:func:`mcdp.learning.bit_features`).
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
    output of j in the same coordinate and binade (sign and exponent)."""
    top, precision, _ = learning.float_bits(y)
    coords = jnp.arange(y.shape[-1], dtype=jnp.int32)[None, :]
    out_x, out_x_prime = (
        jnp.any(precision > table[coords, top], axis=-1) for table in aux
    )
    only_x = out_x_prime & ~out_x
    only_x_prime = out_x & ~out_x_prime
    return jnp.where(only_x, 2, jnp.where(only_x_prime, 0, 1)).astype(jnp.int32)


@jax.jit
def _float_layout(y):
    top, precision, _ = learning.float_bits(y)
    return top, precision


def float_support_table(outputs: np.ndarray, dtype: str) -> np.ndarray:
    r"""Per input, coordinate and binade, the most significant mantissa bits seen:
    int32 of shape ``(num_inputs, width, 2^{1 + exponent bits})``, -1 where a
    binade was never seen. ``outputs``: ``(num_inputs, n, width)``."""
    info = np.finfo(dtype)
    bins = 1 << (1 + info.nexp)
    num_inputs, _, width = outputs.shape
    table = np.full((num_inputs, width, bins), -1, dtype=np.int32)
    with jax.enable_x64(dtype == "float64"):
        for i in range(num_inputs):
            top, precision = map(
                np.asarray, _float_layout(jnp.asarray(outputs[i], dtype=dtype))
            )
            coords = np.broadcast_to(np.arange(width), top.shape)
            np.maximum.at(table[i], (coords.ravel(), top.ravel()), precision.ravel())
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
    outputs = outputs.reshape(outputs.shape[0], outputs.shape[1], -1)
    table = float_support_table(outputs, context.dtype)
    return FLOAT_SUPPORT_EVENTS, (table[0], table[1])


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


# --- the registry -----------------------------------------------------------------

ATTACKS: Mapping[str, Attack] = MappingProxyType(
    {
        a.name: a
        for a in (MAJORITY_VOTE, SUPPORT_TEST, LIKELIHOOD_RATIO, LEARNED, FLOAT_SUPPORT)
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
