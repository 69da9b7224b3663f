"""What the command line prints of a record: the records hold data, their text is
here.

:func:`render` is a record's full text (what ``mcdp audit`` and ``mcdp search``
print), :func:`summary` one line of a grid cell, :func:`round_line` one round of a
run to a target width.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mcdp.core.datasets import DATASET_RELATIONS, Datasets
from mcdp.core.records import (
    AuditResult,
    DeltaAuditResult,
    InputSearchResult,
    TargetWidthResult,
)
from mcdp.sensitivity import SensitivityRecord
from mcdp.violations import ViolationResult

PRIME_LABEL = "D' = 1^d"


def _fmt(value: float) -> str:
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.4g}"


def _black_box_line(record: Any) -> list[str]:
    """What the printed record says about a black-box mechanism."""
    if record.callable is None:
        return []
    library = f" ({record.library})" if record.library else ""
    seeded = (
        ""
        if record.reproducible
        else "; not reproducible: it draws from its own "
        "randomness, so the seed does not fix its counts"
    )
    return [f"black box {record.callable}{library}{seeded}"]


def render(record: Any) -> str:
    """The text of ``record`` as the command line prints it."""
    if isinstance(record, AuditResult):
        return _audit(record)
    if isinstance(record, TargetWidthResult):
        return f"{_audit(record.audit)}\n{record.outcome}"
    if isinstance(record, DeltaAuditResult):
        return _delta_audit(record)
    if isinstance(record, InputSearchResult):
        return _search(record)
    if isinstance(record, ViolationResult):
        return _violation(record)
    if isinstance(record, SensitivityRecord):
        return _sensitivity(record)
    raise TypeError(f"no text for a {type(record).__name__}")


def summary(record: AuditResult | DeltaAuditResult) -> str:
    """One line: the cell and its bounds, as a grid run reports it (on delta; on
    epsilon where the claim is pure)."""
    if isinstance(record, AuditResult):
        return _audit_summary(record)
    return _delta_summary(record)


def _violation(r: ViolationResult) -> str:
    return (
        f"{r.dist} n={r.dim} ({r.clip}): {r.violations:,} of "
        f"{r.pairs:,} pairs > 2C: {r.fraction:.4%} "
        f"[{r.fraction_lower:.4%}, {r.fraction_upper:.4%}] "
        f"({r.confidence:.0%} CI)"
    )


def _sensitivity(r: SensitivityRecord) -> str:
    return (
        f"{r.dim:>5} {r.max_l1:>14.6f} {r.claimed:>11.4g} "
        f"{r.theorem:>10.6g} {r.ratio:>9.6f}"
    )


def _audit(r: AuditResult) -> str:
    (d0, d1), (e0, e1) = r.counts
    width = max(len(f"{c:,}") for c in (d0, d1, e0, e1, 10**7))
    exact = "unknown" if r.exact is None else _fmt(r.exact)
    head = f"{r.mechanism}" + (f" (NaN policy {r.nan_policy})" if r.nan_policy else "")
    lines = [
        f"{head}, epsilon = {r.epsilon:g}, d = {r.dim}: "
        f"{r.draws:,} draws per dataset (seed {r.seed}, {r.dtype})",
        f"{'':12}{'guess 0':>{width}}  {'guess 1':>{width}}",
        f"{'D  = 0^d':12}{d0:>{width},}  {d1:>{width},}",
        f"{PRIME_LABEL:12}{e0:>{width},}  {e1:>{width},}",
        f"privacy loss {_fmt(r.loss)}  "
        f"[{_fmt(r.loss_lower)}, {_fmt(r.loss_upper)}] "
        f"({r.confidence:.0%} CI)   exact {exact}",
    ]
    if r.violated is not None:
        verdict = (
            f"violated: the lower bound {_fmt(r.loss_lower)} exceeds epsilon"
            if r.violated
            else "not refuted by this attack"
        )
        lines.append(f"claim {r.claim}: {verdict}")
    if r.interrupted:
        lines.append("interrupted: the counts above are those finished so far")
    lines += _black_box_line(r)
    lines.append(f"{r.seconds:.1f} s on {r.backend}")
    return "\n".join(lines)


def round_line(r: TargetWidthResult) -> str:
    """One line on the counts: round, draws, loss interval and width."""
    a = r.audit
    return (
        f"round {len(r.rounds)}: {a.draws:>15,} draws per dataset, loss "
        f"{_fmt(a.loss)} [{_fmt(a.loss_lower)}, {_fmt(a.loss_upper)}], "
        f"width {_fmt(r.width)}"
    )


def _selection_line(r: DeltaAuditResult) -> list[str]:
    """What the portfolio compared on its selection draws, the best promise first,
    and why it chose another where it did."""
    if not r.selection:
        return []
    ranked = sorted(r.selection.items(), key=lambda item: -item[1])
    scores = ", ".join(f"{name} {_fmt(score)}" for name, score in ranked)
    line = f"auto chose {r.attack}; promised on the selection draws: {scores}"
    if ranked[0][1] > r.selection.get(r.attack, ranked[0][1]):
        line += (
            f" ({r.attack} is earlier in the portfolio's order and within the "
            "margin of the best promise's noise)"
        )
    if r.screened and r.attack in r.screened:
        line += (
            f"; chosen on the first {r.screen_draws:,} selection draws per dataset "
            "alone, the rest not drawn"
        )
    elif r.screened:
        line += (
            f"; judged on the first {r.screen_draws:,} selection draws per dataset "
            f"alone, and left there: {', '.join(r.screened)}"
        )
    if r.screened and r.screen_steps:
        line += f" (the scorers among them trained for it on {r.screen_steps} steps)"
    return [line]


def _datasets_lines(r: DeltaAuditResult) -> list[str]:
    """A dataset audit's two datasets and what their releases looked like."""
    if r.datasets is None:
        return []
    pair = Datasets(*(np.asarray(r.datasets[k], float) for k in ("d", "d_prime")))
    lines = [pair.describe()]
    if r.releases:
        s = r.releases

        def both(key: str) -> str:
            return " / ".join(f"{v:.1%}" for v in s[key])

        lines.append(
            f"releases (D / D', {s['draws']:,} each): raised {both('raised')}, "
            f"NaN or inf {both('nonfinite')}, structures "
            f"{' / '.join(str(v) for v in s['structures'])}"
        )
    return lines


def _delta_audit(r: DeltaAuditResult) -> str:
    exact = "unknown" if r.delta_exact is None else f"{r.delta_exact:.4g}"
    verdict = "VIOLATED" if r.violated else "not refuted"
    because = " (the lower bound exceeds the claimed delta)" if r.violated else ""
    pure = []
    if r.epsilon_lower is not None:
        known = "unknown" if r.epsilon_exact is None else _fmt(r.epsilon_exact)
        pure = [
            f"pure epsilon: {r.confidence:.0%} lower bound "
            f"{_fmt(r.epsilon_lower)}, exact {known}"
        ]
    if r.datasets is not None:
        where = f"the {r.pair} datasets (records of {r.dim} column"
        where += "s)" if r.dim != 1 else ")"
    else:
        where = f"the {r.pair} pair (d = {r.dim}, C = {r.clip:g})"
    return "\n".join(
        [
            f"{r.mechanism} on {where}, {r.attack} attack: {r.draws:,} draws per "
            f"input (seed {r.seed}, {r.dtype})",
            *_datasets_lines(r),
            f"claimed (epsilon, delta) = ({r.epsilon:g}, {r.delta_claimed:.4g})",
            f"delta at epsilon = {r.epsilon:g}: "
            f"estimate {r.delta_estimate:.4g}, {r.confidence:.0%} lower "
            f"bound {r.delta_lower:.4g}, exact {exact}",
            *pure,
            *_selection_line(r),
            f"claim {verdict}{because}",
            *_black_box_line(r),
            f"{r.seconds:.1f} s on {r.backend}",
        ]
    )


def _search(r: InputSearchResult) -> str:
    exact = "unknown" if r.epsilon_exact is None else _fmt(r.epsilon_exact)
    rows = sorted(r.candidates, key=lambda c: -c.score)
    shown = [
        f"  {c.label:<28} {c.source:<8} screen {_fmt(c.score):>8}"
        + (
            f"  confirmed {_fmt(c.confirmed_lower)}"
            if c.confirmed_lower is not None
            else ""
        )
        for c in rows[: max(r.confirm, 8)]
    ]
    verdict = "VIOLATED" if r.violated else "not refuted"
    if r.domain.get("relation") in DATASET_RELATIONS:  # two datasets of records
        d, d_prime = (np.asarray(w, dtype=float).reshape(-1, r.dim) for w in r.witness)
        pair = Datasets(d, d_prime).describe()
    else:
        pair = np.array2string(np.asarray(r.witness), precision=4)
    return "\n".join(
        [
            f"{r.mechanism}: search over {len(r.candidates)} pairs "
            f"({r.domain['relation']} relation, d = {r.dim}), "
            f"{r.attack} attack; screened on {r.screen_draws:,} draws, "
            f"best {r.confirm} confirmed on {r.draws:,} fresh draws "
            f"(seed {r.seed})",
            "best screened (lower bound of the score):",
            *shown,
            f"witness {r.witness_label}: {pair}",
            f"pure epsilon: {r.confidence:.0%} lower bound "
            f"{_fmt(r.epsilon_lower)}, exact {exact}",
            f"delta at epsilon = {r.epsilon:g}: {r.confidence:.0%} lower "
            f"bound {r.delta_lower:.4g} (claimed {r.delta:.4g})",
            f"claim ({r.epsilon:g}, {r.delta:.4g}) {verdict}",
            f"{r.seconds:.1f} s ({r.screen_seconds:.1f} s screening) on {r.backend}",
        ]
    )


def _audit_summary(r: AuditResult) -> str:
    """One line: the cell and its loss, as a grid run reports it."""
    exact = "  -  " if r.exact is None else f"{r.exact:.4g}"
    return (
        f"{r.mechanism:>8} eps={r.epsilon:<5g} d={r.dim:<4} "
        f"loss {r.loss:.4g} [{r.loss_lower:.4g}, {r.loss_upper:.4g}] "
        f"exact {exact}"
    )


def _delta_summary(r: DeltaAuditResult) -> str:
    """One line: the cell and its bounds (on delta; on epsilon where the claim
    is pure), as a grid run reports it."""
    head = (
        f"{r.mechanism:>9} eps={r.epsilon:<5g} d={r.dim:<5} {r.pair:>8} {r.attack:>7}: "
    )
    flag = "  VIOLATED" if r.violated else ""
    if r.delta_claimed == 0 and r.epsilon_lower is not None:
        exact = "?" if r.epsilon_exact is None else _fmt(r.epsilon_exact)
        return f"{head}epsilon lower {_fmt(r.epsilon_lower)}, exact {exact}{flag}"
    return (
        f"{head}delta claimed {r.delta_claimed:.3g}, lower "
        f"{r.delta_lower:.3g}, estimate {r.delta_estimate:.3g}{flag}"
    )
