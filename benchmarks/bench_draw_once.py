"""Blocks drawn one after another: each drawn once (in a ``cond``), against drawn
wherever XLA fuses them.

On a CPU the portfolio's selection draws, and the counting loop of the attacks that
ask for it (the MLP, an exact loss by quadrature), draw and transform one block of
outputs after another. XLA fuses an elementwise producer into each reduction that
reads it, the default stream's Threefry rounds included, so a transform that reads
the outputs in several reductions (every candidate's score, in the selection
draws) drew them several times. ``mcdp.engines.device.DRAW_ONCE`` draws each block
inside a ``cond`` whose two branches both draw it, which XLA computes once. This
runs the same default audit of each case of ``--cases`` (on its peers' pair, at
the suite's 90 %, one ``--seed``) at ``--draws`` N in one process with
``DRAW_ONCE`` False, then True, each after an untimed warm-up at 1e5 draws: the
audit's time, its preparation's (the record's ``attack_seconds``), the selection
draws' (its ``attack_stages``) and the counting's (the rest), their ratios, and
whether the two audits gave the same record (bound, privacy profile and selection
table).

    python benchmarks/bench_draw_once.py --cases numerical-svt,svt6,svt1 \\
        --draws 1e7 --json benchmarks/results/draw_once.json

``--flag BATCH_ONCE`` compares the same way the blocks that the engine draws
batched (the counting loop of most attacks) drawn where XLA fuses them and drawn
once, in one ``cond`` per chunk (``mcdp.engines.device.BATCH_ONCE``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parse_ints, print_table  # noqa: E402
from bench_selection import (  # noqa: E402
    compared_row,
    in_both_forms,
    stages_header,
    stages_line,
)

from mcdp.engines import device  # noqa: E402

FORMS = {"fused": False, "once": True}


FLAGS = ("DRAW_ONCE", "BATCH_ONCE")  # switches of mcdp.engines.device, default True


def bench_case(name: str, draws: int, seed: int, flag: str = "DRAW_ONCE") -> dict:
    row: dict = {"case": name, "draws": draws, "seed": seed, "flag": flag}
    runs = in_both_forms(
        flag, name, "auto", draws, seed, module=device, forms=FORMS,
    )  # fmt: skip
    return compared_row(row, runs, stage="selection draws")


def _line(row: dict) -> str:
    return stages_line(row, FORMS)


HEADER = stages_header(FORMS)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", default="numerical-svt,svt6,svt1")
    p.add_argument("--draws", type=parse_ints, default=[1_000_000])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--flag", choices=FLAGS, default="DRAW_ONCE")
    p.add_argument("--json", default=None)
    args = p.parse_args()
    rows = (
        bench_case(name, n, args.seed, args.flag)
        for name in args.cases.split(",")
        for n in args.draws
    )
    print_table(HEADER, rows, _line, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
