"""The input search on the benchmark suite at its defaults, against the best named
pair: for each case of mcdp.mechanisms.suite.SUITE, ``mcdp.search`` at its default
budget, then ``audit_delta`` on each of the case's named pairs with the same attack
and the same number of final draws (each at the stated confidence, uncorrected).

    PYTHONPATH=$PWD python benchmarks/bench_search.py --out /tmp/search-suite.json
"""

from __future__ import annotations

import argparse
import json
import time

import mcdp
from mcdp.attacks import LEARNED
from mcdp.mechanisms.suite import SUITE


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--mechanisms", default=",".join(SUITE))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rows = []
    for name in args.mechanisms.split(","):
        case = SUITE[name]
        start = time.perf_counter()
        found = mcdp.search(name, case.epsilon, 0.0, case.dim, seed=args.seed)
        seconds = time.perf_counter() - start
        named = {}
        for pair in case.pairs:
            r = mcdp.audit_delta(
                name, case.epsilon, 0.0, case.dim, found.draws, pair=pair,
                attack=LEARNED, seed=args.seed,
            )  # fmt: skip
            named[pair] = {"epsilon_lower": r.epsilon_lower, "exact": r.epsilon_exact}
        best = max(named, key=lambda p: named[p]["epsilon_lower"])
        row = {
            "mechanism": name,
            "witness_label": found.witness_label,
            "witness": found.witness,
            "epsilon_lower": found.epsilon_lower,
            "epsilon_exact": found.epsilon_exact,
            "best_named": best,
            "best_named_lower": named[best]["epsilon_lower"],
            "best_named_exact": named[best]["exact"],
            "ratio": found.epsilon_lower / named[best]["epsilon_lower"]
            if named[best]["epsilon_lower"] > 0
            else None,
            "search_seconds": round(seconds, 1),
            "named": named,
            "result": found.to_dict(),
        }
        rows.append(row)
        print(
            f"{name:>20} {found.witness_label:>24} {found.epsilon_lower:.4g} "
            f"(exact {found.epsilon_exact}) | named {best} "
            f"{named[best]['epsilon_lower']:.4g} | {seconds:.0f} s",
            flush=True,
        )
        with open(args.out, "w") as f:
            json.dump(rows, f, allow_nan=True)


if __name__ == "__main__":
    main()
