r"""Every audit: the sanity check, the sanity check to a target width, and the
(epsilon, delta) audit. Each takes a mechanism (a registered name or a
:class:`~mcdp.mechanisms.Mechanism`) and an attack (a name of
:data:`mcdp.attacks.ATTACKS` or an :class:`~mcdp.attacks.Attack`).

* :func:`audit` / :func:`audit_iter`: the ACL 2022 sanity check on :math:`D = 0^d`
  and :math:`D' = 1^d`; the privacy loss of a two-outcome attack with its interval
  (README, "The estimate").
* :func:`audit_to_width` / :func:`audit_to_width_iter`: the same, in rounds, until
  the loss interval is narrow enough; :func:`draws_for_target` predicts the draws
  before the run.
* :func:`audit_delta` / :func:`audit_delta_iter`: a claimed (epsilon, delta) on one
  pair; the privacy profile :math:`\delta(\varepsilon)` of the attack's events
  (:func:`mcdp.statistics.delta_bounds`).

This module and :mod:`mcdp.cli` are the only places that turn integer seeds into
keys: an audit's key is :func:`mcdp.sampling.cell_key` of the seed and the audit's
identity, so it gives the same counts alone or inside a grid, in any order. An
attack's preparation draws (if any) come from ``fold_in(key, ATTACK_KEY_TAG)``, a
key that the counted draws (``fold_in(fold_in(key, input), block)``) never use.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import jax
import numpy as np

from mcdp import _validate
from mcdp._progress import progress_bar
from mcdp.attacks import MAJORITY_VOTE, get_attack
from mcdp.core.attack import Attack, AttackContext, bind
from mcdp.core.records import (
    AuditResult,
    DeltaAuditResult,
    ProfilePoint,
    TargetWidthResult,
    Tradeoff,
    black_box,
    provenance,
)
from mcdp.exact import ExactE2, exact_e2
from mcdp.mechanisms import MECHANISMS, Mechanism, get_mechanism
from mcdp.pairs import make_pair
from mcdp.sampling import BLOCK_DRAWS, DTYPES, PRNG_IMPL, cell_key, iter_counts
from mcdp.statistics import (
    NUM_ROWS,
    SEARCH_LIMIT,
    DrawsNeeded,
    delta_bounds,
    draws_for_width,
    draws_needed,
    gaussian_dp_mu_lower,
    loss_estimate,
)

SANITY_CHECK = "acl2022"  # the first part of a sanity check's identity: fixed
PROFILE_EPSILONS = tuple(np.round(np.linspace(0.0, 1.0, 11), 10)) + (
    1.5, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0, 20.0, 30.0,
)  # fmt: skip
FIRST_DRAWS = 1 << 17  # the first round of audit_to_width, per dataset
MAX_DRAWS = 10**10  # the budget of audit_to_width, per dataset
ATTACK_KEY_TAG = 0x41545441  # fold_in(key, this): the attack's own draws


def _mechanism(mechanism: str | Mechanism) -> Mechanism:
    if isinstance(mechanism, Mechanism):
        return mechanism
    return get_mechanism(mechanism)


def _bind(
    attack: str | Attack,
    mech: Mechanism,
    pair: np.ndarray,
    params: Any,
    epsilons: Sequence[float],
    dtype: str,
    key: jax.Array,
    **claim: Any,
) -> tuple[Attack, Any]:
    """The attack prepared for this audit, before any counted draw; ``claim`` is
    the context's ``epsilon``, ``delta``, ``draws`` and ``confidence``."""
    context = AttackContext(
        mechanism=mech,
        pair=pair,
        transformed=mech.transformed(pair, params),
        params=params,
        epsilons=tuple(epsilons),
        dtype=dtype,
        key=jax.random.fold_in(key, ATTACK_KEY_TAG),
        **claim,
    )
    return bind(get_attack(attack), context)


# --- the sanity check --------------------------------------------------------------


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


class _SanityCheck(NamedTuple):
    """Everything a sanity check fixes before its first draw."""

    mechanism: Mechanism
    epsilon: float
    dim: int
    nan_policy: str | None
    params: Any
    key: jax.Array
    pair: np.ndarray
    attack: Attack
    aux: Any
    exact: ExactE2 | None
    dtype: str
    prng: str


def _sanity_check(
    mechanism: str | Mechanism,
    epsilon: float,
    dim: int,
    *,
    seed: int,
    nan_policy: str | None,
    params: Any,
    attack: str | Attack,
    dtype: str,
    prng: str,
    draws: int,
    confidence: float,
) -> _SanityCheck:
    mech = _mechanism(mechanism)
    if nan_policy is not None and not mech.nan_policies:
        raise ValueError(
            f"nan_policy (--nan-policy) applies only to mechanisms with NaN policies "
            f"({', '.join(n for n, m in MECHANISMS.items() if m.nan_policies)}), "
            f"not to {mech.name!r}."
        )
    if mech.nan_policies:
        nan_policy = _validate.one_of(
            "nan_policy", nan_policy or mech.nan_policies[0], mech.nan_policies
        )
    if params is None and mech.host_sample is None:  # a callable takes none
        options = {"nan_policy": nan_policy} if mech.nan_policies else {}
        params = mech.sanity_check_params(epsilon, dim, **options)
    identity = (
        f"{SANITY_CHECK}/{mech.name}/{float(epsilon)!r}/{int(dim)}/{nan_policy or ''}"
    )
    key = cell_key(seed, identity, prng)
    pair = make_pair("zeros-ones", dim)
    bound, aux = _bind(
        attack, mech, pair, params, (epsilon,), dtype, key, epsilon=epsilon,
        delta=0.0, draws=draws, confidence=confidence,
    )  # fmt: skip
    if bound.num_outcomes != 2:
        raise ValueError(
            f"Expected a two-outcome attack for the sanity check, got {bound.name!r} "
            f"with {bound.num_outcomes} outcomes; audit_delta takes any attack."
        )
    exact = exact_e2(mech, params, dim) if bound == MAJORITY_VOTE else None
    return _SanityCheck(
        mech, epsilon, dim, nan_policy, params, key, pair, bound, aux, exact, dtype,
        prng,
    )  # fmt: skip


def _count(check: _SanityCheck, draws: int, resume=None):
    return iter_counts(
        check.key,
        check.mechanism,
        check.attack,
        check.pair,
        check.params,
        draws,
        dtype=check.dtype,
        aux=check.aux,
        resume=resume,
    )


def _result(
    check: _SanityCheck,
    draws: int,
    seed: int,
    counts: np.ndarray,
    confidence: float,
    seconds: float,
    interrupted: bool,
) -> AuditResult:
    counts_list = [[int(c) for c in row] for row in counts]
    estimate = loss_estimate(counts_list, confidence)
    mech, exact = check.mechanism, check.exact
    claimed = {"epsilon-DP": check.epsilon, "0-DP": 0.0}.get(mech.claim)
    return AuditResult(
        mechanism=mech.name,
        epsilon=check.epsilon,
        dim=check.dim,
        draws=draws,
        seed=seed,
        counts=counts_list,
        loss=estimate.value,
        loss_lower=estimate.lower,
        loss_upper=estimate.upper,
        confidence=confidence,
        exact=None if exact is None else exact.loss,
        seconds=round(seconds, 4),
        dtype=check.dtype,
        nan_policy=check.nan_policy,
        guess1_rate=[row[1] / draws for row in counts_list],
        exact_guess1=None if exact is None else [exact.p1, exact.q1],
        exact_log_guess1=None if exact is None else [exact.log_p1, exact.log_q1],
        claim=mech.claim,
        violated=None if claimed is None else bool(estimate.lower > claimed),
        interrupted=interrupted,
        attack=check.attack.name,
        epsilon_lower=estimate.lower,
        **black_box(mech),
        **provenance(check.dtype, check.prng),
    )


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
    epsilon, dim, draws, seed, confidence, dtype = validate_audit(
        epsilon, dim, draws, seed, confidence, dtype
    )
    start = time.perf_counter()  # the attack's preparation counts too
    check = _sanity_check(
        mechanism, epsilon, dim, seed=seed, nan_policy=nan_policy, params=params,
        attack=attack, dtype=dtype, prng=prng, draws=draws, confidence=confidence,
    )  # fmt: skip
    for progress in _count(check, draws):
        yield _result(
            check,
            progress.draws,
            seed,
            progress.counts,
            confidence,
            time.perf_counter() - start,
            interrupted=progress.draws < draws,
        )


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
      params: the mechanism's parameters; default: its ``e2_params``.
      progress: show a progress bar on a terminal for runs longer than 2 s.
      prng: the stream of the seed: ``"threefry4x32"`` (default) or the faster,
        weaker ``"splitmix64"`` (see :mod:`mcdp.prng`).

    Returns:
      An :class:`~mcdp.records.AuditResult`.

    Raises:
      ValueError: an argument is out of range; the message names it.
    """
    runs = audit_iter(
        mechanism, epsilon, dim, draws, attack=attack, seed=seed,
        confidence=confidence, dtype=dtype, nan_policy=nan_policy, params=params,
        prng=prng,
    )  # fmt: skip
    with progress_bar(progress, total=int(draws), desc=str(mechanism)) as bar:
        result = None
        for result in runs:
            bar.update(result.draws - bar.n)
    assert result is not None
    return result


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
      params: the mechanism's parameters; default: its ``e2_params``.

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
    epsilon = _validate.positive("epsilon", epsilon)
    dim = _validate.integer("dim", dim, low=1, high=_validate.MAX_DIM)
    confidence = _validate.open_unit("confidence", confidence)
    if get_attack(attack) != MAJORITY_VOTE:
        _mechanism(mechanism)  # a known one, or a one-line error
        return None  # exact probabilities are the majority vote's only
    check = _sanity_check(
        mechanism, epsilon, dim, seed=0, nan_policy=nan_policy, params=params,
        attack=attack, dtype="float64", prng=PRNG_IMPL, draws=MAX_DRAWS,
        confidence=confidence,
    )  # fmt: skip
    if check.exact is None:
        return None
    return draws_for_width(
        check.exact.p1, check.exact.q1, target_width, confidence, step=BLOCK_DRAWS
    )


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
    target_width = _validate.positive("target_width", target_width)
    max_draws = _validate.integer(
        "max_draws", max_draws, low=1, high=_validate.MAX_DRAWS
    )
    first_draws = _validate.integer("first_draws", first_draws, low=1, high=max_draws)
    epsilon, dim, _, seed, confidence, dtype = validate_audit(
        epsilon, dim, first_draws, seed, confidence, dtype
    )
    start = time.perf_counter()  # the attack's preparation counts too
    check = _sanity_check(
        mechanism, epsilon, dim, seed=seed, nan_policy=nan_policy, params=params,
        attack=attack, dtype=dtype, prng=prng, draws=max_draws, confidence=confidence,
    )  # fmt: skip
    exact_needed = None
    if check.exact is not None:
        exact_needed = draws_for_width(
            check.exact.p1, check.exact.q1, target_width, confidence, step=BLOCK_DRAWS
        )
    rounds: list[int] = []
    last = None  # the counts at the end of the last round
    goal = min(max_draws, _whole_blocks(first_draws))
    while True:
        for progress in _count(check, goal, resume=last):
            result = _result(
                check,
                progress.draws,
                seed,
                progress.counts,
                confidence,
                time.perf_counter() - start,
                interrupted=True,
            )
            width = result.width
            needed = draws_needed(
                result.counts, target_width, confidence, step=BLOCK_DRAWS
            )
            done = progress.draws == goal
            if done:
                rounds.append(goal)
                last = progress
            final = done and (width <= target_width or goal >= max_draws)
            if final:
                result = dataclasses.replace(result, interrupted=False)
            yield TargetWidthResult(
                audit=result,
                target_width=target_width,
                max_draws=max_draws,
                round_draws=goal,
                width=width,
                target_met=width <= target_width,
                rounds=list(rounds),
                draws_needed=needed.draws,
                draws_needed_is_lower_bound=needed.lower_bound,
                draws_needed_exact=exact_needed,
                outcome=_outcome(
                    result, width, target_width, max_draws, rounds, needed, final
                ),
            )
        if final:
            return
        # at least double (few rounds whatever the predictions), at most the budget
        goal = min(max_draws, max(2 * goal, needed.draws))


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
      params: the mechanism's parameters; default: its ``e2_params``.
      progress: show a progress bar of each round on a terminal.
      prng: the stream of the seed (see :func:`audit`).

    Returns:
      A :class:`~mcdp.records.TargetWidthResult`: ``target_met`` false means the
      budget ran out first, and ``draws_needed`` says how many draws the target
      would take.

    Raises:
      ValueError: an argument is out of range; the message names it.
    """
    runs = audit_to_width_iter(
        mechanism, epsilon, dim, target_width, max_draws=max_draws,
        first_draws=first_draws, attack=attack, seed=seed, confidence=confidence,
        dtype=dtype, nan_policy=nan_policy, params=params, prng=prng,
    )  # fmt: skip
    with progress_bar(progress, total=0, desc=str(mechanism)) as bar:
        result = None
        for result in runs:
            bar.total = result.round_draws
            bar.update(result.audit.draws - bar.n)
    assert result is not None
    return result


def _whole_blocks(draws: int) -> int:
    return -(-draws // BLOCK_DRAWS) * BLOCK_DRAWS


def _outcome(
    result: AuditResult,
    width: float,
    target_width: float,
    max_draws: int,
    rounds: list[int],
    needed: DrawsNeeded,
    final: bool,
) -> str:
    """The one line that says how the target stands."""
    draws = result.draws
    met = width <= target_width
    shown = "inf" if math.isinf(width) else f"{width:.4g}"
    compare = f"width {shown} {'<=' if met else '>'} {target_width:g}"
    if final and met:
        plural = "s" if len(rounds) > 1 else ""
        return (
            f"target met: {compare} after {len(rounds)} round{plural}, "
            f"{draws:,} draws per dataset"
        )
    if final:
        head = (
            f"target not met: {compare} at the budget of {max_draws:,} draws per "
            "dataset"
        )
    else:
        head = f"interrupted in round {len(rounds) + 1}: {compare} at {draws:,} draws"
        if met:
            return head
    if not math.isfinite(needed.draws):
        return (
            f"{head}; no number of draws up to {SEARCH_LIMIT:.3g} per dataset is "
            "predicted to reach it"
        )
    if not needed.lower_bound:
        return f"{head}; about {needed.draws:,} draws per dataset would be needed"
    (d0, d1), (e0, e1) = result.counts
    empty = []
    rows = (("D", d0, d1, needed.p), ("D'", e0, e1, needed.p_prime))
    for label, zeros, ones, p in rows:
        if ones == 0:
            empty.append(f"guess 1 under {label} (probability below {p:.2g})")
        elif zeros == 0:
            empty.append(f"guess 0 under {label} (probability below {1 - p:.2g})")
    row_confidence = 1 - (1 - result.confidence) / NUM_ROWS
    return (
        f"{head}; never seen: {' and '.join(empty)} at {row_confidence:.1%}, so at "
        f"least about {needed.draws:,} draws per dataset would be needed"
    )


# --- (epsilon, delta) audits ------------------------------------------------------


def audit_delta_iter(
    mechanism: str | Mechanism,
    epsilon: float,
    delta: float,
    dim: int,
    draws: int,
    *,
    pair: str | np.ndarray = "axis",
    attack: str | Attack = "lr",
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
    mech = _mechanism(mechanism)
    epsilon = _validate.positive("epsilon", epsilon)
    delta = _validate.delta("delta", delta)
    dim = _validate.integer("dim", dim, low=1, high=_validate.MAX_DIM)
    draws = _validate.integer("draws", draws, low=1, high=_validate.MAX_DRAWS)
    seed = _validate.integer("seed", seed, low=0, high=_validate.MAX_SEED)
    confidence = _validate.open_unit("confidence", confidence)
    dtype = _validate.one_of("dtype", dtype, DTYPES)
    attack = get_attack(attack)
    clip = _validate.positive("clip", clip)
    if isinstance(pair, str):
        pair_name, xs = pair, make_pair(pair, dim, clip)
    else:
        pair_name, xs = "custom", np.asarray(pair, dtype=np.float64)
        if xs.shape != (2, dim) or not np.all(np.isfinite(xs)):
            raise ValueError(
                f"Expected a finite pair of shape (2, {dim}), got {xs.shape}."
            )
    if params is None and mech.host_sample is None:  # a callable takes none
        if pair_name == "zeros-ones" or mech.calibrate is None:
            params = mech.sanity_check_params(epsilon, dim)
        else:
            params = mech.calibrate(epsilon, delta, dim, clip)
    epsilons = sorted({float(e) for e in profile_epsilons} | {epsilon})
    identity = f"delta/{mech.name}/{epsilon!r}/{delta!r}/{dim}/{pair_name}"
    key = cell_key(seed, identity, prng)
    yield from delta_audit_runs(
        key, mech, epsilon, float(delta), dim, draws, xs, pair_name, attack,
        clip=clip, seed=seed, confidence=confidence, dtype=dtype, params=params,
        epsilons=epsilons, prng=prng,
    )  # fmt: skip


def delta_audit_runs(
    key: jax.Array,
    mech: Mechanism,
    epsilon: float,
    delta: float,
    dim: int,
    draws: int,
    xs: np.ndarray,
    pair_name: str,
    attack: Attack,
    *,
    clip: float,
    seed: int,
    confidence: float,
    dtype: str,
    params: Any,
    epsilons: Sequence[float],
    prng: str,
    exact: bool = True,
) -> Iterator[DeltaAuditResult]:
    """The (epsilon, delta) audit of :func:`audit_delta_iter` on an explicit key
    and validated arguments (``params`` given, ``epsilons`` sorted with the
    claimed one among them); :func:`mcdp.search` gives each audit a key of its
    own. ``seed`` only goes into the records. ``exact=False`` leaves the exact
    values out (``None``): a search's screenings rank by the bounds alone, and
    some exact losses cost more than the screening's counting."""
    start = time.perf_counter()  # the attack's preparation counts too
    bound, aux = _bind(
        attack, mech, xs, params, epsilons, dtype, key, epsilon=epsilon,
        delta=float(delta), draws=draws, confidence=confidence,
    )  # fmt: skip
    attack_seconds = time.perf_counter() - start
    tx = mech.transformed(xs, params)
    host_params = jax.tree.map(np.asarray, params)
    exact_deltas = {
        e: None
        if mech.exact_delta is None or not exact
        else mech.exact_delta(host_params, tx, e)
        for e in epsilons
    }
    epsilon_exact = None
    if mech.exact_epsilon is not None and exact:
        epsilon_exact = mech.exact_epsilon(host_params, tx)
    exact_loss = None
    if pair_name == "zeros-ones" and bound == MAJORITY_VOTE and exact:
        e2 = exact_e2(mech, params, dim)
        exact_loss = None if e2 is None else e2.loss
    runs = iter_counts(key, mech, bound, xs, params, draws, dtype=dtype, aux=aux)
    for progress in runs:
        bounds = delta_bounds(progress.counts, confidence, impossible=bound.impossible)
        profile = [ProfilePoint(e, *bounds.delta(e), exact_deltas[e]) for e in epsilons]
        claimed = next(point for point in profile if point.epsilon == epsilon)
        loss, loss_lower, loss_upper = bounds.loss()
        points = bounds.tradeoff()
        yield DeltaAuditResult(
            mechanism=mech.name,
            epsilon=epsilon,
            dim=dim,
            draws=progress.draws,
            seed=seed,
            pair=pair_name,
            attack=bound.name,
            clip=clip,
            counts=progress.counts.tolist(),
            confidence=confidence,
            loss=loss,
            loss_lower=loss_lower,
            loss_upper=loss_upper,
            exact=exact_loss,
            delta_claimed=float(delta),
            delta_estimate=claimed.delta_estimate,
            delta_lower=claimed.delta_lower,
            delta_upper=claimed.delta_upper,
            delta_exact=claimed.delta_exact,
            violated=bool(claimed.delta_lower > delta),
            profile=profile,
            seconds=round(time.perf_counter() - start, 4),
            dtype=dtype,
            interrupted=progress.draws < draws,
            epsilon_lower=loss_lower,
            epsilon_exact=epsilon_exact,
            attack_seconds=round(attack_seconds, 4),
            events=bound.event_names(),
            tradeoff=Tradeoff(
                points=[list(p) for p in points],
                gdp_mu_lower=gaussian_dp_mu_lower(points),
            ),
            **black_box(mech),
            **provenance(dtype, prng),
        )


def audit_delta(
    mechanism: str | Mechanism,
    epsilon: float,
    delta: float,
    dim: int,
    draws: int,
    *,
    pair: str | np.ndarray = "axis",
    attack: str | Attack = "lr",
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
      attack: ``"majority"``, ``"support"``, ``"lr"`` (see :mod:`mcdp.attacks`) or
        an :class:`~mcdp.attacks.Attack`.
      clip: the clipping radius C of the pair and of the calibration.
      seed: the integer seed.
      confidence: the joint confidence of every bound.
      dtype: ``"float64"`` (default) or ``"float32"``.
      params: the mechanism's parameters; default: ``calibrate(epsilon, delta, d,
        C)`` (``e2_params`` for ``zeros-ones`` or a mechanism without
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
    runs = audit_delta_iter(
        mechanism, epsilon, delta, dim, draws, pair=pair, attack=attack, clip=clip,
        seed=seed, confidence=confidence, dtype=dtype, params=params,
        profile_epsilons=profile_epsilons, prng=prng,
    )  # fmt: skip
    result = None
    with progress_bar(progress, total=int(draws), desc=str(mechanism)) as bar:
        try:
            for result in runs:
                bar.update(result.draws - bar.n)
        except KeyboardInterrupt:  # keep what is counted (both inputs alike)
            if result is None:
                raise
    assert result is not None
    return result
