"""Runs the default dataset search on every bug of the gallery and its twin, and
prints a table: verdict, witness datasets, bound, time.

    .venv/bin/python -m examples.gallery.run [--json PATH] [NAME ...]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

import mcdp
from examples.gallery import bugs


def audit(name: str, fn, epsilon: float) -> dict:
    domain = mcdp.DatasetDomain.of("add-remove", 1, 0.0, 1.0)
    mech = mcdp.Mechanism.from_callable(name, fn, domain=domain)
    start = time.perf_counter()
    r = mcdp.search(mech, epsilon)
    d, d_prime = (np.asarray(x, dtype=float).ravel().tolist() for x in r.witness)
    return {
        "name": name,
        "claim": epsilon,
        "violated": r.violated,
        "witness": r.witness_label,
        "d": d,
        "d_prime": d_prime,
        "epsilon_lower": r.epsilon_lower,
        "attack": r.witness_audit["attack"],
        "seconds": round(time.perf_counter() - start, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("names", nargs="*", help="bugs (default: all), twins too")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    rows = []
    for bug, twin in bugs.BUGS.items():
        if args.names and bug not in args.names:
            continue
        epsilon = bugs.CLAIMS.get(bug, bugs.EPSILON)
        for name in (bug, twin.__name__):
            rows.append(audit(name, getattr(bugs, name), epsilon))
            row = rows[-1]
            shown = f"D = {row['d'][:4]}, D' = {row['d_prime'][:4]}"
            print(
                f"| `{name}` | {epsilon:g} | "
                f"{'**refuted**' if row['violated'] else 'not refuted'} | "
                f"`{row['witness']}`: {shown} | {row['epsilon_lower']:.3g} | "
                f"{row['attack']} | {row['seconds']:.0f} s |",
                flush=True,
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
