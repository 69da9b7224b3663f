r"""Running an :class:`~mcdp.spec.AuditSpec`: :func:`run` and :func:`run_iter`.

Every audit goes the same way: the spec's attack is prepared (``prepare``) on draws
of its own, the counted draws go through the one counting loop
(:func:`mcdp.sampling.iter_counts`, on the spec's engine), and each step's counts
become a record: the sanity check's :class:`~mcdp.core.records.AuditResult` (run to
a :class:`~mcdp.spec.Draws` or a :class:`~mcdp.spec.TargetWidth`), or the
(epsilon, delta) audit's :class:`~mcdp.core.records.DeltaAuditResult`. The
statistics are those of :mod:`mcdp.statistics`.

An attack's preparation draws (if any) come from ``fold_in(key, ATTACK_KEY_TAG)``,
a key that the counted draws (``fold_in(fold_in(key, input), block)``) never use.
Ctrl-C keeps what is counted: :func:`run` returns the result of the draws so far,
marked ``interrupted``; :func:`run_iter`'s last item before the interrupt is that
result.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax
import numpy as np

from mcdp import _compilation_cache
from mcdp._files import write_atomic
from mcdp._progress import progress_bar
from mcdp.attacks import MAJORITY_VOTE
from mcdp.core.attack import Attack, AttackContext, bind
from mcdp.core.datasets import Datasets
from mcdp.core.records import (
    AuditResult,
    DeltaAuditResult,
    ProfilePoint,
    TargetWidthResult,
    Tradeoff,
    black_box,
    provenance,
)
from mcdp.core.releases import summary
from mcdp.engines.base import BLOCK_DRAWS, Engine, Progress
from mcdp.engines.cluster import cluster_engine
from mcdp.exact import ExactE2, exact_e2
from mcdp.sampling import cell_key, iter_counts
from mcdp.spec import AuditSpec, Draws, Stop, TargetWidth
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

ATTACK_KEY_TAG = 0x41545441  # fold_in(key, this): the attack's own draws
SUMMARY_DRAWS = 4096  # releases per dataset that the record's summary is read from
SAVE_SECONDS = 5.0  # a resume file is written at least this often, and at the end

Result = AuditResult | TargetWidthResult | DeltaAuditResult


def run_iter(
    spec: AuditSpec, stop: Stop, *, resume: str | Path | None = None
) -> Iterator[Result]:
    """Runs ``spec`` until ``stop``, yielding a result after every engine step: the
    last one is final, the others are marked ``interrupted`` (``audit.interrupted``
    for a :class:`~mcdp.spec.TargetWidth` run).

    ``resume`` names a file that keeps the counts of a run to ``Draws(n)``: written
    after the first step, then every :data:`SAVE_SECONDS`, and when the run ends
    (finished, interrupted, or its engine lost); read when the run starts, which
    then goes on from there, to the counts of one run from the start. A file of
    another audit is refused.

    Raises:
      ValueError: a :class:`~mcdp.spec.TargetWidth` for an (epsilon, delta) audit
        or with ``resume``, an attack that does not fit the audit, or a resume
        file of another audit; the message names it.
    """
    _compilation_cache.enable()
    if not isinstance(spec, AuditSpec):
        raise ValueError(f"Expected spec to be an mcdp.AuditSpec, got {spec!r}.")
    if not isinstance(stop, Draws | TargetWidth):
        raise ValueError(
            f"Expected stop to be mcdp.Draws(n) or mcdp.TargetWidth(width), got "
            f"{stop!r}."
        )
    if isinstance(stop, TargetWidth):
        if not spec.sanity_check:
            raise ValueError(
                "A TargetWidth (--target-width) applies to the sanity check, not to "
                "(epsilon, delta) audits: stop them with Draws(n)."
            )
        if resume is not None:
            raise ValueError("A resume file keeps runs to Draws(n), not TargetWidth.")
        return _to_width(spec, stop)
    path = None if resume is None else Path(resume)
    if spec.sanity_check:
        return _sanity_check(spec, stop.n, path)
    return _delta_audit(spec, stop.n, path)


def run(
    spec: AuditSpec,
    stop: Stop,
    *,
    progress: bool = False,
    resume: str | Path | None = None,
) -> Result:
    """Runs ``spec`` until ``stop`` and returns the final result (see
    :func:`run_iter`, which says what ``resume`` keeps); ``progress`` shows a bar
    on a terminal for runs longer than 2 s. On Ctrl-C, the result of the draws
    counted so far comes back, marked ``interrupted``."""
    runs = run_iter(spec, stop, resume=resume)
    name = spec.plan.mechanism.name
    total = stop.n if isinstance(stop, Draws) else None
    result = None
    with progress_bar(progress, total=total, desc=name) as bar:
        try:
            for result in runs:
                audit = getattr(result, "audit", result)  # a TargetWidthResult's
                if isinstance(result, TargetWidthResult):
                    bar.total = result.round_draws
                bar.update(audit.draws - bar.n)
        except KeyboardInterrupt:  # keep what is counted (both inputs alike)
            if result is None:
                raise
    assert result is not None
    return result


def key_of(spec: AuditSpec) -> jax.Array:
    """The key of ``spec``'s draws: its ``key``, or :func:`mcdp.sampling.cell_key`
    of its seed and identity."""
    if spec.key is not None:
        return spec.key
    return cell_key(spec.seed, spec.identity, spec.prng)


def engine_of(spec: AuditSpec) -> Engine | None:
    """Where ``spec``'s draws run: its engine, the cluster engine of its scheduler,
    or ``None`` for the mechanism's default."""
    if spec.scheduler is not None:
        return cluster_engine(spec.scheduler)
    return spec.engine


def _bind(spec: AuditSpec, key: jax.Array, draws: int) -> tuple[Attack, Any]:
    """The spec's attack prepared for this audit, before any counted draw."""
    plan = spec.plan
    mech = plan.mechanism
    context = AttackContext(
        mechanism=mech,
        pair=plan.pair,
        transformed=plan.transformed,
        params=plan.params,
        epsilons=plan.epsilons,
        dtype=spec.dtype,
        key=jax.random.fold_in(key, ATTACK_KEY_TAG),
        epsilon=spec.epsilon,
        delta=0.0 if spec.delta is None else float(spec.delta),
        draws=draws,
        confidence=spec.confidence,
        engine=engine_of(spec),
    )
    return bind(plan.attack, context)


def _counts(
    spec: AuditSpec,
    key: jax.Array,
    attack: Attack,
    aux: Any,
    draws: int,
    resume: Progress | None = None,
    path: Path | None = None,
) -> Iterator[Progress]:
    """The counting loop on ``spec``'s engine; with a resume file ``path``, from the
    counts it keeps, which it keeps up to date."""
    plan = spec.plan
    if path is None:
        yield from iter_counts(
            key, plan.mechanism, attack, plan.pair, plan.params, draws,
            dtype=spec.dtype, aux=aux, resume=resume, engine=engine_of(spec),
        )  # fmt: skip
        return
    digest = _digest(spec, key, attack, aux)
    last = _load(path, digest, draws)
    if last is not None and last.draws == draws:
        yield last  # finished before
        return
    saved = -math.inf  # the first step is kept at once, then every SAVE_SECONDS
    try:
        for progress in _counts(spec, key, attack, aux, draws, resume=last):
            last = progress
            yield progress
            if time.monotonic() - saved >= SAVE_SECONDS:
                _save(path, digest, spec, progress)
                saved = time.monotonic()
    finally:  # finished, interrupted, or the engine lost: keep what is counted
        if last is not None:
            _save(path, digest, spec, last)


def _digest(spec: AuditSpec, key: jax.Array, attack: Attack, aux: Any) -> str:
    """What a resumed run must share with the one that wrote the file: the key,
    the inputs, the parameters, the attack and its data, the dtype."""
    plan = spec.plan
    h = hashlib.sha256()
    head = [plan.mechanism.name, spec.identity, attack.name, attack.num_outcomes]
    h.update(json.dumps(head + [spec.dtype]).encode())
    leaves = [jax.random.key_data(key), *_inputs(plan.pair)]
    leaves += jax.tree.leaves(plan.params) + jax.tree.leaves(aux)
    for leaf in leaves:
        h.update(np.ascontiguousarray(np.asarray(leaf)).tobytes())
    return h.hexdigest()


def _inputs(pair: Any) -> list[np.ndarray]:
    """The arrays of a pair: its rows, or a dataset audit's two datasets (each with
    its shape, so that datasets of other sizes never share a digest)."""
    if isinstance(pair, Datasets):
        return [
            np.asarray(pair.d.shape),
            pair.d,
            np.asarray(pair.d_prime.shape),
            pair.d_prime,
        ]
    return [pair]


def _load(path: Path, digest: str, draws: int) -> Progress | None:
    """The counts that ``path`` keeps (``None`` where there is no file yet)."""
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
        done, counts = int(data["draws"]), np.asarray(data["counts"], dtype=np.int64)
        theirs = data["digest"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"resume file {path}: cannot read it ({err}).") from None
    if theirs != digest:
        raise ValueError(
            f"resume file {path} keeps the counts of another audit (another key, "
            "pair, parameters or attack): remove it or name another file."
        )
    if done > draws or (done < draws and done % BLOCK_DRAWS):
        raise ValueError(
            f"resume file {path} keeps a run of {done:,} draws per input, which a "
            f"run of {draws:,} cannot go on from: ask for {done:,} or more, in "
            f"whole blocks of {BLOCK_DRAWS}, or name another file."
        )
    return Progress(done, counts)


def _save(path: Path, digest: str, spec: AuditSpec, progress: Progress) -> None:
    write_atomic(
        path,
        {
            "mcdp_resume": 1,
            "digest": digest,
            "mechanism": spec.plan.mechanism.name,
            "identity": spec.identity,
            "draws": progress.draws,
            "counts": progress.counts.tolist(),
        },
    )


# --- the sanity check --------------------------------------------------------------


class _Prepared:
    """A sanity check's attack, bound before its first draw, and its exact
    reference."""

    def __init__(self, spec: AuditSpec, draws: int):
        self.key = key_of(spec)
        self.attack, self.aux = _bind(spec, self.key, draws)
        if self.attack.num_outcomes != 2:
            raise ValueError(
                f"Expected a two-outcome attack for the sanity check, got "
                f"{self.attack.name!r} with {self.attack.num_outcomes} outcomes; an "
                "(epsilon, delta) audit (audit_delta, a spec with delta) takes any "
                "attack."
            )
        plan = spec.plan
        self.exact: ExactE2 | None = None
        if self.attack == MAJORITY_VOTE and spec.exact:
            self.exact = exact_e2(plan.mechanism, plan.params, plan.dim)


def _sanity_check(
    spec: AuditSpec, draws: int, path: Path | None
) -> Iterator[AuditResult]:
    start = time.perf_counter()  # the attack's preparation counts too
    prepared = _Prepared(spec, draws)
    counts = _counts(
        spec, prepared.key, prepared.attack, prepared.aux, draws, path=path
    )
    with contextlib.closing(counts):  # a stopped run saves its counts at once
        for progress in counts:
            yield _audit_result(
                spec, prepared, progress, time.perf_counter() - start,
                interrupted=progress.draws < draws,
            )  # fmt: skip


def _audit_result(
    spec: AuditSpec,
    prepared: _Prepared,
    progress: Progress,
    seconds: float,
    interrupted: bool,
) -> AuditResult:
    counts = [[int(c) for c in row] for row in progress.counts]
    estimate = loss_estimate(counts, spec.confidence)
    plan, exact = spec.plan, prepared.exact
    mech = plan.mechanism
    claimed = {"epsilon-DP": spec.epsilon, "0-DP": 0.0}.get(mech.claim)
    draws = progress.draws
    return AuditResult(
        mechanism=mech.name,
        epsilon=spec.epsilon,
        dim=plan.dim,
        draws=draws,
        seed=spec.seed,
        counts=counts,
        loss=estimate.value,
        loss_lower=estimate.lower,
        loss_upper=estimate.upper,
        confidence=spec.confidence,
        exact=None if exact is None else exact.loss,
        seconds=round(seconds, 4),
        dtype=spec.dtype,
        nan_policy=plan.nan_policy,
        guess1_rate=[row[1] / draws for row in counts],
        exact_guess1=None if exact is None else [exact.p1, exact.q1],
        exact_log_guess1=None if exact is None else [exact.log_p1, exact.log_q1],
        claim=mech.claim,
        violated=None if claimed is None else bool(estimate.lower > claimed),
        interrupted=interrupted,
        attack=prepared.attack.name,
        epsilon_lower=estimate.lower,
        **black_box(mech),
        **provenance(spec.dtype, spec.prng),
    )


# --- the sanity check to a target width -------------------------------------------


def draws_for_target(spec: AuditSpec, width: float) -> int | float | None:
    """The draws per dataset that the sanity check ``spec`` needs for a loss
    interval at most ``width`` wide, from the exact probabilities, before any draw
    (see :func:`mcdp.draws_for_target`); ``None`` where they are not known."""
    if not spec.sanity_check:
        raise ValueError("draws_for_target applies to the sanity check.")
    plan = spec.plan
    if plan.attack != MAJORITY_VOTE:
        return None  # exact probabilities are the majority vote's only
    exact = exact_e2(plan.mechanism, plan.params, plan.dim)
    if exact is None:
        return None
    return draws_for_width(exact.p1, exact.q1, width, spec.confidence, step=BLOCK_DRAWS)


def _whole_blocks(draws: int) -> int:
    return -(-draws // BLOCK_DRAWS) * BLOCK_DRAWS


def _to_width(spec: AuditSpec, stop: TargetWidth) -> Iterator[TargetWidthResult]:
    target, max_draws = stop.width, stop.max_draws
    start = time.perf_counter()  # the attack's preparation counts too
    prepared = _Prepared(spec, max_draws)
    exact_needed = None
    if prepared.exact is not None:
        exact_needed = draws_for_width(
            prepared.exact.p1, prepared.exact.q1, target, spec.confidence,
            step=BLOCK_DRAWS,
        )  # fmt: skip
    rounds: list[int] = []
    last = None  # the counts at the end of the last round
    goal = min(max_draws, _whole_blocks(stop.first_draws))
    key, attack, aux = prepared.key, prepared.attack, prepared.aux
    while True:
        for progress in _counts(spec, key, attack, aux, goal, resume=last):
            result = _audit_result(
                spec, prepared, progress, time.perf_counter() - start,
                interrupted=True,
            )  # fmt: skip
            width = result.width
            needed = draws_needed(
                result.counts, target, spec.confidence, step=BLOCK_DRAWS
            )
            done = progress.draws == goal
            if done:
                rounds.append(goal)
                last = progress
            final = done and (width <= target or goal >= max_draws)
            if final:
                result = dataclasses.replace(result, interrupted=False)
            yield TargetWidthResult(
                audit=result,
                target_width=target,
                max_draws=max_draws,
                round_draws=goal,
                width=width,
                target_met=width <= target,
                rounds=list(rounds),
                draws_needed=needed.draws,
                draws_needed_is_lower_bound=needed.lower_bound,
                draws_needed_exact=exact_needed,
                outcome=_outcome(
                    result, width, target, max_draws, rounds, needed, final
                ),
            )
        if final:
            return
        # at least double (few rounds whatever the predictions), at most the budget
        goal = min(max_draws, max(2 * goal, needed.draws))


def _outcome(
    result: AuditResult,
    width: float,
    target_width: float,
    max_draws: int,
    rounds: list[int],
    needed: DrawsNeeded,
    final: bool,
) -> str:
    """The one line that says how the target stands (the record's ``outcome``)."""
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


def _delta_audit(
    spec: AuditSpec, draws: int, path: Path | None
) -> Iterator[DeltaAuditResult]:
    plan = spec.plan
    mech, params, epsilons = plan.mechanism, plan.params, plan.epsilons
    key = key_of(spec)
    start = time.perf_counter()  # the attack's preparation counts too
    attack, aux = _bind(spec, key, draws)
    attack_seconds = time.perf_counter() - start
    tx = plan.transformed
    host_params = jax.tree.map(np.asarray, params)
    exact_deltas = {
        e: None
        if mech.exact_delta is None or not spec.exact
        else mech.exact_delta(host_params, tx, e)
        for e in epsilons
    }
    epsilon_exact = None
    if mech.exact_epsilon is not None and spec.exact:
        epsilon_exact = mech.exact_epsilon(host_params, tx)
    exact_loss = None
    majority = (  # a portfolio's too
        attack._replace(
            selection=(), preparation=(), screened=(), screen_draws=0, screen_steps=0
        )
        == MAJORITY_VOTE
    )
    if plan.pair_name == "zeros-ones" and majority and spec.exact:
        e2 = exact_e2(mech, params, plan.dim)
        exact_loss = None if e2 is None else e2.loss
    delta = float(spec.delta or 0.0)
    datasets = releases = None
    if isinstance(plan.pair, Datasets):  # what the releases look like, and the pair
        if spec.exact:  # not in a search's screenings
            fn = mech.host_sample.fn
            releases = summary(fn, plan.pair, spec.seed, SUMMARY_DRAWS)
        datasets = {"d": plan.pair.d.tolist(), "d_prime": plan.pair.d_prime.tolist()}
    counts = _counts(spec, key, attack, aux, draws, path=path)
    with contextlib.closing(counts):  # a stopped run saves its counts at once
        for progress in counts:
            bounds = delta_bounds(
                progress.counts, spec.confidence, impossible=attack.impossible
            )
            profile = [
                ProfilePoint(e, *bounds.delta(e), exact_deltas[e]) for e in epsilons
            ]
            claimed = next(point for point in profile if point.epsilon == spec.epsilon)
            loss, loss_lower, loss_upper = bounds.loss()
            points = bounds.tradeoff()
            yield DeltaAuditResult(
                mechanism=mech.name,
                epsilon=spec.epsilon,
                dim=plan.dim,
                draws=progress.draws,
                seed=spec.seed,
                pair=plan.pair_name,
                attack=attack.name,
                clip=plan.clip,
                counts=progress.counts.tolist(),
                confidence=spec.confidence,
                loss=loss,
                loss_lower=loss_lower,
                loss_upper=loss_upper,
                exact=exact_loss,
                delta_claimed=delta,
                delta_estimate=claimed.delta_estimate,
                delta_lower=claimed.delta_lower,
                delta_upper=claimed.delta_upper,
                delta_exact=claimed.delta_exact,
                violated=bool(claimed.delta_lower > delta),
                profile=profile,
                seconds=round(time.perf_counter() - start, 4),
                dtype=spec.dtype,
                interrupted=progress.draws < draws,
                epsilon_lower=loss_lower,
                epsilon_exact=epsilon_exact,
                attack_seconds=round(attack_seconds, 4),
                events=attack.event_names(),
                selection=dict(attack.selection) if attack.selection else None,
                screened=list(attack.screened) if attack.screened else None,
                screen_draws=attack.screen_draws if attack.screened else None,
                screen_steps=attack.screen_steps or None,
                attack_stages=(
                    {k: round(v, 4) for k, v in attack.preparation}
                    if attack.preparation
                    else None
                ),
                datasets=datasets,
                releases=releases,
                tradeoff=Tradeoff(
                    points=[list(p) for p in points],
                    gdp_mu_lower=gaussian_dp_mu_lower(points),
                ),
                **black_box(mech),
                **provenance(spec.dtype, spec.prng),
            )
