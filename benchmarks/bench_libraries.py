"""Audits of DP library functions called on datasets (``mcdp.subjects.
DATASET_SUBJECTS``): the README's table of libraries as shipped. Needs
``pip install 'mcdp[audit-libs]'``; a library that is missing is left out.

Each row is the dataset search (:func:`mcdp.search`) over the call's relation and
the records its documentation admits, at the claim epsilon = 1, with the default
attack (the portfolio), at budgets sized for functions of one release per call
(about 100 us each): ``--budget`` candidate pairs screened on ``--screen-draws``
outputs per dataset (the portfolio's own training and selection samples as
large), the best three confirmed on ``--draws`` fresh outputs per dataset, 95 %.
These libraries draw from their own or the system's randomness, so a run is not
reproducible draw for draw; its bounds hold all the same. Run:
``python benchmarks/bench_libraries.py [NAME ...] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

import mcdp
from mcdp import subjects
from mcdp.attacks import auto_attack
from mcdp.searching import SCREEN_CANDIDATES


def _shown(data: list[float], limit: int = 4) -> str:
    more = f", … ({len(data)} records)" if len(data) > limit else ""
    return "[" + ", ".join(f"{v:g}" for v in data[:limit]) + more + "]"


def audit(subject: subjects.DatasetSubject, args: argparse.Namespace) -> dict:
    mech = subject.mechanism(max_size=args.max_size)
    screen = auto_attack(
        train_draws=args.screen_draws, select_draws=args.screen_draws,
        candidates=SCREEN_CANDIDATES,
    )  # fmt: skip
    final = auto_attack(train_draws=args.train_draws, select_draws=args.train_draws)
    start = time.perf_counter()
    r = mcdp.search(
        mech, subjects.EPSILON, budget=args.budget, attack=final,
        screen_attack=screen, draws=args.draws, screen_draws=args.screen_draws,
        seed=args.seed,
    )  # fmt: skip
    d, d_prime = (np.asarray(x, dtype=float).ravel().tolist() for x in r.witness)
    return {
        "name": subject.name,
        "library": r.witness_audit.get("library") or mech.library,
        "call": subject.call,
        "relation": subject.relation,
        "records": subject.records,
        "claim": subjects.EPSILON,
        "violated": r.violated,
        "witness": r.witness_label,
        "d": d,
        "d_prime": d_prime,
        "epsilon_lower": r.epsilon_lower,
        "attack": r.witness_audit["attack"],
        "releases": r.witness_audit.get("releases"),
        "draws": args.draws,
        "seconds": round(time.perf_counter() - start, 1),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help="subjects (default: all installed)")
    p.add_argument("--budget", type=int, default=16)
    p.add_argument("--screen-draws", type=int, default=5_000)
    p.add_argument("--train-draws", type=int, default=10_000)
    p.add_argument("--draws", type=int, default=50_000)
    p.add_argument("--max-size", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    rows = []
    print("| library | call | claim | witness | bound | verdict | attack | time |")
    print("|---|---|---|---|---|---|---|---|")
    for name, subject in subjects.DATASET_SUBJECTS.items():
        if args.names and name not in args.names:
            continue
        try:
            row = audit(subject, args)
        except ImportError as err:
            print(f"<!-- {name}: {err} -->")
            continue
        rows.append(row)
        records = {"any": "any float", "no-nan": "no NaN", "bounded": "in [0, 1]"}
        verdict = "**refuted**" if row["violated"] else "not refuted"
        print(
            f"| {row['library']} | `{row['call']}` | {row['claim']:g}-DP, "
            f"{row['relation']}, records {records[row['records']]} | "
            f"`{row['witness']}`: D = {_shown(row['d'])}, "
            f"D' = {_shown(row['d_prime'])} | {row['epsilon_lower']:.3g} | "
            f"{verdict} | {row['attack']} | {row['seconds']:.0f} s |",
            flush=True,
        )
        if args.json:  # after every row: an interrupted run keeps what it has
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1, allow_nan=True)


if __name__ == "__main__":
    main()
