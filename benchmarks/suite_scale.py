"""The benchmark suite at the peers' scale: each case on the peers' pair.

For every case of :data:`mcdp.mechanisms.suite.SUITE`, the pair of DP-Sniper's
published bound (:data:`~mcdp.mechanisms.suite.PEER_PAIRS`, fixed before anything is
drawn, so choosing it costs no confidence) is audited pure-epsilon at its claim with
the learned attack at its default sample sizes, at 90 % confidence (DP-Sniper's
level), for each ``--draws``. The table also gives the case's worst named pair
(:func:`~mcdp.mechanisms.suite.worst_pair`) and its exact loss.
The JSON is written after every cell and a rerun skips the cells it holds, so an
interrupted run loses nothing. ``--table`` prints the Markdown table of the README
beside the peers' published bounds (:mod:`benchmarks.peers`).

    python benchmarks/suite_scale.py --draws 1e7,2e8 --json results/suite.json
    python benchmarks/suite_scale.py --json results/suite.json --table
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import mcdp
from mcdp._validate import parse_count
from mcdp.mechanisms import worst_pair
from mcdp.mechanisms.suite import PEER_PAIRS, SUITE

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers import DP_SNIPER, STATDP  # noqa: E402

CONFIDENCE = 0.9


def run(draws: list[int], path: Path, names: list[str]) -> None:
    results = json.loads(path.read_text()) if path.exists() else {}
    for name in names:
        case = SUITE[name]
        pair = PEER_PAIRS[name]
        for n in draws:
            key = f"{name}/{n}"
            if key in results:
                continue
            record = mcdp.audit_delta(
                name, case.epsilon, 0.0, case.dim, n, pair=pair,
                attack="learned", confidence=CONFIDENCE, seed=0,
            )  # fmt: skip
            results[key] = record.to_dict()
            path.write_text(json.dumps(results, indent=1))
            print(
                f"{name:20s} {pair:22s} {n:.0e} lower {record.epsilon_lower:.4g} "
                f"exact {record.epsilon_exact} {record.seconds:.0f} s "
                f"(attack {record.attack_seconds:.0f} s)",
                flush=True,
            )


CEILINGS = Path(__file__).resolve().parent / "results" / "ceilings.json"


def _fmt(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "–"
    return "∞" if math.isinf(value) else f"{value:.3g}"


def table(path: Path, ceilings: Path = CEILINGS) -> str:
    """The README's table; beside each N, the ceiling there (the best bound any
    event gives at N draws, ``benchmarks/ceilings.py``), where computed."""
    results = json.loads(path.read_text())
    tops = json.loads(ceilings.read_text())["cases"] if ceilings.exists() else {}
    draws = sorted({int(k.rsplit("/", 1)[1]) for k in results})
    head = ["mechanism", "claim", "pair", "true ε of the pair"]
    for n in draws:
        head += [f"mcdp, {n:.0e} draws", f"ceiling, {n:.0e}"]
    head += ["prep share at the most draws", "time at the most draws"]
    head += ["DP-Sniper (reg / NN)", "StatDP-Fixed (runs 1 / 2)"]
    head += ["worst named pair (true ε)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in SUITE:
        cells = [results.get(f"{name}/{n}") for n in draws]
        done = [c for c in cells if c is not None]
        if not done:
            continue
        last = done[-1]
        row = [f"`{name}`", f"{last['epsilon']:.3g}", f"`{last['pair']}`"]
        row.append(_fmt(last["epsilon_exact"]))
        for n, c in zip(draws, cells, strict=True):
            top = tops.get(name, {}).get("draws", {}).get(str(n))
            row.append(_fmt(None if c is None else c["epsilon_lower"]))
            row.append(_fmt(None if top is None else top["value"]))
        row.append(f"{last['attack_seconds'] / last['seconds']:.0%}")
        row.append(f"{last['seconds']:.0f} s")
        row.append(" / ".join(_fmt(v) for v in DP_SNIPER.get(name, ())) or "–")
        row.append(" / ".join(_fmt(v) for v in STATDP.get(name, ())) or "–")
        worst, loss = worst_pair(name)
        row.append(f"`{worst}` ({_fmt(loss)})")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", default="2e8", help="comma-separated, per input")
    parser.add_argument("--mechanisms", default=",".join(SUITE))
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--table", action="store_true", help="print the table only")
    args = parser.parse_args()
    if args.table:
        print(table(args.json))
        return
    draws = [int(parse_count("--draws", d)) for d in args.draws.split(",")]
    run(draws, args.json, args.mechanisms.split(","))


if __name__ == "__main__":
    main()
