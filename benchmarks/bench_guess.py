"""The counting loop's blocks batched against one after another.

The engine counts a chunk of blocks per loop iteration: each block's draws, the
attack's guess on them, the counts of its outcomes. Batched over the chunk's blocks
(``vmap``), XLA's CPU code runs the scorers' products several times slower than one
block after another (``lax.map``; see ``bench_selection.py`` for the selection
draws). This runs the same audit with each form of the counting loop
(``mcdp.engines.device.GUESS_BY_BLOCK`` False, then True) in one process, each after
an untimed warm-up at 1e5 draws, for each ``case:attack`` of ``--runs`` (the
portfolio with that candidate alone: ``auto_attack(candidates=(attack,))``, its
preparation, then the counted draws) at ``--draws`` N, on the
case's peers' pair at the suite's 90 %: the counting's time (the audit's less its
preparation), their ratio, and whether the two gave the same record (bound and
privacy profile, from the counts).

    python benchmarks/bench_guess.py --draws 1e7 --json benchmarks/results/guess.json
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import runs_main  # noqa: E402
from bench_selection import FORMS, compared_row, in_both_forms  # noqa: E402

from mcdp.attacks import auto_attack  # noqa: E402

RUNS = (
    "svt6:learned-mlp,svt1:learned,svt1:majority,noisy-hist1:float-support,"
    "noisy-hist1:lr,noisy-hist2:learned-bits"
)


def bench_run(name: str, attack: str, draws: int, seed: int) -> dict:
    row: dict = {"case": name, "attack": attack, "draws": draws, "seed": seed}
    alone = auto_attack(candidates=(attack,))
    runs = in_both_forms("GUESS_BY_BLOCK", name, alone, draws, seed)
    return compared_row(row, runs)


def _line(row: dict) -> str:
    before, after = (row[form] for form in FORMS)
    return (
        f"| {row['case']} | {row['attack']} | {row['draws']:.0e} | "
        f"{before['counting_seconds']:.1f} / {after['counting_seconds']:.1f} "
        f"| {row['counting_ratio']:.2f} | {'yes' if row['same_result'] else 'NO'} |"
    )


HEADER = "| case | attack | N | counting s, batched / by block | ratio | same record |"


def main() -> int:
    return runs_main(__doc__, RUNS, 10_000_000, bench_run, HEADER, _line)


if __name__ == "__main__":
    sys.exit(main())
