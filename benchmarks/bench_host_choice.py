"""The portfolio's choice on the host: its work per candidate on the selection scores.

After the selection draws, the default attack (:func:`mcdp.attacks.auto_attack`)
does, on the host, for each scorer: the check for scores of few values
(``attacks._few_values``) and the choice of thresholds
(:func:`mcdp.learning.select_thresholds`) on the first half of the selection scores,
and the counts of the chosen events on the second half; then the winner's
thresholds on the whole sample. At 1e8 draws and more the selection sample is
``2^24`` per input (``attacks.SELECT_CAP``), and this work does not get faster on a
GPU. This times it on synthetic scores of that size, continuous (normal) and
discrete (normal rounded to halves), at ``--draws`` (the promise's N):

    python benchmarks/bench_host_choice.py
    PYTHONPATH=/path/to/another/checkout python benchmarks/bench_host_choice.py

(the second times another version of the functions, e.g. a ``git worktree`` of an
earlier commit, with this script). The counts on the second half are timed both as
the portfolio counted them before 2026-11-26 (a comparison against every threshold
at once) and as it counts them now (one pass per threshold), in the same run. The
winner's thresholds are timed both as a scorer's and as the exact loss's, chosen on
its loss-weighted masses (``exact_loss=True``; the synthetic scores stand in for a
loss: the work is the same).
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

import numpy as np

from mcdp import attacks, learning

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import environment, environment_line  # noqa: E402


def _best(repeats: int, fn) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _row(scores: np.ndarray, select, repeats: int) -> tuple[bool, list[float]]:
    """The check, the choices and both countings on ``scores`` (``(2, size)``)."""
    half = scores.shape[1] // 2
    first, judged = scores[:, :half], scores[:, half:]
    few = attacks._few_values(first)
    choice = attacks.DISCRETE_CHOICE if few else {}
    chosen = select(first[0], first[1], **choice).thresholds
    return few, [
        _best(repeats, lambda: attacks._few_values(first)),
        _best(repeats, lambda: select(first[0], first[1], **choice)),
        _best(repeats, lambda: select(scores[0], scores[1], **choice)),
        _best(repeats, lambda: select(scores[0], scores[1], **choice, exact_loss=True)),
        _best(
            repeats, lambda: [(v[:, None] >= chosen[None, :]).sum(0) for v in judged]
        ),
        _best(
            repeats,
            lambda: [[np.count_nonzero(v >= t) for t in chosen] for v in judged],
        ),
    ]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=attacks.SELECT_CAP)
    parser.add_argument("--draws", type=float, default=2e8)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(
        environment_line(environment()), f"| mcdp from {Path(attacks.__file__).parent}"
    )
    rng = np.random.default_rng(0)
    select = functools.partial(
        learning.select_thresholds, draws=int(args.draws), confidence=0.9,
        max_events=attacks.MAX_EVENTS, epsilon=0.1, delta=0.0,
    )  # fmt: skip
    print(f"\nselection sample {args.size} per input, best of {args.repeats} (s)\n")
    print(
        "| scores | few values? | check | thresholds (half) | thresholds (whole) "
        "| thresholds (whole, exact loss) | counts: all thresholds at once "
        "| counts: one pass each |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for kind in ("continuous", "discrete"):
        scores = np.stack([rng.normal(size=args.size), rng.normal(0.05, 1, args.size)])
        if kind == "discrete":
            scores = np.round(scores * 2)
        few, times = _row(scores, select, args.repeats)
        print(f"| {kind} | {few} | " + " | ".join(f"{t:.3f}" for t in times) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
