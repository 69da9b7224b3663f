"""Blocks drawn batched and once, against batched where XLA fuses them and against
one block after another.

On a CPU, XLA fuses an elementwise producer into each reduction that reads it, the
mechanism's sampler and the default stream's Threefry rounds included: a guess or a
transform that reads the outputs in several reductions draws them several times.
Drawing one block after another inside a ``cond`` (``DRAW_ONCE``) computes them
once, but gives up drawing the blocks of a chunk batched. ``BATCH_ONCE`` draws the
chunk's blocks batched (``vmap``) inside one ``cond`` per input, then guesses or
transforms them batched: once, and batched.

Three forms of the same audit in one process, each after an untimed warm-up at 1e5
draws (seed + 1), on the case's peers' pair at the suite's 90 %:

- for each ``case:attack`` of ``--runs``, the portfolio with that candidate alone
  (``auto_attack(candidates=(attack,))``): the counting's time (the audit's less its
  preparation), with the counting loop ``batched`` (``GUESS_BY_BLOCK`` False,
  ``BATCH_ONCE`` False), ``batched once`` (``BATCH_ONCE`` True) and ``by block``
  (``GUESS_BY_BLOCK`` True, each block drawn once);
- for each case of ``--cases``, the default audit: the selection draws' time (the
  record's ``attack_stages``), with the transform ``batched``
  (``TRANSFORM_BY_BLOCK`` False), ``batched once`` (and ``BATCH_ONCE`` True) and
  ``by block`` (``TRANSFORM_BY_BLOCK`` True), the counting loop at each form's
  setting of ``BATCH_ONCE``.

Each row gives each form's seconds, the ratios of the ``batched`` form's to each
other's, and whether all three gave the same record (bound, choice, privacy
profile and selection table).

    python benchmarks/bench_batch_once.py --runs numerical-svt:float-support \\
        --cases svt1 --draws 1e7 --json benchmarks/results/batch_once.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parse_ints, print_table  # noqa: E402
from bench_selection import compared_row, in_forms  # noqa: E402

from mcdp.attacks import auto_attack  # noqa: E402

# form -> the settings of mcdp.engines.device, for the counting loop and for the
# selection draws' transform
COUNTING_FORMS = {
    "batched": {"GUESS_BY_BLOCK": False, "BATCH_ONCE": False},
    "batched once": {"GUESS_BY_BLOCK": False, "BATCH_ONCE": True},
    "by block": {"GUESS_BY_BLOCK": True, "BATCH_ONCE": False},
}
SELECTION_FORMS = {
    "batched": {"TRANSFORM_BY_BLOCK": False, "BATCH_ONCE": False},
    "batched once": {"TRANSFORM_BY_BLOCK": False, "BATCH_ONCE": True},
    "by block": {"TRANSFORM_BY_BLOCK": True, "BATCH_ONCE": False},
}
STAGE = "selection draws"


def _row(row: dict, runs: dict, stage: str | None) -> dict:
    """``row`` with each form's times and record, and the ``batched`` form's times
    over each other's (``{part}_ratio``, keyed by form)."""
    first, *others = runs
    same = True
    for other in others:
        pair = compared_row({}, {first: runs[first], other: runs[other]}, stage)
        row[first], row[other] = pair[first], pair[other]
        row[other]["ratios"] = {
            k[: -len("_ratio")]: v for k, v in pair.items() if k.endswith("_ratio")
        }
        same = same and pair["same_result"]
    row["same_result"] = same
    return row


def bench_run(name: str, attack: str, draws: int, seed: int) -> dict:
    row: dict = {"kind": "counting", "case": name, "attack": attack, "draws": draws}
    row["seed"] = seed
    alone = auto_attack(candidates=(attack,))
    return _row(row, in_forms(COUNTING_FORMS, name, alone, draws, seed), None)


def bench_case(name: str, draws: int, seed: int) -> dict:
    row: dict = {"kind": "selection", "case": name, "attack": "auto", "draws": draws}
    row["seed"] = seed
    return _row(row, in_forms(SELECTION_FORMS, name, "auto", draws, seed), STAGE)


def _line(row: dict) -> str:
    part = "counting" if row["kind"] == "counting" else "selection"
    times = " / ".join(f"{row[f][f'{part}_seconds']:.1f}" for f in COUNTING_FORMS)
    ratios = " / ".join(
        f"{row[f]['ratios'][part]:.2f}" for f in list(COUNTING_FORMS)[1:]
    )
    chose = row["by block"]["chose"]
    return (
        f"| {row['case']} | {row['attack']} ({chose}) | {part} | {row['draws']:.0e} "
        f"| {times} | {ratios} | {'yes' if row['same_result'] else 'NO'} |"
    )


HEADER = (
    "| case | attack (chose) | stage | N | seconds: batched / batched once / by block "
    "| batched over: batched once / by block | same record |"
)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", default="", help="comma-separated case:attack")
    p.add_argument("--cases", default="", help="comma-separated cases (default audit)")
    p.add_argument("--draws", type=parse_ints, default=[10_000_000])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    runs = [r.split(":") for r in args.runs.split(",") if r]
    cases = [c for c in args.cases.split(",") if c]
    if not runs and not cases:
        p.error("expected --runs or --cases, got neither")

    def rows():
        for n in args.draws:
            for name, attack in runs:
                yield bench_run(name, attack, n, args.seed)
            for name in cases:
                yield bench_case(name, n, args.seed)

    print_table(HEADER, rows(), _line, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
