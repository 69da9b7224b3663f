"""Experiment E4: audit the TrLaplace paper's (epsilon, delta) claims.

The paper's settings (its §6.1): d = 300, delta = 1/(4d), epsilon in {0.05, 0.1,
0.2, 0.5, 1, 5, 10, 20}, with "dummy dimensions" d = 500 for epsilon = 10 and
d = 1700 for epsilon = 20. Each of ``gaussian``, ``laplace`` (calibrated to the true
L1 sensitivity 2C·sqrt(d)) and ``trlaplace`` is run on the worst-case clipped
pairs ``axis`` and ``diagonal`` with the likelihood-ratio test (all three have known
densities) and, for the bounded TrLaplace noise, the support test. The result file
is keyed ``mechanism → epsilon → pair → attack``, each cell a
:class:`mcdp.auditing.DeltaAuditResult` as a dict, plus ``"_meta"``; it is written
atomically after every cell and resumed on rerun.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mcdp import _validate
from mcdp.auditing import DeltaAuditResult, audit_delta
from mcdp.experiments import _write_atomic, eps_key, load_resumable
from mcdp.sampling import PRNG_IMPL, PRNG_IMPLS

EXPERIMENT = "trlaplace"
E4_MECHANISMS = ("gaussian", "laplace", "trlaplace")
E4_EPSILONS = (0.05, 0.1, 0.2, 0.5, 1.0, 5.0, 10.0, 20.0)
E4_PAIRS = ("axis", "diagonal")
PAPER_DIMS = {10.0: 500, 20.0: 1700}  # the paper's dummy dimensions
DEFAULT_DIM = 300


def e4_dim(epsilon: float) -> int:
    return PAPER_DIMS.get(float(epsilon), DEFAULT_DIM)


def e4_delta(dim: int) -> float:
    return 1 / (4 * dim)


def e4_attacks(mechanism: str) -> tuple[str, ...]:
    return ("lr", "support") if mechanism == "trlaplace" else ("lr",)


@dataclasses.dataclass(frozen=True)
class E4Spec:
    draws: int
    mechanisms: Sequence[str] = E4_MECHANISMS
    epsilons: Sequence[float] = E4_EPSILONS
    pairs: Sequence[str] = E4_PAIRS
    clip: float = 1.0
    seed: int = 0
    confidence: float = 0.95
    dtype: str = "float64"
    prng: str = PRNG_IMPL

    def validated(self) -> E4Spec:
        if not (self.mechanisms and self.epsilons and self.pairs):
            raise ValueError("Expected at least one mechanism, epsilon and pair.")
        for name in self.mechanisms:
            _validate.one_of("mechanisms", name, E4_MECHANISMS)
        for pair in self.pairs:
            _validate.one_of("pairs", pair, E4_PAIRS)
        return dataclasses.replace(
            self,
            draws=_validate.integer(
                "draws", self.draws, low=1, high=_validate.MAX_DRAWS
            ),
            mechanisms=tuple(self.mechanisms),
            epsilons=tuple(_validate.positive("epsilons", e) for e in self.epsilons),
            pairs=tuple(self.pairs),
            clip=_validate.positive("clip", self.clip),
            seed=_validate.integer("seed", self.seed, low=0, high=_validate.MAX_SEED),
            confidence=_validate.open_unit("confidence", self.confidence),
            dtype=_validate.one_of("dtype", self.dtype, _validate.DTYPES),
            prng=_validate.one_of("prng", self.prng, PRNG_IMPLS),
        )

    def meta(self) -> dict[str, Any]:
        return {
            "experiment": EXPERIMENT,
            "draws": self.draws,
            "clip": self.clip,
            "seed": self.seed,
            "confidence": self.confidence,
            "dtype": self.dtype,
            "prng_impl": self.prng,  # a grid never mixes two streams
        }

    def cells(self) -> list[tuple[str, float, str, str]]:
        return [
            (m, e, p, a)
            for m in self.mechanisms
            for e in self.epsilons
            for p in self.pairs
            for a in e4_attacks(m)
        ]


def load_e4(path: Path, spec: E4Spec) -> dict[str, Any]:
    """An existing E4 file to resume (same settings), or an empty one."""
    return load_resumable(path, spec.meta())


def run_e4(
    spec: E4Spec,
    out: str | Path,
    *,
    on_cell: Callable[[DeltaAuditResult | dict, bool], None] | None = None,
) -> dict[str, Any]:
    """Runs every E4 cell not yet in ``out``; writes ``out`` after each cell."""
    spec = spec.validated()
    path = Path(out)
    data = load_e4(path, spec)
    for mech, eps, pair, attack in spec.cells():
        slot = (
            data.setdefault(mech, {}).setdefault(eps_key(eps), {}).setdefault(pair, {})
        )
        if attack in slot and not slot[attack].get("interrupted", False):
            if on_cell is not None:
                on_cell(slot[attack], True)
            continue
        dim = e4_dim(eps)
        result = audit_delta(
            mech,
            eps,
            e4_delta(dim),
            dim,
            spec.draws,
            pair=pair,
            attack=attack,
            clip=spec.clip,
            seed=spec.seed,
            confidence=spec.confidence,
            dtype=spec.dtype,
            prng=spec.prng,
        )
        slot[attack] = result.to_dict()
        _write_atomic(path, data)
        if on_cell is not None:
            on_cell(result, False)
        if result.interrupted:
            raise KeyboardInterrupt
    return data
