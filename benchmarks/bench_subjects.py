"""Audits of real subjects (mcdp.subjects) with the float-support attack: the
README's table of libraries. Needs ``pip install 'mcdp[audit-libs]'``; a library
that is missing is left out of the table.

Each subject runs on the pair ``scalar-0-1`` (inputs 0 and 1, its sensitivity) at
its claim: epsilon = 1 for the Laplace and geometric mechanisms, (0.5, 1e-5) for the
Gaussian ones; ``--train-draws`` per input choose the events, ``--draws`` per input
are counted, at 95 % confidence. Run:
``python benchmarks/bench_subjects.py [--draws 100000] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import time

import mcdp
from mcdp import subjects
from mcdp.attacks import float_support_attack


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--draws", type=int, default=100_000)
    p.add_argument("--train-draws", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    attack = float_support_attack(train_draws=args.train_draws)
    rows = []
    print(
        "| library | mechanism | claim | epsilon_lower | delta_lower | verdict | "
        "draws | time |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, (factory, takes_delta) in subjects.SUBJECTS.items():
        epsilon, delta = (0.5, 1e-5) if takes_delta else (1.0, 0.0)
        try:
            mech = factory(epsilon, delta) if takes_delta else factory(epsilon)
        except ImportError as err:
            print(f"<!-- {name}: {err} -->")
            continue
        start = time.perf_counter()
        r = mcdp.audit_delta(
            mech, epsilon, delta, 1, args.draws, pair="scalar-0-1", attack=attack,
            seed=args.seed,
        )  # fmt: skip
        seconds = time.perf_counter() - start
        claim = f"({epsilon:g}, {delta:g})" if delta else f"{epsilon:g}-DP"
        verdict = "**refuted**" if r.violated else "not refuted"
        rows.append({"subject": name, "seconds": seconds, **r.to_dict()})
        print(f"| {r.library} | {name} | {claim} | {r.epsilon_lower:.3g} | "
              f"{r.delta_lower:.3g} | {verdict} | {args.draws:,} | {seconds:.1f} s |",
              flush=True)  # fmt: skip
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1, allow_nan=True)


if __name__ == "__main__":
    main()
