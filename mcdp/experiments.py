"""Experiments: one audit (a cell), one audit to a target width in rounds, and the
ACL 2022 grid with resumable JSON output.

This module and :mod:`mcdp.cli` are the only places that turn integer seeds into
keys. A cell's key is ``fold_in(key(seed), cell_id)`` where ``cell_id`` is a stable
hash of the cell's identity (experiment, mechanism, epsilon, d, NaN policy), so a
cell gives the same counts whether it runs alone (``mcdp audit``) or inside a grid,
in any order.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from mcdp import _validate
from mcdp._provenance import provenance
from mcdp.analytic import ExactE2, exact_e2
from mcdp.estimators import MAJORITY_VOTE
from mcdp.mechanisms import MECHANISMS, Mechanism, get_mechanism
from mcdp.sampling import BLOCK_DRAWS, DTYPES, PRNG_IMPL, PRNG_IMPLS, iter_counts
from mcdp.sampling import key as sampling_key
from mcdp.statistics import (
    NUM_ROWS,
    SEARCH_LIMIT,
    DrawsNeeded,
    draws_for_width,
    draws_needed,
    loss_estimate,
)

EXPERIMENT = "acl2022"
ACL2022_MECHANISMS = ("laplace", "adept", "dptext", "none", "random")
ACL2022_EPSILONS = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
ACL2022_DIMS = (1, 2, 8, 32, 64, 128)
META_KEY = "_meta"
PRIME_LABEL = "D' = 1^d"
FIRST_DRAWS = 1 << 17  # the first round of audit_to_width, per dataset
MAX_DRAWS = 10**10  # the budget of audit_to_width, per dataset


@dataclasses.dataclass(frozen=True)
class AuditResult:
    """One cell of the sanity check (SPEC E2): counts, estimate, bounds, exact value.

    ``counts`` is ``[[D→0, D→1], [D'→0, D'→1]]``; ``loss`` is the MLE privacy loss of
    the majority-vote attack with the interval ``[loss_lower, loss_upper]`` at
    ``confidence``; ``exact`` is the exact loss of the attack (``None`` where not
    known). ``violated`` is true when ``loss_lower`` exceeds the claimed epsilon.
    """

    mechanism: str
    epsilon: float
    dim: int
    draws: int
    seed: int
    counts: list[list[int]]
    loss: float
    loss_lower: float
    loss_upper: float
    confidence: float
    exact: float | None
    seconds: float
    dtype: str
    nan_policy: str | None
    guess1_rate: list[float]
    exact_guess1: list[float] | None
    exact_log_guess1: list[float] | None
    claim: str
    violated: bool | None
    interrupted: bool
    mcdp_version: str
    jax_version: str
    backend: str
    x64: bool
    prng_impl: str  # the stream of the seed (mcdp.prng.STREAMS)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        """One JSON object; infinities are written as ``Infinity``."""
        return json.dumps(self.to_dict(), allow_nan=True)

    def __str__(self) -> str:
        (d0, d1), (e0, e1) = self.counts
        width = max(len(f"{c:,}") for c in (d0, d1, e0, e1, 10**7))
        exact = "unknown" if self.exact is None else _fmt(self.exact)
        head = f"{self.mechanism}" + (
            f" (NaN policy {self.nan_policy})" if self.nan_policy else ""
        )
        lines = [
            f"{head}, epsilon = {self.epsilon:g}, d = {self.dim}: "
            f"{self.draws:,} draws per dataset (seed {self.seed}, {self.dtype})",
            f"{'':12}{'guess 0':>{width}}  {'guess 1':>{width}}",
            f"{'D  = 0^d':12}{d0:>{width},}  {d1:>{width},}",
            f"{PRIME_LABEL:12}{e0:>{width},}  {e1:>{width},}",
            f"privacy loss {_fmt(self.loss)}  "
            f"[{_fmt(self.loss_lower)}, {_fmt(self.loss_upper)}] "
            f"({self.confidence:.0%} CI)   exact {exact}",
        ]
        if self.violated is not None:
            verdict = (
                f"violated: the lower bound {_fmt(self.loss_lower)} exceeds epsilon"
                if self.violated
                else "not refuted by this attack"
            )
            lines.append(f"claim {self.claim}: {verdict}")
        if self.interrupted:
            lines.append("interrupted: the counts above are those finished so far")
        lines.append(f"{self.seconds:.1f} s on {self.backend}")
        return "\n".join(lines)


def _fmt(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value:.4g}"


def cell_id(mechanism: str, epsilon: float, dim: int, nan_policy: str | None) -> int:
    """Stable 32-bit identity of a cell, used to derive its key from the seed."""
    text = f"{EXPERIMENT}/{mechanism}/{float(epsilon)!r}/{int(dim)}/{nan_policy or ''}"
    return zlib.crc32(text.encode())


def _resolve(
    mechanism: str | Mechanism, nan_policy: str | None
) -> tuple[Mechanism, str | None]:
    mech = mechanism if isinstance(mechanism, Mechanism) else get_mechanism(mechanism)
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
    return mech, nan_policy


def _cell(
    mechanism: str | Mechanism,
    epsilon: float,
    dim: int,
    nan_policy: str | None,
    params: Any,
) -> tuple[Mechanism, str | None, Any]:
    """The mechanism, NaN policy and parameters of a cell (default: E2's)."""
    mech, nan_policy = _resolve(mechanism, nan_policy)
    if params is None:
        options = {"nan_policy": nan_policy} if mech.nan_policies else {}
        params = mech.e2_params(epsilon, dim, **options)
    return mech, nan_policy, params


def _cell_inputs(
    mech: Mechanism,
    epsilon: float,
    dim: int,
    seed: int,
    nan_policy: str | None,
    prng: str,
) -> tuple[jax.Array, np.ndarray]:
    """The cell's key, ``fold_in(key(seed), cell_id)``, and its inputs, 0^d and 1^d."""
    key = jax.random.fold_in(
        sampling_key(seed, prng), cell_id(mech.name, epsilon, dim, nan_policy)
    )
    return key, np.stack([np.zeros(dim), np.ones(dim)])


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


def audit_iter(
    mechanism: str | Mechanism,
    epsilon: float,
    dim: int,
    draws: int,
    *,
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
    mech, nan_policy, params = _cell(mechanism, epsilon, dim, nan_policy, params)
    exact = exact_e2(mech, params, dim)
    key, xs = _cell_inputs(mech, epsilon, dim, seed, nan_policy, prng)
    start = time.perf_counter()
    for progress in iter_counts(
        key, mech, MAJORITY_VOTE, xs, params, draws, dtype=dtype
    ):
        yield _result(
            mech,
            epsilon,
            dim,
            progress.draws,
            seed,
            progress.counts,
            confidence,
            exact,
            time.perf_counter() - start,
            dtype,
            nan_policy,
            prng,
            interrupted=progress.draws < draws,
        )


def audit(
    mechanism: str | Mechanism,
    epsilon: float,
    dim: int,
    draws: int,
    *,
    seed: int = 0,
    confidence: float = 0.95,
    dtype: str = "float64",
    nan_policy: str | None = None,
    params: Any = None,
    progress: bool = False,
    prng: str = PRNG_IMPL,
) -> AuditResult:
    """Runs the ACL 2022 sanity check (SPEC E2) for one mechanism, epsilon and d.

    Args:
      mechanism: a registered name (see ``mcdp.MECHANISMS``) or a :class:`Mechanism`.
      epsilon: the privacy budget, finite and > 0.
      dim: d, the dimension of ``D = 0^d`` and ``D' = 1^d``.
      draws: mechanism runs per dataset (``1e8`` is accepted).
      seed: the integer seed; with the same seed the counts do not depend on the
        chunk size.
      confidence: joint confidence of the loss interval.
      dtype: ``"float64"`` (default) or ``"float32"`` (cuts the Laplace tails at ~16 b).
      nan_policy: DPText only: ``"zero"`` (default), ``"resample"`` or ``"nan"``.
      params: the mechanism's parameters; default: its E2 convention.
      progress: show a progress bar on a terminal for runs longer than 2 s.
      prng: the stream of the seed: ``"threefry4x32"`` (default) or the faster,
        weaker ``"splitmix64"`` (see :mod:`mcdp.prng`).

    Returns:
      An :class:`AuditResult`.

    Raises:
      ValueError: an argument is out of range; the message names it.
    """
    runs = audit_iter(
        mechanism,
        epsilon,
        dim,
        draws,
        seed=seed,
        confidence=confidence,
        dtype=dtype,
        nan_policy=nan_policy,
        params=params,
        prng=prng,
    )
    with _progress_bar(progress, total=int(draws), desc=str(mechanism)) as bar:
        result = None
        for result in runs:
            bar.update(result.draws - bar.n)
    assert result is not None
    return result


def _progress_bar(enabled: bool, total: int, desc: str):
    from tqdm.auto import tqdm

    return tqdm(
        total=total,
        desc=desc,
        unit="draw",
        unit_scale=True,
        delay=2.0,
        disable=None if enabled else True,
        leave=False,
        dynamic_ncols=True,
    )


def _result(
    mech: Mechanism,
    epsilon: float,
    dim: int,
    draws: int,
    seed: int,
    counts: np.ndarray,
    confidence: float,
    exact: ExactE2 | None,
    seconds: float,
    dtype: str,
    nan_policy: str | None,
    prng: str,
    interrupted: bool,
) -> AuditResult:
    counts_list = [[int(c) for c in row] for row in counts]
    estimate = loss_estimate(counts_list, confidence)
    claimed = {"epsilon-DP": epsilon, "0-DP": 0.0}.get(mech.claim)
    return AuditResult(
        mechanism=mech.name,
        epsilon=epsilon,
        dim=dim,
        draws=draws,
        seed=seed,
        counts=counts_list,
        loss=estimate.value,
        loss_lower=estimate.lower,
        loss_upper=estimate.upper,
        confidence=confidence,
        exact=None if exact is None else exact.loss,
        seconds=round(seconds, 4),
        dtype=dtype,
        nan_policy=nan_policy,
        guess1_rate=[row[1] / draws for row in counts_list],
        exact_guess1=None if exact is None else [exact.p1, exact.q1],
        exact_log_guess1=None if exact is None else [exact.log_p1, exact.log_q1],
        claim=mech.claim,
        violated=None if claimed is None else bool(estimate.lower > claimed),
        interrupted=interrupted,
        **provenance(dtype, prng),
    )


# --- audits to a target width ------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class TargetWidthResult:
    """An audit run in rounds until its loss interval is at most ``target_width`` wide.

    ``audit`` holds the counts and the estimate: the same :class:`AuditResult` as
    ``audit(..., draws=audit.draws)`` with the same seed (``seconds`` and
    ``interrupted`` aside). The other fields say how the target stands:

    * ``width``: ``loss_upper - loss_lower`` of these counts; ``target_met`` is
      ``width <= target_width``.
    * ``rounds``: the draws per dataset at the end of every finished round;
      ``round_draws`` the end of the round under way (of the last one when done).
    * ``draws_needed``: the draws per dataset, counted from the start, that these
      counts predict for the target (:func:`mcdp.statistics.draws_needed`), ``inf``
      where none up to :data:`mcdp.statistics.SEARCH_LIMIT` would do. When a cell is
      still 0, ``draws_needed_is_lower_bound`` is true: the prediction assumes the
      largest probability of that cell that the counts allow, and rarer cells need
      more draws.
    * ``draws_needed_exact``: the same prediction from the exact probabilities,
      known before the run (``None`` where the mechanism has no closed form).
    * ``outcome``: all of this in one line.
    """

    audit: AuditResult
    target_width: float
    max_draws: int
    round_draws: int
    width: float
    target_met: bool
    rounds: list[int]
    draws_needed: int | float
    draws_needed_is_lower_bound: bool
    draws_needed_exact: int | float | None
    outcome: str

    def to_dict(self) -> dict[str, Any]:
        """The audit's fields, then this record's own (``audit`` is not a key)."""
        own = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        del own["audit"]
        return self.audit.to_dict() | own

    def to_json(self) -> str:
        """One JSON object; infinities are written as ``Infinity``."""
        return json.dumps(self.to_dict(), allow_nan=True)

    def round_line(self) -> str:
        """One line on the counts: round, draws, loss interval and width."""
        a = self.audit
        return (
            f"round {len(self.rounds)}: {a.draws:>15,} draws per dataset, loss "
            f"{_fmt(a.loss)} [{_fmt(a.loss_lower)}, {_fmt(a.loss_upper)}], "
            f"width {_fmt(self.width)}"
        )

    def __str__(self) -> str:
        return f"{self.audit}\n{self.outcome}"


def draws_for_target(
    mechanism: str | Mechanism,
    epsilon: float,
    dim: int,
    target_width: float,
    *,
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
      confidence: joint confidence of the interval.
      nan_policy: DPText only.
      params: the mechanism's parameters; default: its E2 convention.

    Returns:
      A multiple of :data:`mcdp.sampling.BLOCK_DRAWS` (the width that counts at
      their expectations would give, :func:`mcdp.statistics.draws_for_width`);
      ``inf`` where no number of draws up to
      :data:`mcdp.statistics.SEARCH_LIMIT` reaches the target (every number, where
      the exact loss is infinite); ``None`` where the mechanism has no closed form.

    Raises:
      ValueError: an argument is out of range; the message names it.
    """
    target_width = _validate.positive("target_width", target_width)
    epsilon = _validate.positive("epsilon", epsilon)
    dim = _validate.integer("dim", dim, low=1, high=_validate.MAX_DIM)
    confidence = _validate.open_unit("confidence", confidence)
    mech, _, params = _cell(mechanism, epsilon, dim, nan_policy, params)
    exact = exact_e2(mech, params, dim)
    if exact is None:
        return None
    return draws_for_width(
        exact.p1, exact.q1, target_width, confidence, step=BLOCK_DRAWS
    )


def audit_to_width_iter(
    mechanism: str | Mechanism,
    epsilon: float,
    dim: int,
    target_width: float,
    *,
    max_draws: int = MAX_DRAWS,
    first_draws: int = FIRST_DRAWS,
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
    mech, nan_policy, params = _cell(mechanism, epsilon, dim, nan_policy, params)
    exact = exact_e2(mech, params, dim)
    key, xs = _cell_inputs(mech, epsilon, dim, seed, nan_policy, prng)
    exact_needed = None
    if exact is not None:
        exact_needed = draws_for_width(
            exact.p1, exact.q1, target_width, confidence, step=BLOCK_DRAWS
        )
    start = time.perf_counter()
    rounds: list[int] = []
    last = None  # the counts at the end of the last round
    goal = min(max_draws, _whole_blocks(first_draws))
    while True:
        for progress in iter_counts(
            key, mech, MAJORITY_VOTE, xs, params, goal, dtype=dtype, resume=last
        ):
            result = _result(
                mech,
                epsilon,
                dim,
                progress.draws,
                seed,
                progress.counts,
                confidence,
                exact,
                time.perf_counter() - start,
                dtype,
                nan_policy,
                prng,
                interrupted=True,
            )
            width = _width(result)
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
    seed: int = 0,
    confidence: float = 0.95,
    dtype: str = "float64",
    nan_policy: str | None = None,
    params: Any = None,
    progress: bool = False,
    prng: str = PRNG_IMPL,
) -> TargetWidthResult:
    """Runs the sanity check (SPEC E2) in rounds until the loss interval is at most
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
      seed: the integer seed.
      confidence: joint confidence of the loss interval.
      dtype: ``"float64"`` (default) or ``"float32"``.
      nan_policy: DPText only: ``"zero"`` (default), ``"resample"`` or ``"nan"``.
      params: the mechanism's parameters; default: its E2 convention.
      progress: show a progress bar of each round on a terminal.
      prng: the stream of the seed (see :func:`audit`).

    Returns:
      A :class:`TargetWidthResult`: ``target_met`` false means the budget ran out
      first, and ``draws_needed`` says how many draws the target would take.

    Raises:
      ValueError: an argument is out of range; the message names it.
    """
    runs = audit_to_width_iter(
        mechanism,
        epsilon,
        dim,
        target_width,
        max_draws=max_draws,
        first_draws=first_draws,
        seed=seed,
        confidence=confidence,
        dtype=dtype,
        nan_policy=nan_policy,
        params=params,
        prng=prng,
    )
    with _progress_bar(progress, total=0, desc=str(mechanism)) as bar:
        result = None
        for result in runs:
            bar.total = result.round_draws
            bar.update(result.audit.draws - bar.n)
    assert result is not None
    return result


def _whole_blocks(draws: int) -> int:
    return -(-draws // BLOCK_DRAWS) * BLOCK_DRAWS


def _width(result: AuditResult) -> float:
    if math.isinf(result.loss_upper):
        return math.inf
    return result.loss_upper - result.loss_lower


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
    compare = f"width {_fmt(width)} {'<=' if met else '>'} {target_width:g}"
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


# --- the grid -------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class GridSpec:
    """The cells of the ACL 2022 grid and the settings shared by all of them."""

    draws: int
    mechanisms: Sequence[str] = ACL2022_MECHANISMS
    epsilons: Sequence[float] = ACL2022_EPSILONS
    dims: Sequence[int] = ACL2022_DIMS
    seed: int = 0
    confidence: float = 0.95
    dtype: str = "float64"
    experiment: str = EXPERIMENT
    prng: str = PRNG_IMPL

    def validated(self) -> GridSpec:
        """Checks every field; raises a one-line :class:`ValueError`."""
        if not (self.mechanisms and self.epsilons and self.dims):
            raise ValueError(
                "Expected at least one mechanism, epsilon and dim in the grid."
            )
        for name in self.mechanisms:
            get_mechanism(name)
        return dataclasses.replace(
            self,
            mechanisms=tuple(self.mechanisms),
            epsilons=tuple(_validate.positive("epsilons", e) for e in self.epsilons),
            dims=tuple(
                _validate.integer("dims", d, low=1, high=_validate.MAX_DIM)
                for d in self.dims
            ),
            draws=_validate.integer(
                "draws", self.draws, low=1, high=_validate.MAX_DRAWS
            ),
            seed=_validate.integer("seed", self.seed, low=0, high=_validate.MAX_SEED),
            confidence=_validate.open_unit("confidence", self.confidence),
            dtype=_validate.one_of("dtype", self.dtype, DTYPES),
            prng=_validate.one_of("prng", self.prng, PRNG_IMPLS),
        )

    def meta(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment,
            "draws": self.draws,
            "seed": self.seed,
            "confidence": self.confidence,
            "dtype": self.dtype,
            "prng_impl": self.prng,  # a grid never mixes two streams
        }

    def cells(self) -> list[tuple[str, float, int]]:
        return [
            (m, e, d) for m in self.mechanisms for e in self.epsilons for d in self.dims
        ]


def eps_key(epsilon: float) -> str:
    """JSON key of an epsilon, as in the reference ``results.json`` ("1.0", "0.1")."""
    return repr(float(epsilon))


def load_resumable(path: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """Reads a result file to resume, or starts one with ``meta`` if ``path`` does
    not exist. Raises :class:`ValueError` (naming ``--out``) if the file is not a
    grid of ``meta["experiment"]`` with exactly the settings in ``meta``."""
    if not path.exists():
        return {META_KEY: dict(meta)}
    experiment = meta["experiment"]
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(
            f"--out {path} exists and is not a JSON grid file ({err})."
        ) from None
    found = data.get(META_KEY) if isinstance(data, dict) else None
    if not isinstance(found, dict) or found.get("experiment") != experiment:
        article = "an" if experiment[0] in "aeiou" else "a"
        raise ValueError(
            f"--out {path} exists and is not {article} {experiment} grid file; "
            "choose another file."
        )
    for field, wanted in meta.items():
        if found.get(field) != wanted:
            raise ValueError(
                f"--out {path} holds a grid with {field}={found.get(field)!r}, not "
                f"{wanted!r}; choose another file or the same settings to resume."
            )
    return data


def load_grid(path: Path, spec: GridSpec) -> dict[str, Any]:
    """:func:`load_resumable` for the ACL 2022 grid; its cells must be audit
    records."""
    data = load_resumable(path, spec.meta())
    for mech, by_eps in data.items():
        if mech != META_KEY and not _is_grid_entry(by_eps):
            raise ValueError(
                f"--out {path}: the entry {mech!r} is not a grid of audit records."
            )
    return data


def _is_grid_entry(by_eps: object) -> bool:
    """``{epsilon: {d: record}}`` with records that have exactly the audit fields."""
    fields = {f.name for f in dataclasses.fields(AuditResult)}
    return isinstance(by_eps, dict) and all(
        isinstance(by_dim, dict)
        and all(
            isinstance(cell, dict) and set(cell) == fields for cell in by_dim.values()
        )
        for by_dim in by_eps.values()
    )


def _write_atomic(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=2, allow_nan=True)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def run_grid(
    spec: GridSpec,
    out: str | os.PathLike,
    *,
    progress: bool = False,
    on_cell: Callable[[AuditResult, bool], None] | None = None,
) -> dict[str, Any]:
    """Runs every cell of ``spec`` not yet in ``out``, writing ``out`` atomically after
    each cell, so an interrupted run resumes where it stopped.

    The file is keyed ``mechanism → epsilon → d`` like the reference
    ``results.json`` (epsilon keys as ``"1.0"``, d keys as ``"8"``), each cell an
    :class:`AuditResult` as a dict, plus one ``"_meta"`` entry with the settings.

    ``on_cell(result, resumed)`` is called for every cell, finished or skipped.
    """
    spec = spec.validated()
    path = Path(out)
    data = load_grid(path, spec)
    todo = []
    for mech, eps, dim in spec.cells():
        cell = data.get(mech, {}).get(eps_key(eps), {}).get(str(dim))
        if cell is not None and not cell.get("interrupted", False):
            if on_cell is not None:
                on_cell(AuditResult(**cell), True)
        else:
            todo.append((mech, eps, dim))
    total = sum(spec.draws * dim for _, _, dim in todo)
    with _progress_bar(progress, total=total, desc=spec.experiment) as bar:
        for mech, eps, dim in todo:
            bar.set_postfix_str(f"{mech} eps={eps:g} d={dim}")
            done = bar.n
            result = None
            for result in audit_iter(
                mech,
                eps,
                dim,
                spec.draws,
                seed=spec.seed,
                confidence=spec.confidence,
                dtype=spec.dtype,
                prng=spec.prng,
            ):
                bar.update(done + result.draws * dim - bar.n)
            assert result is not None
            data.setdefault(mech, {}).setdefault(eps_key(eps), {})[str(dim)] = (
                result.to_dict()
            )
            _write_atomic(path, data)
            if on_cell is not None:
                on_cell(result, False)
    return data
