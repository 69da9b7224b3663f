r"""(epsilon, delta) audits: how large must delta be for the observed outputs?

For neighbouring inputs :math:`x, x'` and any event :math:`S`, (epsilon, delta)-DP
requires :math:`P[M(x) \in S] - e^\varepsilon P[M(x') \in S] \le \delta`, in both
orders. An attack maps each output to an *ordered* outcome (the higher, the more the
output speaks for :math:`x`); its events are the upper sets :math:`\{o \ge k\}` and
the lower sets :math:`\{o < k\}`, :math:`k = 1, \dots, K`. From the counts, each
:math:`P_a[o \ge k]` (for :math:`a = x, x'`) gets a two-sided Clopper–Pearson
interval at confidence :math:`1 - \alpha/(2K)`; all :math:`2K` intervals hold at once
with probability :math:`\ge 1 - \alpha` (Bonferroni), so

.. math:: \delta_{\mathrm{lower}}(\varepsilon) = \max\Bigl(0, \max_{S, \text{order}}
   P_{\mathrm{lo}}[M(x) \in S] - e^\varepsilon P_{\mathrm{hi}}[M(x') \in S]\Bigr)

is a lower confidence bound on the smallest delta consistent with (epsilon,
delta)-DP, simultaneously for every epsilon (the privacy profile). The thresholds
and events are fixed before sampling, so no selection correction beyond Bonferroni
is needed.

Attacks: ``majority`` (SPEC E2), ``support`` (an output outside :math:`x' +
[-A, A]^d` is impossible under :math:`x'`; for bounded noise; that probability is
taken as 0 from the declared support, so the bound does not need
:math:`e^\varepsilon` draws), ``lr`` (the exact
privacy loss :math:`\ln p(y|x) - \ln p(y|x')` binned at fixed thresholds; for
mechanisms with a known density).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
import zlib
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from mcdp import _validate
from mcdp._provenance import provenance
from mcdp.analytic import exact_e2
from mcdp.estimators import MAJORITY_VOTE, Attack
from mcdp.mechanisms import Mechanism, get_mechanism
from mcdp.sampling import DTYPES, PRNG_IMPL, iter_counts
from mcdp.sampling import key as sampling_key
from mcdp.statistics import loss_from_probabilities, loss_range

PAIRS = ("zeros-ones", "axis", "diagonal")
ATTACKS = ("majority", "support", "lr")
PROFILE_EPSILONS = tuple(np.round(np.linspace(0.0, 1.0, 11), 10)) + (
    1.5, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0, 20.0, 30.0,
)  # fmt: skip
LR_GRID = 24  # evenly spaced thresholds on each side, besides the epsilons


def make_pair(name: str, dim: int, clip: float = 1.0) -> np.ndarray:
    r"""A named neighbouring pair as a ``(2, d)`` array.

    * ``zeros-ones``: :math:`0^d` and :math:`1^d` (SPEC E2);
    * ``axis``: :math:`+C e_1` and :math:`-C e_1` (the L∞ worst case of clipped
      embeddings, :math:`\lVert x - x'\rVert_2 = 2C`);
    * ``diagonal``: :math:`\pm (C/\sqrt d)(1, \dots, 1)` (the L1 worst case,
      :math:`\lVert x - x'\rVert_1 = 2C\sqrt d`).
    """
    _validate.one_of("pair", name, PAIRS)
    dim = _validate.integer("dim", dim, low=1, high=_validate.MAX_DIM)
    clip = _validate.positive("clip", clip)
    if name == "zeros-ones":
        return np.stack([np.zeros(dim), np.ones(dim)])
    if name == "axis":
        e1 = np.zeros(dim)
        e1[0] = clip
        return np.stack([e1, -e1])
    ones = np.full(dim, clip / math.sqrt(dim))
    return np.stack([ones, -ones])


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


SUPPORT_TEST = Attack("support", 3, _support_guess)


def lr_thresholds(epsilons: Sequence[float]) -> np.ndarray:
    """Fixed thresholds: :math:`\\pm\\varepsilon` for every epsilon of interest (the
    Neyman–Pearson optimal events :math:`\\{L \\ge \\varepsilon\\}`), 0, and an even
    grid
    in between."""
    top = max(epsilons, default=1.0) or 1.0
    grid = np.linspace(-top, top, 2 * LR_GRID + 1)
    values = np.concatenate([grid, np.asarray(epsilons), -np.asarray(epsilons), [0.0]])
    return np.unique(np.round(values, 12))


@dataclasses.dataclass(frozen=True)
class DeltaBounds:
    """Simultaneous intervals for :math:`P_a[o \\ge k]` and the delta they imply."""

    counts: np.ndarray  # (2, num_outcomes)
    lower: np.ndarray  # (2, K) CP lower bounds of P[o >= k], k = 1..K
    upper: np.ndarray  # (2, K)
    rate: np.ndarray  # (2, K) point estimates
    confidence: float

    def delta(self, epsilon: float) -> tuple[float, float, float]:
        r"""``(estimate, lower, upper)`` of the attack's delta at ``epsilon``: the
        largest :math:`P[M(x) \in S] - e^\varepsilon P[M(x') \in S]` over its events
        and both orders. ``lower`` and ``upper`` hold together with the stated
        confidence; the lower bound is the verdict. The estimate plugs in the
        observed rates; where :math:`e^\varepsilon` is large against the number of
        draws, unobserved events make it biased upward."""
        return (
            _delta(self.rate, self.rate, epsilon),
            _delta(self.lower, self.upper, epsilon),
            _delta(self.upper, self.lower, epsilon),
        )

    def loss(self) -> tuple[float, float, float]:
        r"""``(estimate, lower, upper)`` of the attack's privacy loss: the log ratio
        of an event's probabilities under the two inputs, maximised over the events
        (for a two-outcome attack, the loss of SPEC E2), on the same simultaneous
        intervals."""
        value, lower, upper = 0.0, 0.0, 0.0
        for k in range(self.rate.shape[1]):
            box_x = (self.lower[0, k], self.upper[0, k])
            box_x_prime = (self.lower[1, k], self.upper[1, k])
            low, high = loss_range(box_x, box_x_prime)
            rate = loss_from_probabilities(self.rate[0, k], self.rate[1, k])
            value, lower, upper = max(value, rate), max(lower, low), max(upper, high)
        return value, lower, upper


def _delta(low: np.ndarray, high: np.ndarray, epsilon: float) -> float:
    factor = math.exp(epsilon)
    (lx, lxp), (hx, hxp) = low, high
    candidates = [
        lx - factor * hxp,  # S = {o >= k}, order (x, x')
        lxp - factor * hx,  # S = {o >= k}, order (x', x)
        (1 - hx) - factor * (1 - lxp),  # S = {o < k}, order (x, x')
        (1 - hxp) - factor * (1 - lx),  # S = {o < k}, order (x', x)
    ]
    return float(max(0.0, max(np.max(c) for c in candidates)))


def delta_bounds(
    counts, confidence: float = 0.95, *, impossible: Sequence[tuple[int, int]] = ()
) -> DeltaBounds:
    """Clopper–Pearson intervals for every upper set of both inputs' outcome counts,
    Bonferroni-corrected over the ``2K`` intervals.

    ``impossible`` lists ``(input, outcome)`` cells that the mechanism's declared
    support makes impossible (the support test: an output outside ``x' + [-A, A]^d``
    cannot come from ``x'``). Where such a cell was indeed never observed, its
    probability is 0 exactly rather than bounded by Clopper–Pearson; a nonzero count
    there (an implementation outside its declared support) keeps the empirical bound.
    """
    counts = np.asarray(counts, dtype=np.int64)
    if counts.ndim != 2 or counts.shape[0] != 2 or counts.shape[1] < 2:
        raise ValueError(
            f"Expected counts of shape (2, K + 1) with K >= 1, got {counts.shape}."
        )
    n = counts.sum(axis=1)
    k_max = counts.shape[1] - 1
    alpha = (1 - confidence) / (2 * k_max)  # per two-sided interval
    tail = np.cumsum(counts[:, ::-1], axis=1)[:, ::-1][:, 1:]  # P[o >= k] counts
    lower = np.where(
        tail == 0, 0.0, stats.beta.ppf(alpha / 2, tail, n[:, None] - tail + 1)
    )
    upper = np.where(
        tail == n[:, None],
        1.0,
        stats.beta.ppf(1 - alpha / 2, tail + 1, n[:, None] - tail),
    )
    for row, outcome in impossible:
        if counts[row, outcome] != 0:
            continue
        if outcome == k_max:  # the top outcome: P[o >= K] = 0
            upper[row, k_max - 1] = 0.0
        elif outcome == 0:  # the bottom outcome: P[o >= 1] = 1
            lower[row, 0] = 1.0
    return DeltaBounds(counts, lower, upper, tail / n[:, None], confidence)


def gaussian_delta(epsilon: float, sigma: float, distance: float) -> float:
    r"""Exact privacy profile of the Gaussian mechanism (Balle & Wang 2018, Thm 8):
    :math:`\Phi(\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta})
    - e^\varepsilon \Phi(-\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta})`,
    with :math:`\Delta = \lVert x - x'\rVert_2`; in log space for large epsilon."""
    if distance == 0:
        return 0.0
    a = distance / (2 * sigma)
    b = epsilon * sigma / distance
    first = stats.norm.cdf(a - b)
    second = math.exp(epsilon + stats.norm.logcdf(-a - b))
    return max(0.0, float(first - second))


def laplace_delta(epsilon: float, scale: float, distance: float) -> float:
    r"""Exact privacy profile of one-dimensional Laplace noise of scale :math:`b` for a
    shift :math:`\Delta`: :math:`\max(0, 1 - e^{(\varepsilon - \Delta/b)/2})`. It is
    the profile of the ``axis`` pair, which differs in one coordinate."""
    return max(0.0, 1 - math.exp((epsilon - distance / scale) / 2))


def exact_delta(mechanism: Mechanism, params: Any, pair: np.ndarray, epsilon: float):
    """The mechanism's exact delta(epsilon) on the pair where a closed form is known
    (Gaussian: any pair; Laplace noise: pairs differing in one coordinate), or
    None."""
    return _exact_delta(mechanism, params, _transform(mechanism, pair, params), epsilon)


def _exact_delta(mechanism: Mechanism, params: Any, tx: np.ndarray, epsilon: float):
    """:func:`exact_delta` on the already transformed (clipped) pair ``tx``."""
    diff = tx[0] - tx[1]
    if mechanism.name == "gaussian":
        return gaussian_delta(epsilon, float(params.sigma), float(np.linalg.norm(diff)))
    laplace_family = ("laplace", "adept", "adept-l1", "adept-true-sensitivity")
    if mechanism.name in laplace_family and np.count_nonzero(diff) <= 1:
        return laplace_delta(epsilon, float(params.scale), float(np.abs(diff).sum()))
    return None


def _transform(mechanism: Mechanism, pair: np.ndarray, params: Any) -> np.ndarray:
    if mechanism.transform is None:
        return np.asarray(pair, dtype=np.float64)
    host = jax.tree.map(np.asarray, params)
    return np.asarray(mechanism.transform(np.asarray(pair, dtype=np.float64), host))


def _attack_and_aux(mechanism, attack: str, tx: np.ndarray, params, epsilons, dtype):
    if attack == "majority":
        return MAJORITY_VOTE, None
    eps = np.finfo(dtype).eps
    if attack == "support":
        if mechanism.noise_bound is None:
            raise ValueError(
                f"attack 'support' needs bounded noise; {mechanism.name!r} has none."
            )
        bound = float(mechanism.noise_bound(jax.tree.map(np.asarray, params)))
        # outputs computed as tx + eta can land a few ulps past tx +- A: widen the
        # box by that much (a fixed event either way, so the bound stays valid)
        slack = 8 * eps * (np.abs(tx).max() + bound)
        return SUPPORT_TEST, (tx[0], tx[1], bound + slack)
    thresholds = lr_thresholds(epsilons)
    lr = likelihood_ratio_attack(mechanism, len(thresholds))
    # A loss atom can sit exactly on a threshold (Laplace at its calibration has
    # atoms at +-epsilon); rounding would split it differently under x and x' (their
    # outputs lie on different float grids), a distinguisher of rounding, not of the
    # mechanism. Cut a hair below each threshold: the events stay fixed in advance.
    cut = thresholds - math.sqrt(eps) * np.maximum(1.0, np.abs(thresholds))
    return lr, (tx[0], tx[1], params, cut)


@dataclasses.dataclass(frozen=True)
class DeltaAuditResult:
    """An (epsilon, delta) audit of one mechanism on one pair with one attack."""

    mechanism: str
    epsilon: float
    dim: int
    draws: int
    seed: int
    pair: str
    attack: str
    clip: float
    counts: list[list[int]]
    confidence: float
    loss: float
    loss_lower: float
    loss_upper: float
    exact: float | None
    delta_claimed: float
    delta_estimate: float
    delta_lower: float
    delta_upper: float
    delta_exact: float | None
    violated: bool
    profile: list[dict[str, Any]]
    seconds: float
    dtype: str
    interrupted: bool
    mcdp_version: str
    jax_version: str
    backend: str
    x64: bool
    prng_impl: str  # the stream of the seed (mcdp.prng.STREAMS)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def __str__(self) -> str:
        exact = "unknown" if self.delta_exact is None else f"{self.delta_exact:.4g}"
        verdict = "VIOLATED" if self.violated else "not refuted"
        return "\n".join(
            [
                f"{self.mechanism} on the {self.pair} pair (d = {self.dim}, C = "
                f"{self.clip:g}), {self.attack} attack: {self.draws:,} draws per input "
                f"(seed {self.seed}, {self.dtype})",
                f"claimed (epsilon, delta) = "
                f"({self.epsilon:g}, {self.delta_claimed:.4g})",
                f"delta at epsilon = {self.epsilon:g}: "
                f"estimate {self.delta_estimate:.4g}, {self.confidence:.0%} lower "
                f"bound {self.delta_lower:.4g}, exact {exact}",
                f"claim {verdict}"
                + (
                    " (the lower bound exceeds the claimed delta)"
                    if self.violated
                    else ""
                ),
                f"{self.seconds:.1f} s on {self.backend}",
            ]
        )


def audit_delta(
    mechanism: str | Mechanism,
    epsilon: float,
    delta: float,
    dim: int,
    draws: int,
    *,
    pair: str | np.ndarray = "axis",
    attack: str = "lr",
    clip: float = 1.0,
    seed: int = 0,
    confidence: float = 0.95,
    dtype: str = "float64",
    params: Any = None,
    profile_epsilons: Sequence[float] = PROFILE_EPSILONS,
    prng: str = PRNG_IMPL,
) -> DeltaAuditResult:
    """Audits a claimed (epsilon, delta) on one pair with one attack.

    Args:
      mechanism: a registered name or a :class:`Mechanism`.
      epsilon, delta: the claim; ``delta`` in [0, 1).
      dim: d.
      draws: outputs per input.
      pair: ``zeros-ones``, ``axis``, ``diagonal``, or a ``(2, d)`` array.
      attack: ``majority``, ``support`` or ``lr``.
      clip: the clipping radius C of the pair and of the calibration.
      params: the mechanism's parameters; default: ``calibrate(epsilon, delta, d,
        C)`` (``e2_params`` for ``zeros-ones``).
      profile_epsilons: where to report the privacy profile (the claimed epsilon is
        always added).
      prng: the stream of the seed: ``"threefry4x32"`` (default) or the faster,
        weaker ``"splitmix64"`` (see :mod:`mcdp.prng`).

    Returns:
      A :class:`DeltaAuditResult`; ``violated`` iff ``delta_lower > delta``.
    """
    mech = mechanism if isinstance(mechanism, Mechanism) else get_mechanism(mechanism)
    epsilon = _validate.positive("epsilon", epsilon)
    if not (isinstance(delta, (int, float)) and 0 <= delta < 1):
        raise ValueError(f"Expected delta in [0, 1), got {delta!r}.")
    dim = _validate.integer("dim", dim, low=1, high=_validate.MAX_DIM)
    draws = _validate.integer("draws", draws, low=1, high=_validate.MAX_DRAWS)
    seed = _validate.integer("seed", seed, low=0, high=_validate.MAX_SEED)
    confidence = _validate.open_unit("confidence", confidence)
    dtype = _validate.one_of("dtype", dtype, DTYPES)
    attack = _validate.one_of("attack", attack, ATTACKS)
    clip = _validate.positive("clip", clip)
    if isinstance(pair, str):
        pair_name, xs = pair, make_pair(pair, dim, clip)
    else:
        pair_name, xs = "custom", np.asarray(pair, dtype=np.float64)
        if xs.shape != (2, dim) or not np.all(np.isfinite(xs)):
            raise ValueError(
                f"Expected a finite pair of shape (2, {dim}), got {xs.shape}."
            )
    if params is None:
        if pair_name == "zeros-ones" or mech.calibrate is None:
            params = mech.e2_params(epsilon, dim)
        else:
            params = mech.calibrate(epsilon, delta, dim, clip)
    epsilons = sorted({float(e) for e in profile_epsilons} | {epsilon})
    tx = _transform(mech, xs, params)
    attack_fn, aux = _attack_and_aux(mech, attack, tx, params, epsilons, dtype)
    key = jax.random.fold_in(
        sampling_key(seed, prng),
        zlib.crc32(
            f"delta/{mech.name}/{epsilon!r}/{delta!r}/{dim}/{pair_name}".encode()
        ),
    )
    start = time.perf_counter()
    progress = None
    runs = iter_counts(key, mech, attack_fn, xs, params, draws, dtype=dtype, aux=aux)
    try:
        for step in runs:
            progress = step
    except KeyboardInterrupt:  # keep what is counted (both inputs alike)
        if progress is None:
            raise
    assert progress is not None
    # support test: outcome 2 (outside supp x') cannot come from x', 0 not from x
    impossible = ((1, 2), (0, 0)) if attack == "support" else ()
    bounds = delta_bounds(progress.counts, confidence, impossible=impossible)
    profile = []
    for e in epsilons:  # the claimed epsilon is among them
        est, low, high = bounds.delta(e)
        profile.append(
            {
                "epsilon": e,
                "delta_estimate": est,
                "delta_lower": low,
                "delta_upper": high,
                "delta_exact": _exact_delta(mech, params, tx, e),
            }
        )
    claimed = next(point for point in profile if point["epsilon"] == epsilon)
    loss, loss_lower, loss_upper = bounds.loss()
    exact_loss = None
    if pair_name == "zeros-ones" and attack == "majority":
        exact_e2_result = exact_e2(mech, params, dim)
        exact_loss = None if exact_e2_result is None else exact_e2_result.loss
    return DeltaAuditResult(
        mechanism=mech.name,
        epsilon=epsilon,
        dim=dim,
        draws=progress.draws,
        seed=seed,
        pair=pair_name,
        attack=attack,
        clip=clip,
        counts=progress.counts.tolist(),
        confidence=confidence,
        loss=loss,
        loss_lower=loss_lower,
        loss_upper=loss_upper,
        exact=exact_loss,
        delta_claimed=float(delta),
        delta_estimate=claimed["delta_estimate"],
        delta_lower=claimed["delta_lower"],
        delta_upper=claimed["delta_upper"],
        delta_exact=claimed["delta_exact"],
        violated=bool(claimed["delta_lower"] > delta),
        profile=profile,
        seconds=round(time.perf_counter() - start, 4),
        dtype=dtype,
        interrupted=progress.draws < draws,
        **provenance(dtype, prng),
    )
