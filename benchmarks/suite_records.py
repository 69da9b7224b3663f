"""The default records of the suite, to compare two versions of mcdp field by field.

A change that should leave every count as it was (a faster form of the same
arithmetic, or one rounded otherwise where the counts cannot move) is checked
here: the default audit (``attack="auto"``) of each case of
:data:`mcdp.mechanisms.suite.SUITE` (``--cases``, by default all) on its peers' pair,
at the suite's 90 % confidence, ``--draws`` N and ``--seed``, writes the fields
that its counts decide (the bound, the candidate chosen, the selection table of
every candidate's promise and the privacy profile) with the audit's seconds and
its preparation's stages. Run it at each version (``PYTHONPATH`` at a ``git
worktree`` of the other), then ``--compare A,B`` names every case whose fields
differ::

    python benchmarks/suite_records.py --draws 1e6 --json A
    python benchmarks/suite_records.py --compare A,B

``--figure-cells`` instead recounts the cells of the suite figure's grid
(``figures/benchmarks-suite.json``: the default attack at its 1e5 draws, seed 0,
95 %; the learned attack's where a file of earlier versions holds those) of
``--cases`` and says which differ from the stored counts and bounds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from _common import environment, parse_count, write_json  # noqa: E402
from bench_auto import _run  # noqa: E402

import mcdp  # noqa: E402
from mcdp import attacks  # noqa: E402
from mcdp.mechanisms.suite import SUITE  # noqa: E402

FIELDS = ("bound", "attack", "selection", "profile")
FIGURE = Path(__file__).resolve().parent.parent / "figures" / "benchmarks-suite.json"


def record(name: str, draws: int, seed: int) -> dict:
    r, seconds = _run(name, "auto", draws, seed)
    return {
        "bound": r.epsilon_lower,
        "attack": r.attack,
        "selection": dict(r.selection or {}),
        "profile": [p.__dict__ for p in r.profile],
        "seconds": seconds,
        "stages": dict(r.attack_stages or {}),
        "screened": list(r.screened or []),
        "screen_steps": r.screen_steps,
    }


def compare(first: str, second: str) -> int:
    a, b = (json.loads(Path(f).read_text())["records"] for f in (first, second))
    differ = compared = 0
    for name in a:
        if name not in b:
            print(f"{name}: only in {first}")
            continue
        fields = [f for f in FIELDS if a[name][f] != b[name][f]]
        differ += bool(fields)
        compared += 1
        seconds = f"{a[name]['seconds']:.1f} s -> {b[name]['seconds']:.1f} s"
        verdict = "differ in " + ", ".join(fields) if fields else "same"
        print(f"{name}: {verdict}, {seconds}")
    alone = len(a) - compared
    print(f"{compared} cases compared, {differ} differ ({alone} only in {first})")
    return 1 if differ else 0


def figure_cells(cases: list[str]) -> int:
    stored = json.loads(FIGURE.read_text())
    meta = stored["_meta"]
    differ = total = 0
    for name in cases:
        case = SUITE[name]
        for pair, cells in stored.get(name, {}).items():
            for attack, want in cells.items():
                r = mcdp.audit_delta(
                    name, case.epsilon, 0.0, case.dim, meta["draws"], pair=pair,
                    attack=attack, seed=meta["seed"], confidence=meta["confidence"],
                )  # fmt: skip
                counts = np.asarray(r.counts).tolist()
                same = counts == want["counts"] and r.loss_lower == want["loss_lower"]
                same = same and r.epsilon_lower == want["epsilon_lower"]
                total += 1
                differ += not same
                verdict = "same" if same else "DIFFERS"
                print(f"{name} {pair} {attack}: {verdict}", flush=True)
    print(f"{total} cells, {differ} differ")
    return 1 if differ else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", default=",".join(SUITE))
    p.add_argument("--draws", type=parse_count, default=1_000_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json")
    p.add_argument("--compare", help="two JSON files of this benchmark, A,B")
    p.add_argument("--figure-cells", action="store_true")
    p.add_argument(
        "--screen-from", type=parse_count,
        help="the portfolio screens its candidates from this many selection draws "
        "per input (mcdp.attacks.SCREEN_FROM; default: its own)",
    )  # fmt: skip
    p.add_argument(
        "--screen-steps", type=int,
        help="the training steps of the scorers that the screening judges "
        "(mcdp.attacks.SCREEN_STEPS; default: its own; mcdp.learning.STEPS and more: "
        "the scorers train once, on every step)",
    )  # fmt: skip
    args = p.parse_args()
    if args.screen_from is not None:
        attacks.SCREEN_FROM = int(args.screen_from)
    if args.screen_steps is not None:
        attacks.SCREEN_STEPS = args.screen_steps
    if args.compare:
        return compare(*args.compare.split(","))
    cases = args.cases.split(",")
    if args.figure_cells:
        return figure_cells(cases)
    records = {}
    for name in cases:
        start = time.perf_counter()
        records[name] = record(name, args.draws, args.seed)
        screened = records[name]["screened"]
        print(f"{name}: {records[name]['attack']} {records[name]['bound']:.6g}, "
              f"{time.perf_counter() - start:.1f} s"
              + (f", screened out {','.join(screened)}" if screened else ""),
              flush=True)  # fmt: skip
        if args.json:
            write_json(args.json, {
                "environment": environment(), "draws": args.draws,
                "seed": args.seed, "records": records,
            })  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
