"""The input search on the benchmark suite, against the best known pair: for each
case of mcdp.mechanisms.suite.SUITE, ``mcdp.search`` at its default budget, then
``audit_delta`` with the same attack, draws and seed on the case's best known pair
(the named pair of the largest exact loss, :func:`~mcdp.mechanisms.suite.worst_pair`,
known before anything is drawn, so it is audited once, at the stated confidence).

Two ratios: the witness's confirmed bound over that pair's bound (the issue's
measure; both carry their sampling noise, and the witness's confidence is corrected
for the K confirmations), and the witness's exact loss over the best known pair's
(how good the pair found is, free of the bounds' noise).
``--draws`` sets both final samples (default: the search's, 1e6). The JSON is
rewritten after every case, and a rerun skips the cases it holds.

    PYTHONPATH=$PWD python benchmarks/bench_search.py --out /tmp/search-suite.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import mcdp
from mcdp._validate import parse_count
from mcdp.attacks import LEARNED
from mcdp.mechanisms.suite import SUITE, worst_pair
from mcdp.searching import DRAWS


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0 or b == float("inf"):
        return None
    return a / b


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--mechanisms", default=",".join(SUITE))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--draws", type=lambda t: int(parse_count("--draws", t)), default=DRAWS
    )
    args = parser.parse_args()
    path = Path(args.out)
    rows = json.loads(path.read_text()) if path.exists() else []
    done = {row["mechanism"] for row in rows}
    for name in args.mechanisms.split(","):
        if name in done:
            continue
        case = SUITE[name]
        start = time.perf_counter()
        found = mcdp.search(
            name, case.epsilon, 0.0, case.dim, draws=args.draws, seed=args.seed
        )
        seconds = time.perf_counter() - start
        best, best_exact = worst_pair(name)
        known = mcdp.audit_delta(
            name, case.epsilon, 0.0, case.dim, args.draws, pair=best,
            attack=LEARNED, seed=args.seed,
        )  # fmt: skip
        row = {
            "mechanism": name,
            "draws": args.draws,
            "witness_label": found.witness_label,
            "witness": found.witness,
            "epsilon_lower": found.epsilon_lower,
            "epsilon_exact": found.epsilon_exact,
            "best_known": best,
            "best_known_lower": known.epsilon_lower,
            "best_known_exact": best_exact,
            "ratio": _ratio(found.epsilon_lower, known.epsilon_lower),
            "exact_ratio": _ratio(found.epsilon_exact, best_exact),
            "search_seconds": round(seconds, 1),
            "screen_seconds": found.screen_seconds,
            "result": found.to_dict(),
        }
        rows.append(row)
        print(
            f"{name:>20} {found.witness_label:>24} {found.epsilon_lower:.4g} "
            f"(exact {found.epsilon_exact}) | known {best} "
            f"{known.epsilon_lower:.4g} (exact {best_exact}) | {seconds:.0f} s",
            flush=True,
        )
        path.write_text(json.dumps(rows, allow_nan=True))


if __name__ == "__main__":
    main()
