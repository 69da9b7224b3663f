"""How the histogram's thresholds are chosen, on the exact output probabilities of
the discrete Sparse Vector cases, without running the mechanism.

For each case on its peers' pair, at ``--draws`` N counted draws per input: the
histogram's table (N/10 training draws per input, within [1e5, 1e6]) and the
selection sample (N/10, within [1e5, 2^24]) are drawn ``--reps`` times from the
exact multinomials (:mod:`mcdp.mechanisms._svt_exact`); thresholds are chosen on
the selection sample by :func:`mcdp.learning.select_thresholds` under each rule,
and the chosen events are scored by their bound at the expected counts of N draws
(:func:`mcdp.ceiling.bounds`, 3 events, 90 %). Printed: the mean and the least of
that bound over the repetitions, over the ceiling. The rules are the default
(pessimistic ends, events within 2x skipped) and
:data:`mcdp.attacks.DISCRETE_CHOICE`.

    python benchmarks/sim_discrete_choice.py --draws 1e7 --reps 30
"""

from __future__ import annotations

import argparse

import numpy as np

from mcdp import learning
from mcdp.attacks import DISCRETE_CHOICE, MAX_EVENTS, learned_sizes
from mcdp.ceiling import bounds, ceiling, svt_outputs
from mcdp.mechanisms.suite import PEER_PAIRS

CONFIDENCE = 0.9
RULES = {"default": {}, "discrete choice": DISCRETE_CHOICE}


def output_probabilities(name: str) -> tuple[np.ndarray, np.ndarray]:
    _, p, q = svt_outputs(name, PEER_PAIRS[name])
    return p / p.sum(), q / q.sum()


def simulate(name: str, draws: int, reps: int, seed: int) -> dict[str, np.ndarray]:
    p, q = output_probabilities(name)
    train, select = learned_sizes(draws)
    rng = np.random.default_rng(seed)

    def bound_of(event: np.ndarray) -> float:
        ahead, behind = bounds(
            p[event].sum(), q[event].sum(), draws, CONFIDENCE, MAX_EVENTS
        )
        return float(max(ahead, behind))

    out = {rule: [] for rule in RULES}
    for _ in range(reps):
        first, second = rng.multinomial(train, p), rng.multinomial(train, q)
        ratio = np.log((first + 0.5) / (second + 0.5))  # the histogram's table
        s_first = np.repeat(ratio, rng.multinomial(select, p))
        s_second = np.repeat(ratio, rng.multinomial(select, q))
        for rule, options in RULES.items():
            chosen = learning.select_thresholds(
                s_first, s_second, draws=draws, confidence=CONFIDENCE,
                max_events=MAX_EVENTS, epsilon=0.1, delta=0.0, **options,
            ).thresholds  # fmt: skip
            out[rule].append(
                max(max(bound_of(ratio >= t), bound_of(ratio < t)) for t in chosen)
            )
    return {rule: np.array(v) for rule, v in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="svt1,svt2,svt4,svt6")
    parser.add_argument("--draws", default="1e7")
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    draws = int(float(args.draws))
    print("| case | N | rule | mean / ceiling | least / ceiling |")
    print("|---|---|---|---|---|")
    for name in args.cases.split(","):
        top = ceiling(name, PEER_PAIRS[name], draws, CONFIDENCE).value
        for rule, values in simulate(name, draws, args.reps, args.seed).items():
            print(
                f"| {name} | {draws:.0e} | {rule} | {values.mean() / top:.4f} | "
                f"{values.min() / top:.4f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
