"""An expensive exact loss computed at every output against looked up per distinct
output.

Where a mechanism's exact privacy loss is expensive (``Mechanism.loss_by_block``:
a quadrature per output, the Sparse Vector patterns of ``svt1``, ``svt4`` and
``svt6``) and its outputs are discrete, the portfolio computes the loss once at each
distinct output of its training draws (``mcdp.attacks.ValueMemo``) and looks it up
in the selection draws and the counting loop, computing it only in a block that
holds an output the memo lacks. This runs the same default audit of each case of
``--cases`` (on its peers' pair, at the suite's 90 %, one ``--seed``) at
``--draws`` N in one process, with ``mcdp.attacks.LOSS_MEMO`` False, then True,
each after an untimed warm-up at 1e5 draws (``--alone``: the portfolio of the exact
loss alone, whose audit is little more than its counting): the audit's time, its
preparation's (the record's ``attack_seconds``) and the counting's (the rest),
their ratios, and whether the two audits gave the same record (bound, privacy
profile and selection table).

    python benchmarks/bench_loss_memo.py --cases svt1,svt4,svt6 --draws 1e6,1e7 \
        --json benchmarks/results/loss_memo.json

``--table`` compares instead the Sparse Vector losses integrated per output
(``mcdp.mechanisms._svt_density.TABLE_QUERIES = 0``: ``numerical-svt``'s before
2026-11-28; ``svt3``'s, ``svt34-parallel``'s and the patterns of ``svt1``, ``svt4``
and ``svt6`` before 2026-11-29) against their terms read from the tables of every
pattern (the default), JAX's caches cleared before each form (the setting is read
where the loss is traced):

    python benchmarks/bench_loss_memo.py --table --cases numerical-svt --draws 1e7 \
        --json benchmarks/results/loss_table.json

``--scores`` compares instead the portfolio's shared scorers computed at every
output (``mcdp.attacks.SCORE_MEMO = False``, before 2026-11-28) against looked up at
the distinct outputs of the training draws:

    python benchmarks/bench_loss_memo.py --scores --cases svt1,svt6,svt2 --draws 1e7 \
        --json benchmarks/results/score_memo.json

``--keys`` compares instead the selection draws with each candidate looked up by the
outputs' keys keying them itself (``mcdp.attacks.SHARED_KEYS = False``, before
2026-11-29) against keyed once for all of them:

    python benchmarks/bench_loss_memo.py --keys --cases svt1,svt6,svt2 --draws 1e8 \
        --json benchmarks/results/shared_keys.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parse_ints, print_table  # noqa: E402
from bench_selection import compared_row, in_both_forms, in_forms  # noqa: E402

from mcdp import attacks  # noqa: E402
from mcdp.mechanisms import _svt_density  # noqa: E402

FORMS = {"computed": False, "memoised": True}
SCORE_FORMS = {"scored": {"SCORE_MEMO": False}, "looked up": {"SCORE_MEMO": True}}
KEY_FORMS = {"each its own": {"SHARED_KEYS": False}, "shared": {"SHARED_KEYS": True}}
TABLE_FORMS = {
    "integrated": {"TABLE_QUERIES": 0},
    "tabled": {"TABLE_QUERIES": _svt_density.TABLE_QUERIES},
}


def bench_case(
    name: str, draws: int, seed: int, alone: bool, table: bool, scores: bool = False,
    keys: bool = False,
) -> dict:  # fmt: skip
    row: dict = {"case": name, "draws": draws, "seed": seed, "alone": alone}
    attack = attacks.auto_attack(candidates=("lr",)) if alone else "auto"
    if scores or keys:
        forms = SCORE_FORMS if scores else KEY_FORMS
        runs = in_forms(forms, name, "auto", draws, seed, module=attacks)
    elif table:
        runs = in_forms(
            TABLE_FORMS, name, attack, draws, seed, module=_svt_density, clear=True
        )
    else:
        runs = in_both_forms(
            "LOSS_MEMO", name, attack, draws, seed,
            module=attacks, forms=FORMS,
        )  # fmt: skip
    return compared_row(row, runs, stage="selection draws")


def _line(row: dict) -> str:
    before, after = (row[form] for form in row["forms"])
    return (
        f"| {row['case']} | {row['draws']:.0e} | {before['audit_seconds']:.1f} / "
        f"{after['audit_seconds']:.1f} | {row['audit_ratio']:.2f} "
        f"| {row['prep_ratio']:.2f} | {before['counting_seconds']:.1f} / "
        f"{after['counting_seconds']:.1f} | {row['counting_ratio']:.2f} "
        f"| {row['selection_ratio']:.2f} "
        f"| {'yes' if row['same_result'] else 'NO'} |"
    )


def header(forms: dict) -> str:
    pair = " / ".join(forms)
    return (
        f"| case | N | audit s, {pair} | ratio | prep ratio "
        f"| counting s, {pair} | ratio | selection draws ratio | same record |"
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", default="svt1,svt4,svt6")
    p.add_argument("--draws", type=parse_ints, default=[1_000_000])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--alone", action="store_true", help="the exact loss alone")
    p.add_argument(
        "--table", action="store_true",
        help="the Sparse Vector losses read from tables against integrated per row",
    )  # fmt: skip
    p.add_argument(
        "--scores", action="store_true",
        help="the shared scorers looked up against computed at every output",
    )  # fmt: skip
    p.add_argument(
        "--keys", action="store_true",
        help="the outputs keyed once for all candidates against by each its own",
    )  # fmt: skip
    p.add_argument("--json", default=None)
    args = p.parse_args()
    forms = (
        KEY_FORMS if args.keys
        else SCORE_FORMS if args.scores
        else TABLE_FORMS if args.table
        else FORMS
    )  # fmt: skip
    rows = (
        {
            **bench_case(
                name, n, args.seed, args.alone, args.table, args.scores, args.keys
            ),
            "forms": list(forms),
        }
        for name in args.cases.split(",")
        for n in args.draws
    )
    print_table(header(forms), rows, _line, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
