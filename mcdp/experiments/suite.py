"""The benchmark suite of the auditing literature, audited with the default attack.

StatDP (Ding et al., CCS 2018), DP-Sniper (Bichsel et al., S&P 2021) and
Delta-Siege (Lokna et al., CCS 2023) evaluate on the mechanisms of
:data:`mcdp.mechanisms.suite.SUITE`; this grid audits each at its claim on each of
its named pairs (:mod:`mcdp.pairs`), pure epsilon (delta 0), by default with the
default attack, ``auto`` (the portfolio of :func:`mcdp.attacks.auto_attack`), as
every audit is; ``attacks`` names others (``("learned",)`` is the grid that earlier
versions ran by default). The file is keyed ``mechanism → pair → attack``, each cell a
:class:`~mcdp.records.DeltaAuditResult` as a dict with its ``epsilon_lower``
beside the mechanism's ``epsilon_exact`` where known.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from functools import partial
from typing import Any, ClassVar

from mcdp import _validate
from mcdp.attacks import ATTACKS, auto_attack, learned_attack
from mcdp.auditing import audit_delta_iter
from mcdp.core.records import DeltaAuditResult
from mcdp.experiments.store import Cell, Grid
from mcdp.mechanisms.suite import SUITE

EXPERIMENT = "benchmarks"


@dataclasses.dataclass(frozen=True, kw_only=True)
class SuiteGrid(Grid):
    """The cases of the suite (all by default), their pairs (each case's own; a
    given list keeps those of each case that are in it) and the attacks."""

    EXPERIMENT: ClassVar[str] = EXPERIMENT
    RECORD: ClassVar[type[DeltaAuditResult]] = DeltaAuditResult
    COORDINATES: ClassVar[tuple[str, ...]] = ("mechanisms", "pairs", "attacks")
    EMPTY: ClassVar[str] = "Expected at least one mechanism of the suite."
    DEPTH: ClassVar[int] = 3
    RECORD_NAME: ClassVar[str] = "(epsilon, delta) audit"

    mechanisms: Sequence[str] = tuple(SUITE)
    pairs: Sequence[str] | None = None
    attacks: Sequence[str] = ("auto",)
    # None: the attack's own, from --draws (learned and auto; the others draw none)
    train_draws: int | None = None
    select_draws: int | None = None

    def validated(self) -> SuiteGrid:
        for name in self.mechanisms:
            _validate.one_of("mechanisms", name, SUITE)
        if not self.attacks:
            raise ValueError("Expected at least one attack in attacks.")
        for attack in self.attacks:
            _validate.one_of("attacks", attack, ATTACKS)
        return dataclasses.replace(
            super().validated(),
            pairs=None if self.pairs is None else tuple(self.pairs),
            attacks=tuple(self.attacks),
            train_draws=_validate.draws_or_none("train_draws", self.train_draws),
            select_draws=_validate.draws_or_none("select_draws", self.select_draws),
        )

    def meta(self) -> dict[str, Any]:
        return super().meta() | {
            "train_draws": self.train_draws,
            "select_draws": self.select_draws,
        }

    def cells(self) -> list[Cell]:
        sizes = dict(train_draws=self.train_draws, select_draws=self.select_draws)
        sized = {"learned": learned_attack(**sizes), "auto": auto_attack(**sizes)}
        run = partial(
            audit_delta_iter,
            seed=self.seed,
            confidence=self.confidence,
            dtype=self.dtype,
            prng=self.prng,
        )
        cells = []
        for name in self.mechanisms:
            case = SUITE[name]
            pairs = [p for p in case.pairs if self.pairs is None or p in self.pairs]
            for pair in pairs:
                for attack in self.attacks:
                    cells.append(
                        Cell(
                            path=(name, pair, attack),
                            weight=case.dim,
                            label=f"{name} {pair} {attack}",
                            run=partial(
                                run,
                                name,
                                case.epsilon,
                                0.0,
                                case.dim,
                                self.draws,
                                pair=pair,
                                attack=sized.get(attack, attack),
                            ),  # fmt: skip
                        )
                    )
        return cells


SuiteSpec = SuiteGrid  # the name earlier versions used
