r"""What an audit is, said once: :class:`AuditSpec`, and when it stops: :class:`Draws`
or :class:`TargetWidth`.

An :class:`AuditSpec` names the mechanism and its parameters, the input pair (or
``dim`` for the sanity check's :math:`0^d` and :math:`1^d`), the claim (``epsilon``,
``delta``), the attack, the confidence, the dtype, the random stream and seed, and
where the draws run (``engine``). It is checked once, in its constructor: a bad
field raises a one-line :class:`ValueError` that names it. :func:`mcdp.run` and
:func:`mcdp.run_iter` (:mod:`mcdp.running`) run it.

What the audit reports follows from the spec:

* the **sanity check** (ACL 2022), where no ``delta``, ``pair`` or ``clip`` is
  given: the two-outcome attack's privacy loss with its interval on
  :math:`D = 0^d` and :math:`D' = 1^d`, and the exact loss where known
  (:class:`~mcdp.core.records.AuditResult`); it may run to a :class:`TargetWidth`;
* the **(epsilon, delta) audit** otherwise (``delta`` 0 where only a pair or a
  clip is given): the privacy profile, the pure-epsilon bound and the trade-off
  curve of the attack's events on the pair, with the exact values that the
  mechanism declares (:class:`~mcdp.core.records.DeltaAuditResult`).

An audit's key is :func:`mcdp.sampling.cell_key` of the seed and the audit's
identity (:attr:`AuditSpec.identity`), so it gives the same counts alone or inside
a grid, in any order; ``key`` overrides it (the input search gives each screening
and confirmation a key of its own).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import numpy as np

from mcdp import _validate
from mcdp.attacks import MAJORITY_VOTE, get_attack
from mcdp.core.attack import Attack
from mcdp.core.datasets import DatasetDomain, Datasets, neighbours
from mcdp.core.mechanism import Mechanism
from mcdp.core.releases import ReleaseCall, probe_width
from mcdp.engines.base import Engine
from mcdp.engines.cluster import check_scheduler
from mcdp.mechanisms import MECHANISMS, SUITE, get_mechanism
from mcdp.pairs import make_pair
from mcdp.sampling import DTYPES, PRNG_IMPL, PRNG_IMPLS

SANITY_CHECK = "acl2022"  # the first part of a sanity check's identity: fixed
PROFILE_EPSILONS = tuple(np.round(np.linspace(0.0, 1.0, 11), 10)) + (
    1.5, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0, 20.0, 30.0,
)  # fmt: skip
FIRST_DRAWS = 1 << 17  # the first round of a TargetWidth run, per dataset
MAX_DRAWS = 10**10  # the budget of a TargetWidth run, per dataset
DEFAULT_CLIP = 1.0
DEFAULT_PAIR = "axis"  # the (epsilon, delta) audit's pair where none is given


@dataclasses.dataclass(frozen=True)
class Draws:
    """Stop after ``n`` draws per input (``1e8`` is accepted)."""

    n: int

    def __post_init__(self) -> None:
        n = _validate.integer("draws", self.n, low=1, high=_validate.MAX_DRAWS)
        object.__setattr__(self, "n", n)


@dataclasses.dataclass(frozen=True)
class TargetWidth:
    """Run the sanity check in rounds until its loss interval is at most ``width``
    wide or ``max_draws`` draws per dataset are done; the first round has
    ``first_draws`` (rounded up to whole blocks). See :func:`mcdp.audit_to_width`."""

    width: float
    max_draws: int = MAX_DRAWS
    first_draws: int = FIRST_DRAWS

    def __post_init__(self) -> None:
        width = _validate.positive("target_width", self.width)
        top = _validate.integer(
            "max_draws", self.max_draws, low=1, high=_validate.MAX_DRAWS
        )
        first = _validate.integer("first_draws", self.first_draws, low=1, high=top)
        for name, value in (
            ("width", width),
            ("max_draws", top),
            ("first_draws", first),
        ):
            object.__setattr__(self, name, value)


Stop = Draws | TargetWidth


class Plan(NamedTuple):
    """What a spec resolves to before its first draw (:attr:`AuditSpec.plan`)."""

    mechanism: Mechanism
    sanity_check: bool  # the ACL 2022 report, else the (epsilon, delta) audit
    dim: int
    pair: Any  # (2, dim) float64, or a black box's Datasets
    transformed: Any  # the pair after the mechanism's transform (clipping)
    pair_name: str
    attack: Attack  # as named; an audit binds it (prepare) before its draws
    params: Any
    clip: float
    nan_policy: str | None
    epsilons: tuple[float, ...]  # where the profile is read, the claim among them
    identity: str  # what the seed's key is folded with


@dataclasses.dataclass(frozen=True, eq=False)
class AuditSpec:
    """One audit, checked once (module docstring). Every field after ``epsilon``
    is keyword-only; specs compare by identity (an array pair has no equality).

    Attributes:
      mechanism: a registered name (``mcdp.MECHANISMS``) or a
        :class:`~mcdp.core.mechanism.Mechanism` (a black box included).
      epsilon: the claimed epsilon, finite and > 0.
      delta: the claimed delta in [0, 1) of an (epsilon, delta) audit; ``None``
        (default) for the sanity check, unless ``pair`` or ``clip`` is given (then
        0).
      dim: d; ``None`` where the pair (a ``(2, d)`` array) or the suite case says
        it. A ``dim`` that disagrees with an array pair is an error.
      pair: a named pair (:mod:`mcdp.pairs`; default ``axis``) or a ``(2, d)``
        array, for the (epsilon, delta) audit; for a black box called on
        datasets, :class:`~mcdp.core.datasets.Datasets` (its releases, of any
        structure, are encoded by :mod:`mcdp.core.releases`).
      pair_name: the name recorded for an array pair (default ``custom``).
      attack: a name of ``mcdp.ATTACKS`` or an :class:`~mcdp.core.attack.Attack`;
        default: ``majority`` for the sanity check (the paper's attack), ``auto``
        (the portfolio, :func:`mcdp.attacks.auto_attack`) for the (epsilon, delta)
        audit.
      params: the mechanism's parameters; default: the sanity check's
        (``calibrate_sanity_check``), or ``calibrate(epsilon, delta, d, clip)`` for the
        (epsilon, delta) audit (the sanity check's on ``zeros-ones`` or without
        ``calibrate``). A black box takes none.
      clip: the clipping radius C of the pair and the calibration (default 1).
      confidence: the joint confidence of every bound.
      dtype: ``"float64"`` (default) or ``"float32"``.
      prng: the stream of the seed (``mcdp.sampling.PRNG_IMPLS``).
      seed: the integer seed.
      nan_policy: DPText's sanity check only: ``zero`` (default), ``resample``,
        ``nan``.
      profile_epsilons: where the (epsilon, delta) audit reads the privacy profile
        (the claimed epsilon is always added).
      engine: where the draws run (:mod:`mcdp.engines`); default: the device
        engine on every device, the host engine for a black box.
      scheduler: a black box's draws run on a Dask cluster
        (:mod:`mcdp.engines.cluster`): a ``distributed.Client``, a scheduler's
        address, or ``local:N``; not with ``engine``.
      key: a key in place of the seed's (the seed then only goes into records).
      exact: whether to compute the exact values that the mechanism declares
        (some cost more than a small audit's counting).
    """

    mechanism: str | Mechanism
    epsilon: float
    _: dataclasses.KW_ONLY
    delta: float | None = None
    dim: int | None = None
    pair: str | np.ndarray | Datasets | None = None
    pair_name: str | None = None
    attack: str | Attack | None = None
    params: Any = None
    clip: float | None = None
    confidence: float = 0.95
    dtype: str = "float64"
    prng: str = PRNG_IMPL
    seed: int = 0
    nan_policy: str | None = None
    profile_epsilons: Sequence[float] = PROFILE_EPSILONS
    engine: Engine | None = None
    scheduler: Any = None
    key: jax.Array | None = None
    exact: bool = True

    def __post_init__(self) -> None:
        set_ = object.__setattr__.__get__(self)
        set_("epsilon", _validate.positive("epsilon", self.epsilon))
        if self.delta is not None:
            set_("delta", _validate.delta("delta", self.delta))  # as given: identity
        set_("confidence", _validate.open_unit("confidence", self.confidence))
        set_("dtype", _validate.one_of("dtype", self.dtype, DTYPES))
        set_("prng", _validate.one_of("prng", self.prng, PRNG_IMPLS))
        set_(
            "seed", _validate.integer("seed", self.seed, low=0, high=_validate.MAX_SEED)
        )
        if self.clip is not None:
            set_("clip", _validate.positive("clip", self.clip))
        if self.scheduler is not None:
            if self.engine is not None:
                raise ValueError("Expected engine or scheduler, got both.")
            check_scheduler(self.scheduler)
        if not isinstance(self.exact, bool):
            raise ValueError(f"Expected exact to be True or False, got {self.exact!r}.")
        set_("_plan", _resolve(self))

    @property
    def plan(self) -> Plan:
        """The mechanism, pair, attack, parameters and identity that the spec
        resolves to (computed once, when the spec is made)."""
        return self._plan  # type: ignore[attr-defined]

    @property
    def sanity_check(self) -> bool:
        """Whether the spec is the ACL 2022 sanity check (else an (epsilon, delta)
        audit)."""
        return self.plan.sanity_check

    @property
    def identity(self) -> str:
        """What the seed's key is folded with (:func:`mcdp.sampling.cell_key`)."""
        return self.plan.identity


def _mechanism(mechanism: str | Mechanism) -> Mechanism:
    if isinstance(mechanism, Mechanism):
        return mechanism
    return get_mechanism(mechanism)


def _dim(spec: AuditSpec, mech: Mechanism, pair: np.ndarray | None) -> int:
    """d: the field, else the width of an array pair (a pair of another width than
    ``dim`` fails the pair's shape check), else the suite case's length."""
    if spec.dim is not None:
        return _validate.integer("dim", spec.dim, low=1, high=_validate.MAX_DIM)
    if pair is not None and pair.ndim == 2:
        return _validate.integer("dim", pair.shape[1], low=1, high=_validate.MAX_DIM)
    if mech.name in SUITE and mech is MECHANISMS.get(mech.name):
        return SUITE[mech.name].dim
    raise ValueError(
        f"Expected dim, an integer in [1, {_validate.MAX_DIM}] (or a (2, d) pair "
        "that fixes it), got None."
    )


def with_releases(mech: Mechanism, pairs: Sequence[Datasets], seed: int) -> Mechanism:
    """The black box ``mech`` with its releases encoded as rows
    (:class:`~mcdp.core.releases.ReleaseCall`), as wide as a probe of every pair
    of datasets needs; as it is where they already are."""
    fn = mech.host_sample
    if isinstance(fn, ReleaseCall):
        return mech
    width = max(probe_width(fn, pair, seed) for pair in pairs)
    return mech._replace(host_sample=ReleaseCall(fn, width))


def _dataset_plan(spec: AuditSpec, mech: Mechanism, pair: Datasets) -> Plan:
    """An (epsilon, delta) audit of a black box on two datasets: its releases are
    encoded as rows (:mod:`mcdp.core.releases`), as wide as a probe of both
    datasets needs."""
    if mech.host_sample is None:
        raise ValueError(
            f"datasets are the inputs of black boxes (Mechanism.from_callable), "
            f"not of {mech.name!r}."
        )
    if spec.dim is not None and spec.dim != pair.width:
        raise ValueError(
            f"Expected dim = {pair.width} (the width of the datasets' records), "
            f"got {spec.dim}."
        )
    domain = mech.domain
    if isinstance(domain, DatasetDomain) and not neighbours(*pair, domain.relation):
        raise ValueError(
            f"Expected datasets that are neighbours under {domain.relation!r} "
            f"(the mechanism's domain), got {pair.describe()}."
        )
    for label in ("clip", "nan_policy", "params"):
        if getattr(spec, label) is not None:
            raise ValueError(f"{label} does not apply to a dataset audit.")
    delta = 0.0 if spec.delta is None else spec.delta
    mech = with_releases(mech, [pair], spec.seed)
    attack = get_attack(spec.attack or "auto")
    given = {_profile_epsilon(e) for e in spec.profile_epsilons}
    epsilons = tuple(sorted(given | {spec.epsilon}))
    pair_name = spec.pair_name or "custom"
    sizes = f"{len(pair.d)}x{len(pair.d_prime)}"
    identity = (
        f"datasets/{mech.name}/{spec.epsilon!r}/{delta!r}/{pair.width}/{sizes}/"
        f"{pair_name}"
    )
    return Plan(
        mech, False, pair.width, pair, pair, pair_name, attack, None, DEFAULT_CLIP,
        None, epsilons, identity,
    )  # fmt: skip


def _resolve(spec: AuditSpec) -> Plan:
    mech = _mechanism(spec.mechanism)
    if isinstance(spec.pair, Datasets):
        return _dataset_plan(spec, mech, spec.pair)
    if isinstance(mech.domain, DatasetDomain):
        raise ValueError(
            f"mechanism {mech.name!r} is called on datasets: give pair="
            "mcdp.Datasets(d, d_prime) (--datasets FILE.npz)."
        )
    sanity = spec.delta is None and spec.pair is None and spec.clip is None
    array = None
    if spec.pair is not None and not isinstance(spec.pair, str):
        array = np.asarray(spec.pair, dtype=np.float64)
    dim = _dim(spec, mech, array)
    clip = DEFAULT_CLIP if spec.clip is None else spec.clip
    if sanity:
        return _sanity_plan(spec, mech, dim)
    if spec.nan_policy is not None:
        raise ValueError(
            "nan_policy (--nan-policy) applies to the sanity check, not to "
            "(epsilon, delta) audits."
        )
    delta = 0.0 if spec.delta is None else spec.delta
    if array is None:
        pair_name = DEFAULT_PAIR if spec.pair is None else spec.pair
        pair = make_pair(pair_name, dim, clip)
    else:
        if array.shape != (2, dim) or not np.all(np.isfinite(array)):
            raise ValueError(
                f"Expected a finite pair of shape (2, {dim}), got {array.shape}."
            )
        pair, pair_name = array, spec.pair_name or "custom"
    attack = get_attack(spec.attack or "auto")
    params = spec.params
    if params is None and mech.host_sample is None:  # a black box takes none
        if pair_name == "zeros-ones" or mech.calibrate is None:
            params = mech.sanity_check_params(spec.epsilon, dim)
        else:
            params = mech.calibrate(spec.epsilon, delta, dim, clip)
    given = {_profile_epsilon(e) for e in spec.profile_epsilons}
    epsilons = tuple(sorted(given | {spec.epsilon}))
    identity = f"delta/{mech.name}/{spec.epsilon!r}/{delta!r}/{dim}/{pair_name}"
    return Plan(
        mech, False, dim, pair, mech.transformed(pair, params), pair_name, attack,
        params, clip, None, epsilons, identity,
    )  # fmt: skip


def _profile_epsilon(value: Any) -> float:
    if not isinstance(value, numbers.Real) or not 0 <= value < math.inf:
        raise ValueError(
            f"Expected profile_epsilons to be finite numbers >= 0, got {value!r}."
        )
    return float(value)


def _sanity_plan(spec: AuditSpec, mech: Mechanism, dim: int) -> Plan:
    nan_policy = spec.nan_policy
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
    params = spec.params
    if params is None and mech.host_sample is None:  # a black box takes none
        options = {"nan_policy": nan_policy} if mech.nan_policies else {}
        params = mech.sanity_check_params(spec.epsilon, dim, **options)
    identity = f"{SANITY_CHECK}/{mech.name}/{spec.epsilon!r}/{dim}/{nan_policy or ''}"
    attack = MAJORITY_VOTE if spec.attack is None else get_attack(spec.attack)
    if attack.name == "auto":
        raise ValueError(
            "attack 'auto' applies to (epsilon, delta) audits (give delta or a "
            "pair); the sanity check takes a two-outcome attack such as 'majority'."
        )
    pair = make_pair("zeros-ones", dim)
    return Plan(
        mech, True, dim, pair, mech.transformed(pair, params), "zeros-ones", attack,
        params, DEFAULT_CLIP, nan_policy, (spec.epsilon,), identity,
    )  # fmt: skip
