"""How much the exact loss's thresholds lose by being chosen on a sample, on the
exact output probabilities of the Sparse Vector cases with a declared loss, without
running the mechanism.

Each case on its peers' pair is a partition into cells with their exact masses
under both inputs (``svt3``: the answer's value cells of
:func:`mcdp.ceiling.svt3_cell_masses`; ``numerical-svt``: the loss bins of
:func:`mcdp.ceiling.numerical_svt_cells`; ``svt1``, ``svt4``, ``svt6``: every
output pattern, :func:`mcdp.ceiling.svt_outputs`), and a cell's log ratio is the exact
loss that the likelihood-ratio candidate scores. At ``--draws`` N counted draws
per input, the selection sample (the portfolio's N/10, within [1e5, 2^24], times
each of ``--factors``) is drawn ``--reps`` times from the exact multinomials; the
thresholds are chosen on it by :func:`mcdp.learning.select_thresholds` as the
portfolio chooses the winner's, and the chosen events are scored by their bound at
the expected counts of N draws (:func:`mcdp.ceiling.bounds`, 3 events, 90 %).
Each repetition chooses twice on the same sample: from each input's counts of an
event (``counts``, at their pessimistic ends, as the scorers choose) and from the
masses that :func:`mcdp.learning.loss_weighted_counts` estimates from both inputs'
draws (``exact loss``, as the portfolio chooses the loss's thresholds).
Printed: the mean (± its standard error) and the least of that bound over the
repetitions, over the ceiling. The gap is what the choice of thresholds costs an
attack that scores the exact loss; the luck of the counted draws comes on top.

    python benchmarks/sim_lr_choice.py --draws 1e7 --reps 30 --factors 1,2
"""

from __future__ import annotations

import argparse

import numpy as np

from mcdp import learning
from mcdp.attacks import MAX_EVENTS, learned_sizes
from mcdp.ceiling import (
    bounds,
    ceiling,
    numerical_svt_cells,
    svt3_cell_masses,
    svt_outputs,
)
from mcdp.mechanisms.suite import PEER_PAIRS

CONFIDENCE = 0.9
# the cases whose outputs are continuous: cells of the value or of the loss
CELLS = {"svt3": svt3_cell_masses, "numerical-svt": numerical_svt_cells}


def cells(name: str) -> tuple[np.ndarray, np.ndarray]:
    """The cells' masses ``(p, q)``, normalised, the empty ones dropped."""
    pair = PEER_PAIRS[name]
    if name in CELLS:
        p, q = CELLS[name](name, pair)
    else:  # every output pattern of a discrete variant is a cell
        _, p, q = svt_outputs(name, pair)
    keep = (p > 0) | (q > 0)
    return p[keep] / p[keep].sum(), q[keep] / q[keep].sum()


CHOICES = {"counts": False, "exact loss": True}  # the exact_loss of each choice


def simulate(name: str, draws: int, factor: float, reps: int, seed: int):
    """The selection sample's size and, per choice of :data:`CHOICES`, the bound of
    the events chosen in each repetition (an array of ``reps``)."""
    p, q = cells(name)
    with np.errstate(divide="ignore"):
        score = np.log(p) - np.log(q)
    select = int(learned_sizes(draws)[1] * factor)
    rng = np.random.default_rng(seed)

    def bound_of(event: np.ndarray) -> float:
        ahead, behind = bounds(
            p[event].sum(), q[event].sum(), draws, CONFIDENCE, MAX_EVENTS
        )
        return float(max(ahead, behind))

    out: dict[str, list[float]] = {label: [] for label in CHOICES}
    for _ in range(reps):
        s_first = np.repeat(score, rng.multinomial(select, p))
        s_second = np.repeat(score, rng.multinomial(select, q))
        for label, exact_loss in CHOICES.items():
            chosen = learning.select_thresholds(
                s_first, s_second, draws=draws, confidence=CONFIDENCE,
                max_events=MAX_EVENTS, epsilon=0.1, delta=0.0, exact_loss=exact_loss,
            ).thresholds  # fmt: skip
            out[label].append(
                max(max(bound_of(score >= t), bound_of(score < t)) for t in chosen)
            )
    return select, {label: np.array(values) for label, values in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="svt3,numerical-svt")
    parser.add_argument("--draws", default="1e7")
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--factors", default="1,2")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    draws = int(float(args.draws))
    print(
        "| case | N | selection draws per input | choice | mean / ceiling (± se) "
        "| least |"
    )
    print("|---|---|---|---|---|---|")
    for name in args.cases.split(","):
        top = ceiling(name, PEER_PAIRS[name], draws, CONFIDENCE).value
        for factor in (float(f) for f in args.factors.split(",")):
            select, values = simulate(name, draws, factor, args.reps, args.seed)
            for label, bound in values.items():
                ratio = bound / top
                se = ratio.std(ddof=1) / np.sqrt(ratio.size)
                print(
                    f"| {name} | {draws:.0e} | {select:.2g} | {label} "
                    f"| {ratio.mean():.4f} (± {se:.4f}) | {ratio.min():.4f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
