"""Result records: what every audit and experiment returns and stores.

Every record is a frozen dataclass that derives from :class:`Record`: it carries the
:class:`Provenance` of the run (mcdp and jax versions, backend, x64 flag, stream of
the seed) as its last fields, and has ``to_dict`` (flat, JSON-ready), ``to_json``
(one object; infinities as ``Infinity``) and ``from_dict`` (for the resumable result
files). Records hold data only: what the command line prints of them is in
:mod:`mcdp.cli._text`.

* :class:`AuditResult`: one sanity check (ACL 2022; :func:`mcdp.audit`);
* :class:`TargetWidthResult`: one sanity check run to a target width;
* :class:`DeltaAuditResult` with its :class:`ProfilePoint` list: one (epsilon,
  delta) audit (:func:`mcdp.audit_delta`);
* the EMNLP 2021 records, :class:`mcdp.violations.ViolationResult` and
  :class:`mcdp.sensitivity.SensitivityRecord`, live beside their computations.
"""

from __future__ import annotations

import dataclasses
import json
import math
from importlib import metadata
from typing import Any

import jax

from mcdp.core.mechanism import callable_name

try:
    __version__ = metadata.version("mcdp")
except metadata.PackageNotFoundError:  # running from a source tree
    __version__ = "0.1.0"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Provenance:
    """How a result was made: every record stores these fields."""

    mcdp_version: str
    jax_version: str
    backend: str
    x64: bool
    prng_impl: str  # the stream of the seed or key (mcdp.prng.STREAMS)


PROVENANCE_FIELDS = tuple(f.name for f in dataclasses.fields(Provenance))


def provenance(dtype: str, prng: str) -> dict[str, Any]:
    """The :class:`Provenance` fields of a run in ``dtype`` from stream ``prng`` on
    this process: pass them to a record as ``**provenance(dtype, prng)``."""
    return {
        "mcdp_version": __version__,
        "jax_version": jax.__version__,
        "backend": jax.default_backend(),
        "x64": dtype == "float64",
        "prng_impl": prng,
    }


def black_box(mechanism: Any) -> dict[str, Any]:
    """The fields that name a black-box mechanism (``callable``: its function as
    ``module:qualname``; ``library``: ``name==version``; ``reproducible``: false
    where it draws from randomness of its own, so a seed does not fix its counts);
    ``None``, ``None``, ``True`` for a JAX mechanism."""
    if mechanism.host_sample is None:
        return {"callable": None, "library": None, "reproducible": True}
    return {
        "callable": callable_name(mechanism.host_sample),
        "library": mechanism.library,
        "reproducible": bool(mechanism.reproducible),
    }


@dataclasses.dataclass(frozen=True, kw_only=True)
class Record(Provenance):
    """The base of every result record."""

    def to_dict(self) -> dict[str, Any]:
        """The fields, the record's own first, then its provenance; nested records
        become dicts."""
        own = [f.name for f in dataclasses.fields(self)]
        order = [n for n in own if n not in PROVENANCE_FIELDS] + list(PROVENANCE_FIELDS)
        values = dataclasses.asdict(self)
        return {name: values[name] for name in order}

    def to_json(self) -> str:
        """One JSON object; infinities are written as ``Infinity``."""
        return json.dumps(self.to_dict(), allow_nan=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Record:
        """The record of :meth:`to_dict`'s output (a cell of a result file)."""
        return cls(**data)


# --- the sanity check --------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class AuditResult(Record):
    """One sanity check (ACL 2022): counts, estimate, bounds, exact value.

    ``counts`` is ``[[D→0, D→1], [D'→0, D'→1]]``; ``loss`` is the MLE privacy loss of
    the attack (the majority vote unless ``attack`` says otherwise) with the
    interval ``[loss_lower, loss_upper]`` at ``confidence``; ``exact`` is the exact
    loss of the majority vote (``None`` where not known, or for another attack).
    ``violated`` is true when ``loss_lower`` exceeds the claimed epsilon, ``None``
    where the claim is not a pure epsilon.
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
    claim: str | None
    violated: bool | None
    interrupted: bool
    # added after the first grid files were written: they may lack these
    attack: str = "majority"
    epsilon_lower: float | None = None  # the pure-epsilon lower bound: loss_lower
    # black-box mechanisms (Mechanism.from_callable): see black_box()
    callable: str | None = None
    library: str | None = None
    reproducible: bool = True

    @property
    def width(self) -> float:
        """``loss_upper - loss_lower``; ``inf`` where the upper end is infinite."""
        if math.isinf(self.loss_upper):
            return math.inf
        return self.loss_upper - self.loss_lower


@dataclasses.dataclass(frozen=True)
class TargetWidthResult:
    """A sanity check run in rounds until its loss interval is at most
    ``target_width`` wide.

    ``audit`` holds the counts and the estimate: the same :class:`AuditResult` as
    ``audit(..., draws=audit.draws)`` with the same seed (``seconds`` and
    ``interrupted`` aside), and with it the provenance. The other fields say how
    the target stands:

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

    to_json = Record.to_json


# --- (epsilon, delta) audits -------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ProfilePoint:
    """The privacy profile at one epsilon: delta's estimate and simultaneous bounds,
    and the exact value where the mechanism declares one for the pair."""

    epsilon: float
    delta_estimate: float
    delta_lower: float
    delta_upper: float
    delta_exact: float | None


@dataclasses.dataclass(frozen=True)
class Tradeoff:
    """The simultaneous upper confidence points ``(alpha, beta)`` of the tests that
    the final events define (:meth:`mcdp.statistics.DeltaBounds.tradeoff`): the
    mechanism's trade-off curve lies below every one of them. ``gdp_mu_lower`` is the
    largest Gaussian-DP mu they refute (every smaller mu is refuted too)."""

    points: list[list[float]]
    gdp_mu_lower: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class DeltaAuditResult(Record):
    """An (epsilon, delta) audit of one mechanism on one pair with one attack.

    ``profile`` reads the same counts at every epsilon of the audit (the claimed one
    among them); ``delta_*`` are its point at the claimed epsilon, and ``violated``
    is ``delta_lower > delta_claimed``. ``loss*`` is the largest log ratio of an
    event's probabilities, on the same simultaneous intervals, so ``epsilon_lower``
    (= ``loss_lower``) is the pure-epsilon lower bound: with ``delta_claimed = 0``,
    ``violated`` is ``epsilon_lower > epsilon``. ``exact`` is the exact loss of the
    majority vote on ``zeros-ones`` where known, ``epsilon_exact`` the mechanism's
    exact pure-epsilon loss on the pair where it declares one. ``events`` names the
    thresholds of the attack's ordered outcomes (event ``k`` is ``outcome >= k``;
    the audit also reads their complements), and ``tradeoff`` the trade-off points
    they give. Under the portfolio (``attack="auto"``), ``attack`` names the
    candidate that won and ``selection`` what each candidate promised on the
    selection draws.
    """

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
    profile: list[ProfilePoint]
    seconds: float
    dtype: str
    interrupted: bool
    # added after the first grid files were written: they may lack these
    epsilon_lower: float | None = None
    epsilon_exact: float | None = None
    attack_seconds: float | None = None  # of seconds: preparing the attack
    events: list[str] | None = None
    tradeoff: Tradeoff | None = None
    # attack "auto": each candidate's promised lower bound on the selection draws
    # (attack names the one counted)
    selection: dict[str, float] | None = None
    # attack "auto": seconds of its preparation by stage (Attack.preparation)
    attack_stages: dict[str, float] | None = None
    # attack "auto", from mcdp.attacks.SCREEN_FROM selection draws per input: the
    # candidates whose selection score is that of the first screen_draws
    # selection draws per input alone, the screening that left them there (the
    # winner among them where it was the only one left, an outcome attack)
    screened: list[str] | None = None
    screen_draws: int | None = None
    # and where a scorer among them was trained on the screening's steps alone
    # (mcdp.attacks.SCREEN_STEPS, of mcdp.learning.STEPS), those steps
    screen_steps: int | None = None
    # a dataset audit: the two datasets (records as lists), and on a sample of
    # their own, how often each one's releases raised or held NaN/inf, and how
    # many structures they took (mcdp.core.releases.summary)
    datasets: dict[str, list] | None = None
    releases: dict[str, Any] | None = None
    # black-box mechanisms (Mechanism.from_callable): see black_box()
    callable: str | None = None
    library: str | None = None
    reproducible: bool = True

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DeltaAuditResult:
        nested = {"profile": [ProfilePoint(**point) for point in data["profile"]]}
        if data.get("tradeoff") is not None:
            nested["tradeoff"] = Tradeoff(**data["tradeoff"])
        return cls(**(data | nested))


# --- the input search --------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class SearchCandidate:
    """One pair the search screened: where it came from (``named``, ``random`` or
    ``gradient``), its label (the pattern's name, or the source and an index), the
    pair, its screening score (``score``, the lower bound that ranks candidates,
    and ``estimate``, the point estimate that breaks ties) and, where it was among
    the best ``confirm``, the confirmed lower bound on the final draws."""

    label: str
    source: str
    pair: list[list[float]]
    score: float
    estimate: float
    confirmed: bool
    confirmed_lower: float | None


@dataclasses.dataclass(frozen=True, kw_only=True)
class InputSearchResult(Record):
    """A search over neighbouring pairs (:func:`mcdp.search`).

    ``candidates`` were screened on draws that no confirmation uses; the best
    ``confirm`` of them were audited again on fresh draws, each at confidence
    ``1 - (1 - confidence) / confirm``, so the witness's bounds (``epsilon_lower``,
    ``delta_lower``) hold at ``confidence`` although the witness is the best of
    those confirmations. ``witness_audit`` is the witness's confirmation (a
    :class:`DeltaAuditResult` as a dict, at its corrected confidence). ``score``
    says what ranks pairs: ``epsilon_lower`` for a pure claim (``delta = 0``),
    ``delta_lower`` otherwise.
    """

    mechanism: str
    epsilon: float
    delta: float
    dim: int
    clip: float
    attack: str
    screen_attack: str
    budget: int
    confirm: int
    draws: int
    screen_draws: int
    seed: int
    confidence: float
    domain: dict[str, Any]
    score: str
    witness: list[list[float]]
    witness_label: str
    epsilon_lower: float
    epsilon_exact: float | None
    delta_lower: float
    delta_estimate: float
    violated: bool
    witness_audit: dict[str, Any]
    candidates: list[SearchCandidate]
    seconds: float
    screen_seconds: float
    dtype: str

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InputSearchResult:
        candidates = [SearchCandidate(**c) for c in data["candidates"]]
        return cls(**(data | {"candidates": candidates}))


SearchResult = InputSearchResult  # the name earlier versions used

__all__ = [
    "PROVENANCE_FIELDS",
    "AuditResult",
    "DeltaAuditResult",
    "InputSearchResult",
    "ProfilePoint",
    "Provenance",
    "Record",
    "SearchCandidate",
    "SearchResult",
    "TargetWidthResult",
    "Tradeoff",
    "black_box",
    "provenance",
]
