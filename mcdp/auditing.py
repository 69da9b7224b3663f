r"""The audits by their first names: :func:`audit`, :func:`audit_to_width` and
:func:`audit_delta`, each with an ``_iter`` form, and :func:`draws_for_target`.

Each builds an :class:`~mcdp.spec.AuditSpec` and runs it (:mod:`mcdp.running`), so
its counts are those of :func:`mcdp.run` on the same spec:

* :func:`audit` / :func:`audit_iter`: the ACL 2022 sanity check on :math:`D = 0^d`
  and :math:`D' = 1^d`; the privacy loss of a two-outcome attack with its interval
  (README, "The estimate");
* :func:`audit_to_width` / :func:`audit_to_width_iter`: the same, in rounds, until
  the loss interval is narrow enough; :func:`draws_for_target` predicts the draws
  before the run;
* :func:`audit_delta` / :func:`audit_delta_iter`: a claimed (epsilon, delta) on one
  pair; the privacy profile :math:`\delta(\varepsilon)` of the attack's events
  (:func:`mcdp.statistics.delta_bounds`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from mcdp import _validate
from mcdp.core.attack import Attack
from mcdp.core.mechanism import Mechanism
from mcdp.core.records import AuditResult, DeltaAuditResult, TargetWidthResult
from mcdp.running import ATTACK_KEY_TAG, run, run_iter
from mcdp.running import draws_for_target as _draws_for_target
from mcdp.sampling import DTYPES, PRNG_IMPL
from mcdp.spec import (
    FIRST_DRAWS,
    MAX_DRAWS,
    PROFILE_EPSILONS,
    SANITY_CHECK,
    AuditSpec,
    Draws,
    TargetWidth,
)

__all__ = [
    "ATTACK_KEY_TAG",
    "FIRST_DRAWS",
    "MAX_DRAWS",
    "PROFILE_EPSILONS",
    "SANITY_CHECK",
    "audit",
    "audit_delta",
    "audit_delta_iter",
    "audit_iter",
    "audit_to_width",
    "audit_to_width_iter",
    "draws_for_target",
    "validate_audit",
]


def validate_audit(
    epsilon, dim, draws, seed, confidence, dtype
) -> tuple[float, int, int, int, float, str]:
    """Checks the arguments of :func:`audit`; raises one-line :class:`ValueError`."""
    return (
        _validate.positive("epsilon", epsilon),
        _validate.integer("dim", dim, low=1, high=_validate.MAX_DIM),
        _validate.integer("draws", draws, low=1, high=_validate.MAX_DRAWS),
        _validate.integer("seed", seed, low=0, high=_validate.MAX_SEED),
        _validate.open_unit("confidence", confidence),
        _validate.one_of("dtype", dtype, DTYPES),
    )


def _sanity_spec(mechanism, epsilon, dim, **fields: Any) -> AuditSpec:
    """The sanity check's spec; ``dim`` is required (no pair fixes it)."""
    dim = _validate.integer("dim", dim, low=1, high=_validate.MAX_DIM)
    return AuditSpec(mechanism, epsilon, dim=dim, **fields)


# --- the sanity check --------------------------------------------------------------


def audit_iter(
    mechanism: str | Mechanism,
    epsilon: float,
    dim: int,
    draws: int,
    *,
    attack: str | Attack = "majority",
    seed: int = 0,
    confidence: float = 0.95,
    dtype: str = "float64",
    nan_policy: str | None = None,
    params: Any = None,
    prng: str = PRNG_IMPL,
) -> Iterator[AuditResult]:
    """Like :func:`audit`, but yields a result after every compiled call (the last one
    is final, the others are marked ``interrupted``)."""
    spec = _sanity_spec(
        mechanism, epsilon, dim, attack=attack, seed=seed, confidence=confidence,
        dtype=dtype, nan_policy=nan_policy, params=params, prng=prng,
    )  # fmt: skip
    return run_iter(spec, Draws(draws))


def audit(
    mechanism: str | Mechanism,
    epsilon: float,
    dim: int,
    draws: int,
    *,
    attack: str | Attack = "majority",
    seed: int = 0,
    confidence: float = 0.95,
    dtype: str = "float64",
    nan_policy: str | None = None,
    params: Any = None,
    progress: bool = False,
    prng: str = PRNG_IMPL,
) -> AuditResult:
    """Runs the ACL 2022 sanity check for one mechanism, epsilon and d.

    Args:
      mechanism: a registered name (see ``mcdp.MECHANISMS``) or a :class:`Mechanism`.
      epsilon: the privacy budget, finite and > 0.
      dim: d, the dimension of ``D = 0^d`` and ``D' = 1^d``.
      draws: mechanism runs per dataset (``1e8`` is accepted).
      attack: a two-outcome attack: ``"majority"`` (default; the paper's) or an
        :class:`~mcdp.attacks.Attack`; the exact loss is known for the majority vote
        only.
      seed: the integer seed; with the same seed the counts do not depend on the
        chunk size.
      confidence: joint confidence of the loss interval.
      dtype: ``"float64"`` (default) or ``"float32"`` (cuts the Laplace tails at ~16 b).
      nan_policy: DPText only: ``"zero"`` (default), ``"resample"`` or ``"nan"``.
      params: the mechanism's parameters; default: its ``calibrate_sanity_check``.
      progress: show a progress bar on a terminal for runs longer than 2 s.
      prng: the stream of the seed: ``"threefry4x32"`` (default) or the faster,
        weaker ``"splitmix64"`` (see :mod:`mcdp.prng`).

    Returns:
      An :class:`~mcdp.records.AuditResult`.

    Raises:
      ValueError: an argument is out of range; the message names it.
    """
    spec = _sanity_spec(
        mechanism, epsilon, dim, attack=attack, seed=seed, confidence=confidence,
        dtype=dtype, nan_policy=nan_policy, params=params, prng=prng,
    )  # fmt: skip
    return run(spec, Draws(draws), progress=progress)


# --- the sanity check to a target width -------------------------------------------


def draws_for_target(
    mechanism: str | Mechanism,
    epsilon: float,
    dim: int,
    target_width: float,
    *,
    attack: str | Attack = "majority",
    confidence: float = 0.95,
    nan_policy: str | None = None,
    params: Any = None,
) -> int | float | None:
    """The draws per dataset that the sanity check needs for a loss interval at most
    ``target_width`` wide, computed before any draw from the exact probabilities.

    Args:
      mechanism: a registered name or a :class:`Mechanism`.
      epsilon: the privacy budget, finite and > 0.
      dim: d.
      target_width: the wanted width of the loss interval, > 0.
      attack: the attack (see :func:`audit`).
      confidence: joint confidence of the interval.
      nan_policy: DPText only.
      params: the mechanism's parameters; default: its ``calibrate_sanity_check``.

    Returns:
      A multiple of :data:`mcdp.sampling.BLOCK_DRAWS` (the width that counts at
      their expectations would give, :func:`mcdp.statistics.draws_for_width`);
      ``inf`` where no number of draws up to
      :data:`mcdp.statistics.SEARCH_LIMIT` reaches the target (every number, where
      the exact loss is infinite); ``None`` where the exact probabilities are not
      known (no closed form, or an attack other than the majority vote).

    Raises:
      ValueError: an argument is out of range; the message names it.
    """
    target_width = _validate.positive("target_width", target_width)
    spec = _sanity_spec(
        mechanism, epsilon, dim, attack=attack, confidence=confidence,
        nan_policy=nan_policy, params=params,
    )  # fmt: skip
    return _draws_for_target(spec, target_width)


def audit_to_width_iter(
    mechanism: str | Mechanism,
    epsilon: float,
    dim: int,
    target_width: float,
    *,
    max_draws: int = MAX_DRAWS,
    first_draws: int = FIRST_DRAWS,
    attack: str | Attack = "majority",
    seed: int = 0,
    confidence: float = 0.95,
    dtype: str = "float64",
    nan_policy: str | None = None,
    params: Any = None,
    prng: str = PRNG_IMPL,
) -> Iterator[TargetWidthResult]:
    """Like :func:`audit_to_width`, but yields a result after every compiled call.

    Every item but the last has ``audit.interrupted`` set (the run goes on); an item
    that ends a round has ``audit.draws == round_draws``.
    """
    stop = TargetWidth(target_width, max_draws, first_draws)
    spec = _sanity_spec(
        mechanism, epsilon, dim, attack=attack, seed=seed, confidence=confidence,
        dtype=dtype, nan_policy=nan_policy, params=params, prng=prng,
    )  # fmt: skip
    return run_iter(spec, stop)


def audit_to_width(
    mechanism: str | Mechanism,
    epsilon: float,
    dim: int,
    target_width: float,
    *,
    max_draws: int = MAX_DRAWS,
    first_draws: int = FIRST_DRAWS,
    attack: str | Attack = "majority",
    seed: int = 0,
    confidence: float = 0.95,
    dtype: str = "float64",
    nan_policy: str | None = None,
    params: Any = None,
    progress: bool = False,
    prng: str = PRNG_IMPL,
) -> TargetWidthResult:
    """Runs the sanity check in rounds until the loss interval is at most
    ``target_width`` wide or ``max_draws`` draws per dataset are done.

    Each round goes on from the counts of the one before (nothing is drawn twice)
    and ends on a whole number of :data:`mcdp.sampling.BLOCK_DRAWS` blocks, except
    a last round cut at ``max_draws``; the counts after ``n`` draws are those of
    ``audit(..., draws=n)`` with the same seed. The first round has ``first_draws``
    (rounded up to whole blocks); after a round whose interval is too wide, the
    next one ends where the counts predict the target is met
    (:func:`mcdp.statistics.draws_needed`), at least at twice the draws so far and
    at most at ``max_draws``. The target is checked only at the end of a round, so
    where a run stops depends on the counts alone, not on devices or call sizes.

    Args:
      mechanism: a registered name (see ``mcdp.MECHANISMS``) or a :class:`Mechanism`.
      epsilon: the privacy budget, finite and > 0.
      dim: d, the dimension of ``D = 0^d`` and ``D' = 1^d``.
      target_width: the wanted width of the loss interval, ``loss_upper -
        loss_lower``, > 0.
      max_draws: the budget, draws per dataset (default 1e10).
      first_draws: draws per dataset of the first round (default 2**17),
        at most ``max_draws``.
      attack: a two-outcome attack (see :func:`audit`).
      seed: the integer seed.
      confidence: joint confidence of the loss interval.
      dtype: ``"float64"`` (default) or ``"float32"``.
      nan_policy: DPText only: ``"zero"`` (default), ``"resample"`` or ``"nan"``.
      params: the mechanism's parameters; default: its ``calibrate_sanity_check``.
      progress: show a progress bar of each round on a terminal.
      prng: the stream of the seed (see :func:`audit`).

    Returns:
      A :class:`~mcdp.records.TargetWidthResult`: ``target_met`` false means the
      budget ran out first, and ``draws_needed`` says how many draws the target
      would take.

    Raises:
      ValueError: an argument is out of range; the message names it.
    """
    stop = TargetWidth(target_width, max_draws, first_draws)
    spec = _sanity_spec(
        mechanism, epsilon, dim, attack=attack, seed=seed, confidence=confidence,
        dtype=dtype, nan_policy=nan_policy, params=params, prng=prng,
    )  # fmt: skip
    return run(spec, stop, progress=progress)


# --- (epsilon, delta) audits ------------------------------------------------------


def _delta_spec(mechanism, epsilon, delta, dim, **fields: Any) -> AuditSpec:
    """An (epsilon, delta) audit's spec; ``delta`` and ``dim`` are required."""
    delta = _validate.delta("delta", delta)
    dim = _validate.integer("dim", dim, low=1, high=_validate.MAX_DIM)
    return AuditSpec(mechanism, epsilon, delta=delta, dim=dim, **fields)


def audit_delta_iter(
    mechanism: str | Mechanism,
    epsilon: float,
    delta: float,
    dim: int,
    draws: int,
    *,
    pair: str | np.ndarray = "axis",
    attack: str | Attack = "auto",
    clip: float = 1.0,
    seed: int = 0,
    confidence: float = 0.95,
    dtype: str = "float64",
    params: Any = None,
    profile_epsilons: Sequence[float] = PROFILE_EPSILONS,
    prng: str = PRNG_IMPL,
) -> Iterator[DeltaAuditResult]:
    """Like :func:`audit_delta`, but yields a result after every compiled call (the
    last one is final, the others are marked ``interrupted``)."""
    spec = _delta_spec(
        mechanism, epsilon, delta, dim, pair=pair, attack=attack, clip=clip,
        seed=seed, confidence=confidence, dtype=dtype, params=params,
        profile_epsilons=profile_epsilons, prng=prng,
    )  # fmt: skip
    return run_iter(spec, Draws(draws))


def audit_delta(
    mechanism: str | Mechanism,
    epsilon: float,
    delta: float,
    dim: int,
    draws: int,
    *,
    pair: str | np.ndarray = "axis",
    attack: str | Attack = "auto",
    clip: float = 1.0,
    seed: int = 0,
    confidence: float = 0.95,
    dtype: str = "float64",
    params: Any = None,
    profile_epsilons: Sequence[float] = PROFILE_EPSILONS,
    progress: bool = False,
    prng: str = PRNG_IMPL,
) -> DeltaAuditResult:
    """Audits a claimed (epsilon, delta) on one pair with one attack.

    Every event of the attack gets a Clopper–Pearson interval, Bonferroni-corrected
    over all of them, and the privacy profile :math:`\\delta(\\varepsilon)` is
    bounded from below at every epsilon at once
    (:func:`mcdp.statistics.delta_bounds`). Ctrl-C keeps what is counted: the result
    of the draws so far comes back, marked ``interrupted``.

    Args:
      mechanism: a registered name or a :class:`Mechanism`.
      epsilon, delta: the claim; ``delta`` in [0, 1).
      dim: d.
      draws: outputs per input.
      pair: ``zeros-ones``, ``axis``, ``diagonal``, or a ``(2, d)`` array.
      attack: ``"auto"`` (default: the portfolio of every attack that applies,
        the best on fresh draws counted alone), ``"majority"``, ``"support"``,
        ``"lr"``, ``"learned"``, ``"float-support"`` (see :mod:`mcdp.attacks`) or
        an :class:`~mcdp.attacks.Attack`.
      clip: the clipping radius C of the pair and of the calibration.
      seed: the integer seed.
      confidence: the joint confidence of every bound.
      dtype: ``"float64"`` (default) or ``"float32"``.
      params: the mechanism's parameters; default: ``calibrate(epsilon, delta, d,
        C)`` (``calibrate_sanity_check`` for ``zeros-ones`` or a mechanism without
        ``calibrate``).
      profile_epsilons: where to report the privacy profile (the claimed epsilon is
        always added).
      progress: show a progress bar on a terminal for runs longer than 2 s.
      prng: the stream of the seed: ``"threefry4x32"`` (default) or the faster,
        weaker ``"splitmix64"`` (see :mod:`mcdp.prng`).

    Returns:
      A :class:`~mcdp.records.DeltaAuditResult`; ``violated`` iff ``delta_lower >
      delta``.

    Raises:
      ValueError: an argument is out of range; the message names it.
    """
    spec = _delta_spec(
        mechanism, epsilon, delta, dim, pair=pair, attack=attack, clip=clip,
        seed=seed, confidence=confidence, dtype=dtype, params=params,
        profile_epsilons=profile_epsilons, prng=prng,
    )  # fmt: skip
    return run(spec, Draws(draws), progress=progress)
