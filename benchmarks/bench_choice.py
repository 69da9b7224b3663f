"""The default portfolio's choice for an audit of N draws, without the counting.

An audit's bound is a function of its seed and of the attack it counts: the counted
draws come from keys that the attack's preparation never uses. Two versions of mcdp
that prepare the same attack with the same thresholds therefore give the same counts
and the same bound, at any N. This benchmark prepares the attack of each suite case
(``--cases``, on its peers' pair, 90 %) for an audit of ``--draws`` N at each of
``--seeds``, exactly as ``mcdp.run`` does before its first counted draw, and records
what it chose: the candidate, its events, its thresholds (every bit, as ``float.hex``),
the selection table, what the screening judged on its first draws alone, and the
preparation's seconds by stage. ``--ideal`` prepares the portfolio without the float
attacks (``bench_auto.IDEAL``, as ``bench_auto.py --ideal-only``).

    python benchmarks/bench_choice.py --cases svt6,rappor --draws 2e8 --ideal \\
        --json A

``--compare A,B`` reads two such files and says, for each (case, seed, draws, ideal)
in both, whether the choice is the same (candidate and every threshold): where it
is, the counted bound is too.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from _common import parse_count, parse_seeds, parse_suite_cases, print_table  # noqa: E402
from bench_auto import IDEAL, spec_of  # noqa: E402

from mcdp.attacks import auto_attack  # noqa: E402
from mcdp.running import _bind, key_of  # noqa: E402

# the candidates that count their outcomes, with no thresholds chosen on the
# selection draws
OUTCOMES = ("structure", "majority", "support", "float-support")


def _thresholds(name: str, aux) -> list[str] | None:
    """A scorer's or the exact loss's thresholds (the second of its ``aux``), every
    bit; None for an outcome attack."""
    if name in OUTCOMES:
        return None
    return [float(t).hex() for t in np.asarray(aux[1]).ravel()]


def choice(name: str, draws: int, seed: int, ideal: bool) -> dict:
    """What the portfolio prepares for the audit of ``name`` at ``draws``."""
    attack = auto_attack(candidates=IDEAL) if ideal else "auto"
    spec = spec_of(name, attack, seed)
    start = time.perf_counter()
    prepared, aux = _bind(spec, key_of(spec), draws)
    seconds = time.perf_counter() - start
    return {
        "case": name, "draws": draws, "seed": seed, "ideal": ideal,
        "attack": prepared.name, "events": list(prepared.event_names()),
        "thresholds": _thresholds(prepared.name, aux),
        "selection": dict(prepared.selection),
        "screened": list(prepared.screened), "screen_draws": prepared.screen_draws,
        "prep_seconds": seconds, "stages": dict(prepared.preparation),
    }  # fmt: skip


def _line(row: dict) -> str:
    settled = row["screened"] and row["attack"] in row["screened"]
    return (
        f"| `{row['case']}` | {row['seed']} | {row['draws']:.3g} | "
        f"{'ideal' if row['ideal'] else 'default'} | {row['attack']} | "
        f"{len(row['events'])} | {'yes' if settled else ''} | "
        f"{row['prep_seconds']:.1f} |"
    )


def _key(row: dict) -> tuple:
    return row["case"], row["seed"], row["draws"], row["ideal"]


def compare(paths: str) -> int:
    """Whether each row in both files chose the same candidate and thresholds."""
    first, second = (
        {_key(r): r for r in json.loads(Path(p).read_text())["results"]}
        for p in paths.split(",")
    )
    same = 0
    for key in (k for k in first if k in second):
        a, b = first[key], second[key]
        equal = (a["attack"], a["thresholds"]) == (b["attack"], b["thresholds"])
        same += equal
        print(
            f"{key[0]} seed {key[1]} N={key[2]:.3g}{' ideal' if key[3] else ''}: "
            f"{'same' if equal else 'DIFFERENT'} ({a['attack']} / {b['attack']}; "
            f"prep {a['prep_seconds']:.1f} s / {b['prep_seconds']:.1f} s)"
        )
    print(f"{same} of {sum(k in second for k in first)} the same")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=parse_suite_cases, default="svt6,rappor")
    parser.add_argument("--seeds", type=parse_seeds, default=[0])
    parser.add_argument("--draws", type=parse_count, default=100_000_000)
    parser.add_argument("--ideal", action="store_true")
    parser.add_argument("--compare", help="two JSON files of this benchmark, A,B")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    if args.compare:
        return compare(args.compare)
    print_table(
        "| case | seed | draws | portfolio | chose | events | settled at the "
        "screening | prep s |",
        (choice(c, args.draws, s, args.ideal) for c in args.cases for s in args.seeds),
        _line,
        args.json,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
