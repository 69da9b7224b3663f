"""The best event each scorer of the portfolio can give, on the exact output
distribution: what its shape allows, apart from the noise of choosing and counting.

For Sparse Vector cases whose outputs the ceiling enumerates (``svt1``, ``svt2``,
``svt4``, ``svt6``: every output; ``svt3``: every pattern of answers with its
answer's value in cells, :mod:`mcdp.ceiling`'s quadrature), on the case's peers'
pair: each scorer of the portfolio is trained as the default audit at ``--draws``
trains it (on ``learned_sizes(N)`` draws per input of the mechanism, from
``--seeds``), then scores one representative output of every cell (the cell's
value midpoint for ``svt3``). Its events are the upper and lower sets of its
score, unions of whole cells with exact probabilities, and the table gives the
best bound any of them gives at N draws and the suite's 90 % with the 3-event
correction (:func:`mcdp.ceiling.bounds`, at expected counts, as the ceiling is
computed), over the ceiling itself. Below 1, no event of the scorer's is as good
as the ceiling's at the expected counts, however its thresholds are chosen: what
an audit with it gains over that is the counts' luck. A scorer at 1 leaves the
rest of the gap to the choice of its thresholds on the selection draws and to the
counts' noise (:attr:`mcdp.ceiling.Ceiling.spread`).

    python benchmarks/scorer_ceiling.py --cases svt1,svt2,svt3,svt4,svt6 --seeds 0,1,2

Beside the portfolio's default scorers, ``learned-inputs`` (ramps at the pair's
values, :data:`mcdp.attacks.CANDIDATES`) where the portfolio would fit it: on
``svt3``, whose answers are released values.

``--steps``, ``--knot-levels``, ``--hidden`` and ``--train-draws`` try the scorers
with other settings than :mod:`mcdp.learning`'s and :func:`mcdp.attacks.learned_sizes`'
(Adam's steps, the quantiles of the hinges, the MLP's hidden units, the training
draws per input), to see what a change would buy before making it:

    python benchmarks/scorer_ceiling.py --cases svt3 --seeds 0,1,2 --steps 1000
    python benchmarks/scorer_ceiling.py --cases svt3 --seeds 0,1,2 --train-draws 4e6
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_floor import CONFIDENCE, pair_of  # noqa: E402

import mcdp  # noqa: E402
from mcdp import ceiling as ceiling_module  # noqa: E402
from mcdp import learning  # noqa: E402
from mcdp.attacks import (
    _SCORERS,
    MAX_EVENTS,
    histogram_score,
    histogram_table,
    inputs_knots,
    learned_sizes,
)  # noqa: E402
from mcdp.mechanisms.sparse_vector import SVT3_ABORTED, SVT3_FALSE  # noqa: E402
from mcdp.mechanisms.suite import SUITE  # noqa: E402
from mcdp.sampling import draw  # noqa: E402

CASES = ("svt1", "svt2", "svt3", "svt4", "svt6")
SCORERS = ("learned", "learned-mlp", "learned-inputs")  # mcdp.attacks' candidates
LABELS = (*SCORERS, "histogram")


def exact_cells(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(outputs, p, q)``: one output per cell of the case's output space, as the
    mechanism encodes it, and the cell's exact probabilities under each input."""
    pair = pair_of(name)
    if name != "svt3":
        rows, p, q = ceiling_module.svt_outputs(name, pair)
        return rows.astype(np.float64), p, q
    rows, edges, parts = ceiling_module.svt3_cells(name, pair)
    middle = (edges[:-1] + edges[1:]) / 2
    outs, ps, qs = [], [], []
    for row, (p, q) in zip(rows, parts, strict=True):
        p, q = np.ravel(p), np.ravel(q)
        above = np.flatnonzero(row == 1)
        out = np.where(row == 0, SVT3_FALSE, SVT3_ABORTED).astype(np.float64)
        out = np.repeat(out[None], p.size, axis=0)
        if above.size:  # one answer above (cutoff 1): its value's cells
            out[:, above[0]] = middle
        outs.append(out)
        ps.append(p)
        qs.append(q)
    return np.concatenate(outs), np.concatenate(ps), np.concatenate(qs)


def best_event(score: np.ndarray, p: np.ndarray, q: np.ndarray, draws: int) -> float:
    """The best bound of the events {score >= t} and {score < t} over every t."""
    order = np.argsort(-score, kind="stable")
    ranked = score[order]
    upper_p, upper_q = np.cumsum(p[order]), np.cumsum(q[order])
    cut = np.r_[ranked[1:] != ranked[:-1], True]  # whole levels of the score only
    upper_p, upper_q = upper_p[cut], upper_q[cut]
    best = -np.inf
    for a, b in ((upper_p, upper_q), (1 - upper_p, 1 - upper_q)):
        for values in ceiling_module.bounds(a, b, draws, CONFIDENCE, MAX_EVENTS):
            best = max(best, float(np.nanmax(values)))
    return best


def scorers(outputs: np.ndarray, steps: int, knots: np.ndarray | None):
    """The portfolio's scorers of these training outputs (``(2, n, d)``), as
    functions of an output array, and the scorer at the inputs' ``knots`` where
    the portfolio would fit it (:func:`mcdp.attacks.inputs_knots` not ``None``)."""
    found = {}
    for label in SCORERS:
        model, features = _SCORERS[label]
        if label == "learned-inputs" and knots is None:
            continue
        fitted = learning.fit(
            jax.random.PRNGKey(0), outputs[0], outputs[1], model=model, steps=steps,
            feature_set=features, knots=knots if features == "ramps" else None,
        )  # fmt: skip
        score = learning.SCORES_BY_FEATURES[features][model]
        found[label] = lambda y, f=fitted, s=score: s(y, f)
    table = histogram_table(outputs)
    if table is not None:
        found["histogram"] = lambda y, t=table: histogram_score(y, t)
    return found


def run(name: str, draws: int, seed: int, steps: int, train: int | None = None) -> dict:
    case = SUITE[name]
    spec = mcdp.AuditSpec(
        name, case.epsilon, pair=pair_of(name), dim=case.dim, delta=0.0,
        confidence=CONFIDENCE, seed=seed,
    )  # fmt: skip
    plan = spec.plan
    train, _ = learned_sizes(draws, train)
    outputs = draw(
        jax.random.PRNGKey(seed), plan.mechanism, plan.pair, plan.params, train
    )
    cells, p, q = exact_cells(name)
    top = ceiling_module.ceiling(name, pair_of(name), draws, CONFIDENCE)
    row = {"case": name, "draws": draws, "seed": seed, "steps": steps, "train": train,
           "knot_levels": list(learning.KNOT_LEVELS), "hidden": learning.HIDDEN,
           "ceiling": top.value}  # fmt: skip
    knots = inputs_knots(plan.transformed, outputs)
    for label, score in scorers(outputs, steps, knots).items():
        start = time.perf_counter()
        values = np.asarray(score(jnp.asarray(cells)), np.float64)
        row[label] = best_event(values, p, q, draws) / top.value
        row[f"{label}_seconds"] = time.perf_counter() - start
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--draws", default="1e7", help="N per input of the counted sample")
    p.add_argument("--seeds", default="0")
    p.add_argument("--steps", type=int, default=learning.STEPS, help="Adam's steps")
    p.add_argument(
        "--knot-levels", default=None, help="comma-separated quantiles of the hinges"
    )
    p.add_argument("--hidden", type=int, default=learning.HIDDEN, help="MLP units")
    p.add_argument(
        "--train-draws", default=None,
        help="training draws per input (default: the audit's at --draws)",
    )  # fmt: skip
    p.add_argument("--json", default=None)
    args = p.parse_args()
    jax.config.update("jax_enable_x64", True)  # the suite's audits run in float64
    draws = int(float(args.draws))
    train = None if args.train_draws is None else int(float(args.train_draws))
    # the settings that learning reads from its module when it fits
    learning.HIDDEN = args.hidden
    if args.knot_levels:
        learning.KNOT_LEVELS = tuple(float(v) for v in args.knot_levels.split(","))
    rows = []
    for name in args.cases.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            rows.append(run(name, draws, seed, args.steps, train))
            shown = {k: round(v, 3) for k, v in rows[-1].items() if k in LABELS}
            print(f"{name} seed {seed}: best event / ceiling {shown}", flush=True)
            if args.json:
                Path(args.json).write_text(json.dumps(rows, indent=1))
    print(f"\nknot levels {learning.KNOT_LEVELS}, {learning.HIDDEN} hidden units")
    print(
        "| case | N | training draws | Adam steps | scorer "
        "| best event / ceiling (mean; seeds) |"
    )
    print("|---|---|---|---|---|---|")
    for name in dict.fromkeys(r["case"] for r in rows):
        mine = [r for r in rows if r["case"] == name]
        for label in LABELS:
            values = [r[label] for r in mine if label in r]
            if values:
                print(
                    f"| {name} | {draws:.0e} | {mine[0]['train']:.0e} | {args.steps} "
                    f"| {label} | "
                    f"{statistics.fmean(values):.3f}; "
                    f"{', '.join(f'{v:.3f}' for v in values)} |"
                )


if __name__ == "__main__":
    main()
