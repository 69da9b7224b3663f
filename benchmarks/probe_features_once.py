"""Whether the scorers' training features, computed once or every step, train the
same scorers on each suite case.

On a CPU, ``learning.fit`` computes a scorer's standardised training features once
where two arrays of them fit in a third of the machine's memory, else every step on
its minibatch (``learning.features_fit``). The machine's memory must decide the time
of a preparation, never its result. For each case of ``--cases`` this runs its
default audit (its peers' pair, the suite's 90 %, seed 0) with ``--train-draws``
training draws per input; every scorer that the portfolio trains is trained twice
for ``--steps`` steps on the same sample, features once and every step, and the two
scorers are compared to the last bit (the basis's NaN padding equal to itself). It
prints one line per scorer and writes them to ``--json``; it exits 1 where any pair
differs.

    python benchmarks/probe_features_once.py --train-draws 1e6 --json F

``--compare by-batch`` trains each scorer with its features read minibatch by
minibatch by a switch (``learning.BY_BATCH``, a CPU's default) and sliced from those
of every row instead, and compares those two the same way:

    python benchmarks/probe_features_once.py --compare by-batch --steps 60 --json F
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax  # noqa: E402
import numpy as np  # noqa: E402
from _common import environment, parse_count, write_json  # noqa: E402
from bench_auto import _run  # noqa: E402

from mcdp import learning  # noqa: E402
from mcdp.attacks import auto_attack  # noqa: E402
from mcdp.mechanisms import SUITE  # noqa: E402


def _same(first, second) -> bool:
    return all(
        np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
        for a, b in zip(first, second, strict=True)
    )


# --compare -> (the setting it toggles, the row's names of its two values)
COMPARISONS = {
    "features-once": ("features_fit", ("once", "every_step")),
    "by-batch": ("BY_BATCH", ("by_batch", "sliced")),
}


def probe_case(
    name: str, train_draws: int, steps: int, compare: str = "features-once"
) -> list[dict]:
    """One row per scorer that ``name``'s default audit trains."""
    rows: list[dict] = []
    fit, decide, by_batch = learning.fit, learning.features_fit, learning.BY_BATCH
    setting, labels = COMPARISONS[compare]

    def both_ways(key, *args, **kwargs):
        kwargs.pop("steps", None)
        trained, seconds = [], []
        for first in (True, False):
            if setting == "features_fit":
                learning.features_fit = lambda *_, first=first, **__: first
            else:
                learning.BY_BATCH = first
            start = time.perf_counter()
            scorer = jax.block_until_ready(fit(key, *args, steps=steps, **kwargs))
            seconds.append(time.perf_counter() - start)
            trained.append([np.asarray(x) for x in jax.tree.leaves(scorer)])
        learning.features_fit, learning.BY_BATCH = decide, by_batch
        rows.append({
            "case": name, "model": kwargs.get("model"),
            "features": kwargs.get("feature_set"), "same": _same(*trained),
            f"seconds_{labels[0]}": seconds[0], f"seconds_{labels[1]}": seconds[1],
        })  # fmt: skip
        return scorer

    learning.fit = both_ways
    try:
        attack = auto_attack(train_draws=train_draws, select_draws=100_000)
        _run(name, attack, 100_000, 0)
    finally:
        learning.fit, learning.features_fit = fit, decide
        learning.BY_BATCH = by_batch
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=",".join(SUITE), help="suite cases")
    parser.add_argument("--train-draws", type=parse_count, default=1_000_000)
    parser.add_argument("--steps", type=int, default=30, help="Adam steps per scorer")
    parser.add_argument("--json", default=None, help="where the rows go")
    parser.add_argument(
        "--compare", choices=tuple(COMPARISONS), default="features-once",
        help="the two forms compared",
    )  # fmt: skip
    args = parser.parse_args()
    rows = []
    for name in args.cases.split(","):
        for row in probe_case(name, args.train_draws, args.steps, args.compare):
            rows.append(row)
            verdict = "same" if row["same"] else "DIFFERENT"
            print(f"{name:22s} {row['model']:8s} {row['features']:8s} {verdict}")
    print(f"{sum(r['same'] for r in rows)} of {len(rows)} scorers the same")
    if args.json:
        write_json(args.json, {
            "benchmark": "probe_features_once", "environment": environment(),
            "compare": args.compare, "train_draws": args.train_draws,
            "steps": args.steps, "rows": rows,
        })  # fmt: skip
    if not all(r["same"] for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
