"""An expensive exact loss computed at every output against looked up per distinct
output.

Where a mechanism's exact privacy loss is expensive (``Mechanism.loss_by_block``:
a quadrature per output, the Sparse Vector patterns of ``svt1``, ``svt4`` and
``svt6``) and its outputs are discrete, the portfolio computes the loss once at each
distinct output of its training draws (``mcdp.attacks.LossMemo``) and looks it up
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
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parse_ints, print_table  # noqa: E402
from bench_selection import compared_row, in_both_forms  # noqa: E402

from mcdp import attacks  # noqa: E402

FORMS = {"computed": False, "memoised": True}


def bench_case(name: str, draws: int, seed: int, alone: bool) -> dict:
    row: dict = {"case": name, "draws": draws, "seed": seed, "alone": alone}
    attack = attacks.auto_attack(candidates=("lr",)) if alone else "auto"
    runs = in_both_forms(
        "LOSS_MEMO", name, attack, draws, seed,
        module=attacks, forms=FORMS,
    )  # fmt: skip
    return compared_row(row, runs)


def _line(row: dict) -> str:
    before, after = (row[form] for form in FORMS)
    return (
        f"| {row['case']} | {row['draws']:.0e} | {before['audit_seconds']:.1f} / "
        f"{after['audit_seconds']:.1f} | {row['audit_ratio']:.2f} "
        f"| {row['prep_ratio']:.2f} | {before['counting_seconds']:.1f} / "
        f"{after['counting_seconds']:.1f} | {row['counting_ratio']:.2f} "
        f"| {'yes' if row['same_result'] else 'NO'} |"
    )


HEADER = (
    "| case | N | audit s, computed / memoised | ratio | prep ratio "
    "| counting s, computed / memoised | ratio | same record |"
)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", default="svt1,svt4,svt6")
    p.add_argument("--draws", type=parse_ints, default=[1_000_000])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--alone", action="store_true", help="the exact loss alone")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    rows = (
        bench_case(name, n, args.seed, args.alone)
        for name in args.cases.split(",")
        for n in args.draws
    )
    print_table(HEADER, rows, _line, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
