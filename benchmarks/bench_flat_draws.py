"""The mechanisms' noise drawn flat against drawn in the shape of a block.

Every sampler draws its noise for a block of outputs, an array of shape
``(BLOCK_DRAWS, d)``. XLA's CPU code vectorises an elementwise loop along its last
axis, the ``d`` coordinates of one output (1 to 21 on the suite), so the inverse
CDFs' logarithms ran partly or wholly as scalars there.
``mcdp.mechanisms._base.drawn_flat`` draws the shared samplers' noise (uniform,
Laplace, exponential) on the flattened shape and reshapes it: the same values to
the bit (``tests/test_mechanisms.py``); ``mcdp.mechanisms._base.FLAT_DRAWS =
False`` turns it off.

For each case of ``--cases`` (its peers' pair, the suite's 90 %, one ``--seed``),
both forms in one process, in turn (``--order``), JAX's caches cleared between
them, since the flag is read where a program is traced:

* ``--part draws``: ``mcdp.sampling.draw`` of ``--draws`` N outputs per input to
  the host, the mechanism alone (also the mechanisms outside the suite: at ε = 1
  on their default pair of 8 coordinates): the median of ``--rounds`` runs, each
  after an untimed call that compiles it, the two forms taking turns round by
  round (this machine's speed drifts by a fifth within minutes); and whether both
  forms drew the same outputs, bit for bit.
* ``--part audit``: the default audit at N, after an untimed warm-up at 1e5 draws:
  its time, its preparation's (the record's ``attack_seconds``), the selection
  draws' and the counting's (the rest), each form's over the other's, and whether
  the two records are the same (bound, choice, privacy profile, selection table).

    python benchmarks/bench_flat_draws.py --part draws --draws 1e6 \\
        --json benchmarks/results/flat_draws.json
    python benchmarks/bench_flat_draws.py --part audit --draws 1e8 \\
        --cases svt1 --json benchmarks/results/flat_draws_audit_1e8.json
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax  # noqa: E402
import numpy as np  # noqa: E402
from _common import best_of, parse_count, print_table  # noqa: E402
from bench_floor import CONFIDENCE, pair_of  # noqa: E402
from bench_selection import (  # noqa: E402
    compared_row,
    in_forms,
    stages_header,
    stages_line,
)

import mcdp  # noqa: E402
from mcdp import running, sampling  # noqa: E402
from mcdp.mechanisms import SUITE, _base  # noqa: E402

FORMS = {"shaped": False, "flat": True}


def _digest(outputs: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(outputs).tobytes()).hexdigest()


def _spec(name: str, seed: int) -> mcdp.AuditSpec:
    """A suite case's audit (its peers' pair), or another mechanism's at ε = 1 on
    its default pair of 8 coordinates (δ = 1e-5 where it needs one)."""
    case = SUITE.get(name)
    if case is None:
        delta = 1e-5 if name in ("gaussian", "trlaplace") else 0.0
        return mcdp.AuditSpec(name, 1.0, dim=8, delta=delta, seed=seed)
    return mcdp.AuditSpec(
        name, case.epsilon, pair=pair_of(name), dim=case.dim, delta=0.0,
        confidence=CONFIDENCE, seed=seed,
    )  # fmt: skip


def draws_row(name: str, draws: int, seed: int, forms: dict, rounds: int) -> dict:
    spec = _spec(name, seed)
    plan, key = spec.plan, running.key_of(spec)

    def drawn():
        return sampling.draw(key, plan.mechanism, plan.transformed, plan.params, draws)

    row: dict = {"case": name, "draws": draws, "seed": seed, "dim": plan.dim}
    seconds: dict = {form: [] for form in forms}
    digests: dict = {}
    saved = _base.FLAT_DRAWS
    try:
        for _ in range(rounds):  # the forms in turn, each round
            for form, flat in forms.items():
                _base.FLAT_DRAWS = flat
                jax.clear_caches()
                drawn()  # compiles
                timing = best_of(1, drawn)
                seconds[form].append(timing.seconds)
                digests.setdefault(form, set()).add(_digest(timing.result))
    finally:
        _base.FLAT_DRAWS = saved
    for form in forms:
        row[form] = {
            "draw_seconds": statistics.median(seconds[form]),
            "draw_seconds_each": seconds[form],
        }
    row["draw_ratio"] = row["shaped"]["draw_seconds"] / row["flat"]["draw_seconds"]
    row["same_outputs"] = len(set.union(*digests.values())) == 1
    return row


def audit_row(name: str, draws: int, seed: int, forms: dict) -> dict:
    row: dict = {"case": name, "draws": draws, "seed": seed}
    settings = {form: {"FLAT_DRAWS": flat} for form, flat in forms.items()}
    runs = in_forms(settings, name, "auto", draws, seed, module=_base, clear=True)
    runs = {form: runs[form] for form in FORMS}  # the table's order
    return compared_row(row, runs, stage="selection draws")


def _draws_line(row: dict) -> str:
    shaped, flat = row["shaped"], row["flat"]
    return (
        f"| {row['case']} | {row['dim']} | {row['draws']:.0e} "
        f"| {shaped['draw_seconds']:.2f} / {flat['draw_seconds']:.2f} "
        f"| {row['draw_ratio']:.2f} | {'yes' if row['same_outputs'] else 'NO'} |"
    )


def _audit_line(row: dict) -> str:
    return stages_line(row, FORMS)


DRAWS_HEADER = "| case | d | N | draws s, shaped / flat | ratio | same outputs |"
AUDIT_HEADER = stages_header(FORMS)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--part", choices=("draws", "audit"), default="draws")
    p.add_argument(
        "--cases", default=",".join(SUITE), help="suite cases (draws: any mechanism)"
    )
    p.add_argument("--draws", type=parse_count, default=1_000_000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rounds", type=int, default=5, help="draws: median of")
    p.add_argument(
        "--order", choices=("shaped-first", "flat-first"), default="shaped-first"
    )
    p.add_argument("--json", default=None)
    args = p.parse_args()
    forms = dict(
        FORMS.items() if args.order == "shaped-first" else reversed(FORMS.items())
    )
    names = args.cases.split(",")
    if args.part == "draws":
        rows = (draws_row(n, args.draws, args.seed, forms, args.rounds) for n in names)
        print_table(DRAWS_HEADER, rows, _draws_line, args.json)
    else:
        rows = (audit_row(n, args.draws, args.seed, forms) for n in names)
        print_table(AUDIT_HEADER, rows, _audit_line, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
