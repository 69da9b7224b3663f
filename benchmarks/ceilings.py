"""The ceiling of every case of the suite: the best bound any event can give.

For each case of :data:`mcdp.mechanisms.suite.SUITE` on its peers' pair
(:data:`~mcdp.mechanisms.suite.PEER_PAIRS`), :func:`mcdp.ceiling.ceiling` at each
``--draws`` (default 1e7 and 2e8), at the suite audits' 90 % confidence with the
learned attack's 3 events: the bound that the best event gives at its expected
counts. An audit at that many draws is above it only by the luck of its counts.
The table gives the true epsilon of the pair (``exact_epsilon``; ``--no-exact``
skips them), the ceiling, the attaining event with its
probability under the input it speaks for and under the other, and how the
probabilities were computed.

    python benchmarks/ceilings.py --json benchmarks/results/ceilings.json
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

from mcdp.ceiling import ceiling
from mcdp.exact import exact_epsilon
from mcdp.mechanisms import get_mechanism
from mcdp.mechanisms.suite import PEER_PAIRS, SUITE
from mcdp.pairs import make_pair

CONFIDENCE = 0.9  # DP-Sniper's level, as benchmarks/suite_scale.py
NUM_EVENTS = 3  # mcdp.attacks.MAX_EVENTS: the learned attack's events
TARGET_PROBABILITY = 1e-4  # the target: events at least this likely


def _exact(name: str, pair: str) -> float | None:
    case = SUITE[name]
    mech = get_mechanism(name)
    params = mech.calibrate(case.epsilon, 0.0, case.dim, 1.0)
    return exact_epsilon(mech, params, make_pair(pair, case.dim))


def run(names, draws, with_exact: bool) -> dict:
    results = {}
    for name in names:
        pair = PEER_PAIRS[name]
        start = time.perf_counter()
        record = {"pair": pair, "exact": None, "draws": {}}
        try:
            for n in draws:
                c = ceiling(name, pair, n, CONFIDENCE, NUM_EVENTS)
                record["method"] = c.method
                record["draws"][str(n)] = {
                    "value": c.value, "p": c.p, "q": c.q, "event": c.event,
                }  # fmt: skip
        except ValueError as error:
            record["error"] = str(error)
        record["seconds"] = time.perf_counter() - start
        if with_exact:
            record["exact"] = _exact(name, pair)
        results[name] = record
        shown = ", ".join(
            f"{float(n):.0e}: {v['value']:.4g}" for n, v in record["draws"].items()
        )
        print(f"{name:20s} {pair:22s} {shown or record.get('error')}", flush=True)
    return results


def _number(value: float | None, digits: int = 4) -> str:
    if value is None:
        return "–"
    return "∞" if math.isinf(value) else f"{value:.{digits}g}"


def table(results: dict, draws) -> str:
    head = ["case", "pair", "true ε"]
    for n in draws:
        head += [f"ceiling at {n:.0e}", f"P[S] at {n:.0e} (for / against)"]
    head += [f"event at {draws[-1]:.0e}", "method"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, record in results.items():
        row = [f"`{name}`", f"`{record['pair']}`", _number(record["exact"])]
        if "error" in record:
            row += ["–", "–"] * len(draws) + ["–", "not computed: float support"]
            lines.append("| " + " | ".join(row) + " |")
            continue
        for n in draws:
            c = record["draws"][str(n)]
            speaks, other = (c["p"], c["q"]) if "x over x'" in c["event"] else (
                c["q"], c["p"])  # fmt: skip
            mark = "" if speaks >= TARGET_PROBABILITY else " (< 1e-4)"
            row += [_number(c["value"]), f"{speaks:.3g} / {other:.3g}{mark}"]
        row += [f"`{record['draws'][str(draws[-1])]['event']}`", record["method"]]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", default="1e7,2e8", help="comma-separated")
    parser.add_argument("--cases", default=None, help="comma-separated (default all)")
    parser.add_argument("--json", type=Path, default=None, help="write results here")
    parser.add_argument("--no-exact", action="store_true", help="skip exact epsilons")
    args = parser.parse_args()
    draws = [int(float(d)) for d in args.draws.split(",")]
    names = args.cases.split(",") if args.cases else list(SUITE)
    results = run(names, draws, not args.no_exact)
    print()
    print(table(results, draws))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        settings = {"confidence": CONFIDENCE, "num_events": NUM_EVENTS}
        args.json.write_text(
            json.dumps({"settings": settings, "cases": results}, indent=1) + "\n"
        )


if __name__ == "__main__":
    main()
