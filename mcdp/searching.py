r"""The input search: find the neighbouring pair with the strongest bound, then
confirm it on fresh draws (:func:`search`).

An audit bounds a mechanism on one pair; how strong the bound is depends on the
pair. The search proposes pairs inside the mechanism's declared
:class:`~mcdp.domains.InputDomain` (``Mechanism.domain``) from three sources:

* ``named``: the literature's patterns (:mod:`mcdp.pairs`) that lie in the domain;
* ``random``: random neighbouring pairs of the domain
  (:meth:`~mcdp.domains.InputDomain.random_pairs`);
* ``gradient``: for a mechanism with a density (``privacy_loss``) on a continuous
  domain whose outputs move continuously with the input (``pathwise``; not the
  Sparse Vector variants, whose comparisons a pathwise gradient does not see),
  projected gradient ascent (optax Adam) from random starts on the mean of
  the top :data:`TAIL` of the privacy loss over reparametrised draws, in both
  orders of the pair, projected back into the domain after every step.

Then (SPEC §6, "Input search"):

1. **Screening.** Every candidate is audited (:func:`mcdp.audit_delta`'s audit) on
   screening draws: keys ``fold_in(fold_in(root, SCREEN_TAG), crc32(label))``,
   which no confirmation uses. A pure claim (``delta = 0``) ranks by the lower
   bound on epsilon, an (epsilon, delta) claim by the lower bound on delta at the
   claimed epsilon; the point estimate breaks ties.
2. **Confirmation.** The best ``confirm`` = K candidates are audited again on fresh
   draws (``fold_in(fold_in(root, CONFIRM_TAG), crc32(label))``), each at
   confidence :math:`1 - (1 - c)/K` (Bonferroni). The witness is the best
   confirmation, and its bounds hold at confidence c: the K confirmations hold
   together with probability at least :math:`1 - K (1 - c)/K`.

Nothing of the confirmation draws feeds back into the choice; the gradient and
the random proposals have keys of their own (``GRADIENT_TAG``, ``PROPOSE_TAG``).
``root`` is :func:`mcdp.sampling.cell_key` of the seed and the search's identity
(mechanism, epsilon, delta, d, clip); a candidate's keys depend on its label only,
and each random pair and gradient start has a key of its own, so a larger budget
screens a superset of the candidates of a smaller one (gradient pairs up to
rounding, once their number stops growing), on the same draws.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from mcdp import _compilation_cache, _validate
from mcdp.attacks import (
    AUTO,
    AUTO_CANDIDATES,
    LEARNED,
    Attack,
    auto_attack,
    get_attack,
    learned_attack,
)
from mcdp.core.datasets import DatasetDomain, Datasets
from mcdp.core.domains import InputDomain, check_relation
from mcdp.core.records import (
    DeltaAuditResult,
    InputSearchResult,
    SearchCandidate,
    provenance,
)
from mcdp.dataset_pairs import propose_datasets
from mcdp.engines.host import entropy
from mcdp.mechanisms import SUITE, Mechanism, get_mechanism
from mcdp.pairs import PAIRS, make_pair
from mcdp.running import run_iter
from mcdp.sampling import DTYPES, PRNG_IMPL, cell_key
from mcdp.spec import DEFAULT_CLIP, AuditSpec, Draws, with_releases

SOURCES = ("named", "random", "gradient")
BUDGET = 32  # candidates screened (named + gradient + random)
MAX_BUDGET = 10_000
CONFIRM = 3  # candidates confirmed on the final draws
DRAWS = 1_000_000  # per input, each confirmation
SCREEN_DRAWS = 100_000  # per input, each screening
SCREEN_TRAIN = 20_000  # per input, the learned attack's own samples in screening
# the portfolio's candidates in screening: all but the costlier scorers
SCREEN_CANDIDATES = tuple(
    c for c in AUTO_CANDIDATES if c not in ("learned-mlp", "learned-bits")
)
GRADIENT_STARTS = 4  # at most; each takes one candidate of the budget
GRADIENT_STEPS = 100
GRADIENT_DRAWS = 2048  # reparametrised draws per input and step
GRADIENT_RATE = 0.05  # Adam's learning rate, in units of the domain's size
TAIL = 0.05  # the fraction of the largest losses whose mean is ascended
# fold_in tags of the search's streams (ASCII): all differ, so no two share keys
SCREEN_TAG = 0x5343524E  # "SCRN"
CONFIRM_TAG = 0x434E464D  # "CNFM"
PROPOSE_TAG = 0x50524F50  # "PROP"
GRADIENT_TAG = 0x47524144  # "GRAD"


class Candidate(NamedTuple):
    label: str
    source: str
    pair: np.ndarray


def label_key(root: jax.Array, tag: int, label: str) -> jax.Array:
    """``fold_in(fold_in(root, tag), crc32(label))``: the key of one candidate's
    screening (``SCREEN_TAG``) or confirmation (``CONFIRM_TAG``)."""
    return jax.random.fold_in(jax.random.fold_in(root, tag), zlib.crc32(label.encode()))


def named_pairs(domain: InputDomain, dim: int, clip: float) -> list[Candidate]:
    """The named pairs of :mod:`mcdp.pairs` that lie in ``domain`` (duplicates
    dropped, the first name kept), in the order of :data:`mcdp.pairs.PAIRS`."""
    found: list[Candidate] = []
    for name in PAIRS:
        try:
            pair = make_pair(name, dim, clip)
        except ValueError:  # the scalar pairs need d = 1
            continue
        if domain.contains(pair) and not any(
            np.array_equal(pair, c.pair) for c in found
        ):
            found.append(Candidate(name, "named", pair))
    return found


def _differentiable(mech: Mechanism, domain: InputDomain) -> bool:
    return mech.privacy_loss is not None and mech.pathwise and not domain.integer


def gradient_pairs(
    mech: Mechanism,
    params: Any,
    domain: InputDomain,
    starts: np.ndarray,
    key: jax.Array,
    *,
    steps: int = GRADIENT_STEPS,
    draws: int = GRADIENT_DRAWS,
    dtype: str = "float64",
) -> np.ndarray:
    r"""Projected gradient ascent of every start pair (shape ``(n, 2, d)``).

    The objective is the mean of the largest :data:`TAIL` of the privacy losses
    :math:`\ln p(y \mid x) - \ln p(y \mid x')` over ``draws`` outputs
    :math:`y = M(x)` (reparametrised: the sampler is differentiated through), plus
    the same with the pair's rows exchanged; step ``t`` draws from ``fold_in(key,
    t)``. After every Adam step each pair is projected into ``domain``.
    """
    import optax

    transform = mech.transform or (lambda x, p: x)
    loss_fn = mech.privacy_loss
    assert loss_fn is not None
    top = max(1, int(TAIL * draws))
    dim = starts.shape[-1]

    def tail_mean(first, second, k):
        batch = jnp.broadcast_to(first, (draws, dim))
        y = mech.sample(k, batch, params)
        tx = transform(first[None], params)[0]
        tx_prime = transform(second[None], params)[0]
        losses = loss_fn(y, tx, tx_prime, params)
        return jnp.mean(jax.lax.top_k(losses, top)[0])

    def objective(pair, k):
        k0, k1 = jax.random.split(k)
        return tail_mean(pair[0], pair[1], k0) + tail_mean(pair[1], pair[0], k1)

    optimiser = optax.adam(GRADIENT_RATE * float(domain.size))
    grad = jax.jit(jax.vmap(jax.grad(objective), in_axes=(0, None)))
    with jax.enable_x64(dtype == "float64"):
        pairs = jnp.asarray(starts, dtype=dtype)
        state = optimiser.init(pairs)
        for step in range(steps):
            # ascent: optax minimises, so it is given the gradient of -objective
            g = -grad(pairs, jax.random.fold_in(key, step))
            with jax.numpy_dtype_promotion("standard"):  # optax mixes int and float
                updates, state = optimiser.update(g, state, pairs)
            moved = np.asarray(optax.apply_updates(pairs, updates), dtype=np.float64)
            # an infinite loss (bounded noise) can make a step NaN: stay put there
            moved = np.where(np.isfinite(moved), moved, np.asarray(pairs, np.float64))
            projected = np.stack([domain.project(p) for p in moved])
            pairs = jnp.asarray(projected, dtype=dtype)
    return np.stack([domain.project(p) for p in np.asarray(pairs, np.float64)])


def _score(result: DeltaAuditResult, pure: bool) -> tuple[float, float]:
    if pure:
        return float(result.epsilon_lower or 0.0), float(result.loss)
    return float(result.delta_lower), float(result.delta_estimate)


def _validated(
    mech: Mechanism, epsilon, delta, dim, budget, confirm, draws, screen_draws,
    clip, seed, confidence, dtype, sources,
):  # fmt: skip
    epsilon = _validate.positive("epsilon", epsilon)
    delta = _validate.delta("delta", delta)
    if dim is None:
        if mech.name not in SUITE:
            raise ValueError(
                f"Expected dim (--dim), an integer in [1, {_validate.MAX_DIM}]: "
                f"{mech.name!r} is not a suite case with a default length."
            )
        dim = SUITE[mech.name].dim
    dim = _validate.integer("dim", dim, low=1, high=_validate.MAX_DIM)
    budget = _validate.integer("budget", budget, low=1, high=MAX_BUDGET)
    confirm = _validate.integer("confirm", confirm, low=1, high=budget)
    draws = _validate.integer("draws", draws, low=1, high=_validate.MAX_DRAWS)
    screen_draws = _validate.integer(
        "screen_draws", screen_draws, low=1, high=_validate.MAX_DRAWS
    )
    clip = _validate.positive("clip", clip)
    seed = _validate.integer("seed", seed, low=0, high=_validate.MAX_SEED)
    confidence = _validate.open_unit("confidence", confidence)
    dtype = _validate.one_of("dtype", dtype, DTYPES)
    sources = tuple(sources)
    if not sources or any(s not in SOURCES for s in sources):
        raise ValueError(
            f"Expected sources to be a non-empty subset of {', '.join(SOURCES)}, "
            f"got {sources!r}."
        )
    return (
        epsilon, float(delta), dim, budget, confirm, draws, screen_draws, clip,
        seed, confidence, dtype, sources,
    )  # fmt: skip


def propose(
    mech: Mechanism,
    params: Any,
    domain: InputDomain,
    dim: int,
    clip: float,
    budget: int,
    root: jax.Array,
    *,
    sources: Sequence[str] = SOURCES,
    dtype: str = "float64",
) -> list[Candidate]:
    """The ``budget`` candidates of a search: the named pairs in the domain first
    (as many as the budget takes), then up to :data:`GRADIENT_STARTS` gradient
    pairs (at most half of what is left), then random pairs."""
    candidates = named_pairs(domain, dim, clip)[:budget] if "named" in sources else []
    left = budget - len(candidates)
    gradient = 0
    if "gradient" in sources and _differentiable(mech, domain):
        share = left if "random" not in sources else left // 2
        gradient = min(GRADIENT_STARTS, share)
    randoms = left - gradient if "random" in sources else 0
    grad_key = jax.random.fold_in(root, GRADIENT_TAG)
    if gradient:
        # one key per start, so that start g is the same whatever their number
        starts = np.stack([
            domain.random_pairs(jax.random.fold_in(grad_key, 2 + g), 1, dim)[0]
            for g in range(gradient)
        ])  # fmt: skip
        found = gradient_pairs(
            mech, params, domain, starts, jax.random.fold_in(grad_key, 1), dtype=dtype
        )
        candidates += [
            Candidate(f"gradient/{g}", "gradient", p) for g, p in enumerate(found)
        ]
    propose_key = jax.random.fold_in(root, PROPOSE_TAG)
    for j in range(randoms):
        pair = domain.random_pairs(jax.random.fold_in(propose_key, j), 1, dim)[0]
        candidates.append(Candidate(f"random/{j}", "random", pair))
    return candidates


def search(
    mechanism: str | Mechanism,
    epsilon: float,
    delta: float = 0.0,
    dim: int | None = None,
    *,
    budget: int = BUDGET,
    attack: str | Attack = "auto",
    screen_attack: str | Attack | None = None,
    confirm: int = CONFIRM,
    draws: int = DRAWS,
    screen_draws: int = SCREEN_DRAWS,
    clip: float = 1.0,
    seed: int = 0,
    confidence: float = 0.95,
    dtype: str = "float64",
    params: Any = None,
    sources: Sequence[str] = SOURCES,
    prng: str = PRNG_IMPL,
    log: Callable[[str], None] | None = None,
    scheduler: Any = None,
) -> InputSearchResult:
    """Searches the mechanism's input domain for the pair with the strongest bound
    and confirms the best ones on fresh draws (the module's docstring).

    Args:
      mechanism: a registered name or a :class:`~mcdp.mechanisms.Mechanism` with a
        ``domain``.
      epsilon, delta: the claim; ``delta`` in [0, 1) (0: a pure claim, ranked by
        the lower bound on epsilon).
      dim: d (default: the suite case's length, for a suite mechanism).
      budget: candidate pairs screened, named, gradient and random together.
      attack: the attack of the confirmations (default ``auto``, the portfolio;
        see :func:`mcdp.audit_delta`).
      screen_attack: the attack of the screenings; default: ``attack``, except
        that the learned attack and the portfolio screen with
        :data:`SCREEN_TRAIN` training and selection draws per input (the
        portfolio with one scorer, :data:`SCREEN_CANDIDATES`).
      confirm: K, the candidates confirmed; each confirmation runs at confidence
        ``1 - (1 - confidence) / K``.
      draws: outputs per input of each confirmation.
      screen_draws: outputs per input of each screening.
      clip: the clipping radius C (the ``l2-ball`` domains and the calibration).
      seed: the integer seed.
      confidence: the confidence of the witness's bounds.
      dtype: ``"float64"`` (default) or ``"float32"``.
      params: the mechanism's parameters; default: ``calibrate(epsilon, delta,
        d, C)``.
      sources: which of ``named``, ``random``, ``gradient`` propose pairs.
      prng: the stream of the seed (see :func:`mcdp.audit`).
      log: called with a line per stage (screening, confirmation).
      scheduler: a black box's draws run on a Dask cluster (see
        :class:`mcdp.AuditSpec`).

    Returns:
      A :class:`~mcdp.records.InputSearchResult`.

    Raises:
      ValueError: an argument is out of range, or the mechanism declares no domain
        or calibration; the message names it.
    """
    _compilation_cache.enable()
    start = time.perf_counter()
    mech = mechanism if isinstance(mechanism, Mechanism) else get_mechanism(mechanism)
    if mech.domain is None:
        raise ValueError(
            f"mechanism {mech.name!r} declares no input domain (Mechanism.domain), "
            "so there is nothing to search."
        )
    if dim is None and isinstance(mech.domain, DatasetDomain):
        dim = mech.domain.width
    (
        epsilon, delta, dim, budget, confirm, draws, screen_draws, clip, seed,
        confidence, dtype, sources,
    ) = _validated(
        mech, epsilon, delta, dim, budget, confirm, draws, screen_draws, clip, seed,
        confidence, dtype, sources,
    )  # fmt: skip
    final_attack = get_attack(attack)
    if screen_attack is None:
        screen_attack = final_attack
        if final_attack == LEARNED:
            screen_attack = learned_attack(
                train_draws=SCREEN_TRAIN, select_draws=SCREEN_TRAIN
            )
        elif final_attack == AUTO:
            screen_attack = auto_attack(
                train_draws=SCREEN_TRAIN, select_draws=SCREEN_TRAIN,
                candidates=SCREEN_CANDIDATES,
            )  # fmt: skip
    screen_attack = get_attack(screen_attack)
    if params is None and mech.host_sample is None:  # a callable takes none
        if mech.calibrate is None:
            raise ValueError(
                f"mechanism {mech.name!r} has no calibrate: pass params= explicitly."
            )
        params = mech.calibrate(epsilon, delta, dim, clip)
    pure = delta == 0
    datasets = isinstance(mech.domain, DatasetDomain)
    if datasets:  # records of dim columns, the relation of the domain
        domain = mech.domain
        if domain.width != dim:
            raise ValueError(
                f"Expected dim = {domain.width} (the width of the records of "
                f"{mech.name!r}'s domain), got {dim}."
            )
        identity = f"search/{mech.name}/{epsilon!r}/{delta!r}/{dim}/{domain.relation}"
        root = cell_key(seed, identity, prng)
        rng = np.random.default_rng(entropy(jax.random.fold_in(root, PROPOSE_TAG)))
        candidates = propose_datasets(domain, budget, rng)
        # one width of releases for every candidate: one shape, so few compiles
        mech = with_releases(mech, [c.pair for c in candidates], seed)
        clip, params = None, None
    else:
        check_relation(mech.domain.relation)
        domain = mech.domain.at(clip)
        identity = f"search/{mech.name}/{epsilon!r}/{delta!r}/{dim}/{clip!r}"
        root = cell_key(seed, identity, prng)
        candidates = propose(
            mech, params, domain, dim, clip, budget, root, sources=sources,
            dtype=dtype,
        )  # fmt: skip
    for c in candidates:
        if not domain.contains(c.pair):  # a bug of a proposal, never the user's
            raise AssertionError(f"candidate {c.label} left the domain: {c.pair}")

    def run(c: Candidate, tag: int, n: int, conf: float, att: Attack):
        spec = AuditSpec(
            mech, epsilon, delta=delta, dim=None if datasets else dim, pair=c.pair,
            pair_name=c.label, attack=att, params=params, clip=clip,
            confidence=conf, dtype=dtype, prng=prng, seed=seed,
            key=label_key(root, tag, c.label), scheduler=scheduler,
            exact=tag == CONFIRM_TAG,  # screenings rank by their bounds alone
        )  # fmt: skip
        *_, last = run_iter(spec, Draws(n))
        return last

    screened = []
    for i, c in enumerate(candidates):
        result = run(c, SCREEN_TAG, screen_draws, confidence, screen_attack)
        screened.append(_score(result, pure))
        if log:
            log(f"screen {i + 1}/{len(candidates)} {c.label}: {screened[-1][0]:.4g}")
    screen_seconds = time.perf_counter() - start
    order = sorted(range(len(candidates)), key=lambda i: screened[i], reverse=True)
    chosen = order[:confirm]
    each = 1 - (1 - confidence) / confirm
    confirmed: dict[int, DeltaAuditResult] = {}
    for i in chosen:
        confirmed[i] = run(candidates[i], CONFIRM_TAG, draws, each, final_attack)
        if log:
            score = _score(confirmed[i], pure)[0]
            log(f"confirm {candidates[i].label}: {score:.4g} at {each:.4g}")
    best = max(chosen, key=lambda i: _score(confirmed[i], pure))
    witness = confirmed[best]
    rows = [
        SearchCandidate(
            label=c.label,
            source=c.source,
            pair=_as_lists(c.pair),
            score=screened[i][0],
            estimate=screened[i][1],
            confirmed=i in confirmed,
            confirmed_lower=_score(confirmed[i], pure)[0] if i in confirmed else None,
        )
        for i, c in enumerate(candidates)
    ]
    return InputSearchResult(
        mechanism=mech.name,
        epsilon=epsilon,
        delta=delta,
        dim=dim,
        clip=DEFAULT_CLIP if clip is None else clip,
        attack=final_attack.name,
        screen_attack=screen_attack.name,
        budget=budget,
        confirm=confirm,
        draws=draws,
        screen_draws=screen_draws,
        seed=seed,
        confidence=confidence,
        domain=_domain_dict(domain),
        score="epsilon_lower" if pure else "delta_lower",
        witness=_as_lists(candidates[best].pair),
        witness_label=candidates[best].label,
        epsilon_lower=float(witness.epsilon_lower or 0.0),
        epsilon_exact=witness.epsilon_exact,
        delta_lower=witness.delta_lower,
        delta_estimate=witness.delta_estimate,
        violated=bool(
            witness.violated or (pure and (witness.epsilon_lower or 0.0) > epsilon)
        ),
        witness_audit=witness.to_dict(),
        candidates=rows,
        seconds=round(time.perf_counter() - start, 4),
        screen_seconds=round(screen_seconds, 4),
        dtype=dtype,
        **provenance(dtype, prng),
    )


def _as_lists(pair: Any) -> list:
    """A pair for the record: its two rows, or the two datasets' records."""
    if isinstance(pair, Datasets):
        return [pair.d.tolist(), pair.d_prime.tolist()]
    return pair.tolist()


def _domain_dict(domain: Any) -> dict[str, Any]:
    if isinstance(domain, DatasetDomain):
        return domain._asdict() | {"low": list(domain.low), "high": list(domain.high)}
    return domain._asdict() | {"window": list(domain.window)}


def clipped_l1(mech: Mechanism, params: Any, pair: np.ndarray) -> float:
    """:math:`\\lVert T(x) - T(x')\\rVert_1` of a pair after the mechanism's
    transform (clipping): what the loss of additive Laplace noise depends on."""
    tx = mech.transformed(np.asarray(pair), params)
    return float(np.abs(tx[0] - tx[1]).sum())


__all__ = ["SOURCES", "Candidate", "clipped_l1", "named_pairs", "search"]
