"""The TrLaplace paper (Hu, Habernal, Wang et al., *high dimensional truncated
Laplacian mechanism*): an audit of its (epsilon, delta) claims.

The paper's settings (its §6.1): d = 300, delta = 1/(4d), epsilon in {0.05, 0.1,
0.2, 0.5, 1, 5, 10, 20}, with "dummy dimensions" d = 500 for epsilon = 10 and
d = 1700 for epsilon = 20. Each of ``gaussian``, ``laplace`` (calibrated to the true
L1 sensitivity 2C·sqrt(d)) and ``trlaplace`` is run on the worst-case clipped
pairs ``axis`` and ``diagonal`` with the likelihood-ratio test (all three have known
densities) and, for the bounded TrLaplace noise, the support test. The result file
is keyed ``mechanism → epsilon → pair → attack``, each cell a
:class:`~mcdp.records.DeltaAuditResult` as a dict.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from functools import partial
from typing import Any, ClassVar

from mcdp import _validate
from mcdp.auditing import audit_delta_iter
from mcdp.core.records import DeltaAuditResult
from mcdp.experiments.store import Cell, Grid, eps_key

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


@dataclasses.dataclass(frozen=True, kw_only=True)
class TrLaplaceGrid(Grid):
    """The cells of the TrLaplace audit and the settings shared by all of them."""

    EXPERIMENT: ClassVar[str] = EXPERIMENT
    RECORD: ClassVar[type[DeltaAuditResult]] = DeltaAuditResult
    COORDINATES: ClassVar[tuple[str, ...]] = ("mechanisms", "epsilons", "pairs")
    EMPTY: ClassVar[str] = "Expected at least one mechanism, epsilon and pair."
    DEPTH: ClassVar[int] = 4
    RECORD_NAME: ClassVar[str] = "(epsilon, delta) audit"

    mechanisms: Sequence[str] = E4_MECHANISMS
    epsilons: Sequence[float] = E4_EPSILONS
    pairs: Sequence[str] = E4_PAIRS
    clip: float = 1.0

    def validated(self) -> TrLaplaceGrid:
        for name in self.mechanisms:
            _validate.one_of("mechanisms", name, E4_MECHANISMS)
        for pair in self.pairs:
            _validate.one_of("pairs", pair, E4_PAIRS)
        return dataclasses.replace(
            super().validated(),
            pairs=tuple(self.pairs),
            clip=_validate.positive("clip", self.clip),
        )

    def meta(self) -> dict[str, Any]:
        meta = super().meta()  # the clip goes after the draws, as files have it
        return (
            {k: meta[k] for k in ("experiment", "draws")} | {"clip": self.clip} | meta
        )

    def cells(self) -> list[Cell]:
        run = partial(
            audit_delta_iter,
            clip=self.clip,
            seed=self.seed,
            confidence=self.confidence,
            dtype=self.dtype,
            prng=self.prng,
        )
        cells = []
        for m in self.mechanisms:
            for e in self.epsilons:
                dim = e4_dim(e)
                for p in self.pairs:
                    for a in e4_attacks(m):
                        cells.append(
                            Cell(
                                path=(m, eps_key(e), p, a),
                                weight=dim,
                                label=f"{m} eps={e:g} {p} {a}",
                                run=partial(
                                    run,
                                    m,
                                    e,
                                    e4_delta(dim),
                                    dim,
                                    self.draws,
                                    pair=p,
                                    attack=a,
                                ),  # fmt: skip
                            )
                        )
        return cells


E4Spec = TrLaplaceGrid  # the name earlier versions used
