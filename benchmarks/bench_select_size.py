"""The default audit with selection samples of other sizes: its bound against the
ceiling, and its time.

A default audit (``attack="auto"``) at N draws per input chooses its candidate and
its events on a selection sample of N / 10 draws per input, up to 2^24
(``mcdp.attacks.learned_sizes``): 10^7 at N = 10^8. This benchmark runs the default
audit of each suite case (``--cases``, on its peers' pair, 90 %) at ``--draws`` N
with each selection sample of ``--sizes`` (``auto_attack(select_draws=...)``; the
screening applies from ``mcdp.attacks.SCREEN_FROM``, 2^23, only) and each of
``--seeds``, after an untimed audit of 10^5 draws per size. It reports each audit's
bound, the candidate it counted, its bound over the case's ceiling at N
(``mcdp.ceiling.ceiling``; blank where none is computed), and its seconds and its
preparation's. The selection sample is never counted, so every size gives a valid
bound; what a size changes is which events are counted, and how long choosing them
takes.

    python benchmarks/bench_select_size.py --cases svt6,report-noisy-max4 \\
        --sizes 1e7,1e6 --seeds 0,1,2 --draws 1e8 --json F
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parse_count, parse_ints, parse_seeds, parse_suite_cases, print_table  # noqa: E402
from bench_auto import _run  # noqa: E402
from bench_floor import CONFIDENCE, pair_of  # noqa: E402

from mcdp.attacks import auto_attack  # noqa: E402
from mcdp.ceiling import ceiling, supported  # noqa: E402

WARMUP_DRAWS = 100_000
WARMUP_SEED = 99


def _ceiling(case: str, draws: int) -> float | None:
    """The case's ceiling at ``draws`` on the audits' pair and confidence, None
    where :func:`mcdp.ceiling.ceiling` computes none for it (as
    ``bench_floor.with_ceiling``)."""
    if case not in supported():
        return None
    return ceiling(case, pair_of(case), draws, CONFIDENCE).value


def rows(cases, sizes, seeds, draws):
    """One row per case, selection size and seed, as each audit ends."""
    for case in cases:
        top = _ceiling(case, draws)
        for size in sizes:
            attack = auto_attack(select_draws=size)
            _run(case, attack, WARMUP_DRAWS, WARMUP_SEED)  # compiles
            for seed in seeds:
                record, seconds = _run(case, attack, draws, seed)
                bound = record.epsilon_lower
                yield {
                    "case": case, "select_draws": size, "seed": seed, "draws": draws,
                    "bound": bound, "attack": record.attack, "ceiling": top,
                    "bound_over_ceiling": bound / top if top else None,
                    "audit_seconds": seconds, "prep_seconds": record.attack_seconds,
                    "stages": record.attack_stages,
                }  # fmt: skip


def _line(row: dict) -> str:
    ratio = row["bound_over_ceiling"]
    ratio = "" if ratio is None or not math.isfinite(ratio) else f"{ratio:.4f}"
    return (
        f"| `{row['case']}` | {row['select_draws']:.3g} | {row['seed']} | "
        f"{row['attack']} | {row['bound']:.6g} | {ratio} | "
        f"{row['audit_seconds']:.1f} ({row['prep_seconds']:.2f}) |"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cases", type=parse_suite_cases, default="svt6,report-noisy-max4"
    )
    parser.add_argument("--sizes", type=parse_ints, default=[10_000_000, 1_000_000])
    parser.add_argument("--seeds", type=parse_seeds, default=[0])
    parser.add_argument("--draws", type=parse_count, default=100_000_000)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    print_table(
        "| case | selection draws per input | seed | counted | bound | bound / ceiling "
        "| audit s (prep) |",
        rows(args.cases, args.sizes, args.seeds, args.draws),
        _line,
        args.json,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
