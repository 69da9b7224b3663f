"""The portfolio's selection draws batched over blocks against block by block.

The default audit (``attack="auto"``) scores its selection draws with every
candidate inside the engine's draw (``DeviceEngine.draw(transform=...)``). This
benchmark runs the same default audit of each suite case (``--cases``, on its
peers' pair, at the suite's 90 % confidence, one ``--seed``) at ``--draws`` N
twice in one process, after an untimed warm-up at 1e5 draws of each: with the
transform batched over the blocks of a call
(``mcdp.engines.device.TRANSFORM_BY_BLOCK = False``, the engine's form before
2026-11-26 on every platform) and applied one block after another (``True``, the
CPU's default since). It reports each audit's time and its preparation's (the
record's ``attack_seconds``: training, selection draws, choice), their ratios, and
whether the two audits gave the same bound, choice and selection table: the
values are the same up to rounding, so the counts should be.

    python benchmarks/bench_selection.py --draws 1e7 --cases svt1,svt6,numerical-svt \
        --json benchmarks/results/selection.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax  # noqa: E402
from _common import parse_ints, print_table  # noqa: E402
from bench_auto import _run  # noqa: E402

from mcdp.engines import device  # noqa: E402

WARMUP_DRAWS = 100_000
FORMS = {"batched": False, "by block": True}


def in_forms(
    forms: dict, name: str, attack, draws: int, seed: int, *, module=device,
    clear: bool = False,
):  # fmt: skip
    """``{form: (record, seconds)}``: the same audit at each form's settings of
    ``module`` (``forms``: form -> ``{flag: value}``), each after an untimed warm-up
    at :data:`WARMUP_DRAWS` (seed + 1, that form's compiles); every flag is left as
    it was. ``clear``: JAX's caches are cleared before each form (a flag that is
    read where a program is traced, not passed to it as a static argument)."""
    saved = {flag: getattr(module, flag) for form in forms.values() for flag in form}
    runs = {}
    try:
        for form, settings in forms.items():
            for flag, value in settings.items():
                setattr(module, flag, value)
            if clear:
                jax.clear_caches()
            _run(name, attack, WARMUP_DRAWS, seed + 1)
            runs[form] = _run(name, attack, draws, seed)
    finally:
        for flag, value in saved.items():
            setattr(module, flag, value)
    return runs


def in_both_forms(
    flag: str,
    name: str,
    attack,
    draws: int,
    seed: int,
    *,
    module=device,
    forms: dict = FORMS,
) -> dict:
    """:func:`in_forms` with ``module``'s one ``flag`` (by default a by-block
    setting of ``mcdp.engines.device``) at each value of ``forms``."""
    settings = {form: {flag: value} for form, value in forms.items()}
    return in_forms(settings, name, attack, draws, seed, module=module)


def compared_row(row: dict, runs: dict, stage: str | None = None) -> dict:
    """``row`` with each form's times and record from ``runs`` (of
    :func:`in_both_forms`) in ``row[form]``: the audit's seconds, its preparation's
    (the record's ``attack_seconds``), the counting's (the rest) and, where ``stage``
    names one, that stage of the preparation's (``selection_seconds`` for
    ``"selection draws"``); the first form's times over the second's
    (``{part}_ratio``); and whether the two records are the same
    (``same_result``: bound, choice, privacy profile and selection table)."""
    part = None if stage is None else stage.split()[0]
    for form, (record, seconds) in runs.items():
        prep = record.attack_seconds or 0.0
        row[form] = {
            "audit_seconds": seconds,
            "prep_seconds": prep,
            "counting_seconds": seconds - prep,
            "bound": record.epsilon_lower,
            "chose": record.attack,
            "profile": [p.__dict__ for p in record.profile],
            "selection": dict(record.selection or {}),
        }
        if part is not None:
            row[form][f"{part}_seconds"] = dict(record.attack_stages or {})[stage]
    before, after = (row[form] for form in runs)
    for timed in ("audit", "prep", "counting", *([part] if part else [])):
        row[f"{timed}_ratio"] = before[f"{timed}_seconds"] / after[f"{timed}_seconds"]
    row["same_result"] = all(
        before[k] == after[k] for k in ("bound", "chose", "profile", "selection")
    )
    return row


def stages_line(row: dict, forms) -> str:
    """The Markdown line of a :func:`compared_row` with ``stage="selection
    draws"``, its ``forms`` (two names) in order: the audit's, the selection draws'
    and the counting's seconds in each and their ratios (:func:`stages_header`)."""
    before, after = (row[form] for form in forms)

    def pair(part: str) -> str:
        return (
            f"{before[f'{part}_seconds']:.1f} / {after[f'{part}_seconds']:.1f} "
            f"| {row[f'{part}_ratio']:.2f}"
        )

    return (
        f"| {row['case']} | {row['draws']:.0e} | {after['chose']} | {pair('audit')} "
        f"| {pair('selection')} | {pair('counting')} "
        f"| {'yes' if row['same_result'] else 'NO'} |"
    )


def stages_header(forms) -> str:
    """The header of :func:`stages_line`'s table for ``forms``."""
    first, second = forms
    return (
        f"| case | N | chose | audit s, {first} / {second} | ratio "
        "| selection draws s | ratio | counting s | ratio | same record |"
    )


def bench_case(name: str, draws: int, seed: int) -> dict:
    row: dict = {"case": name, "draws": draws, "seed": seed}
    runs = in_both_forms("TRANSFORM_BY_BLOCK", name, "auto", draws, seed)
    return compared_row(row, runs)


def _line(row: dict) -> str:
    a, b = row["batched"], row["by block"]
    return (
        f"| {row['case']} | {row['draws']:.0e} | {b['chose']} "
        f"| {a['prep_seconds']:.1f} / {b['prep_seconds']:.1f} "
        f"| {row['prep_ratio']:.2f} "
        f"| {a['audit_seconds']:.1f} / {b['audit_seconds']:.1f} "
        f"| {row['audit_ratio']:.2f} | {row['same_result']} |"
    )


HEADER = (
    "| case | N | chose | prep batched / by block (s) | ratio "
    "| audit batched / by block (s) | ratio | same result |"
)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", default="svt1,svt6,numerical-svt")
    p.add_argument("--draws", type=parse_ints, default=[10_000_000])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    rows = (
        bench_case(name, n, args.seed)
        for name in args.cases.split(",")
        for n in args.draws
    )
    print_table(HEADER, rows, _line, args.json, key="rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
