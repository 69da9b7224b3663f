"""The portfolio's scorers trained with and without the features that are 0 on every
training row.

A standardised feature that is 0 on every row of the training steps (the indicator of
NaN where none is drawn, an atom's padding, the hinges of a coordinate without
continuous values, the bits that a discrete output's values share) has a gradient of
0 at every step: Adam leaves its weights where they started. Since 2026-11-29,
``mcdp.learning.fit`` trains the other features' weights alone
(``learning.SKIP_ZERO_FEATURES``). On RAPPOR's 20 bits of 0.0 and 1.0, 40 features
vary, of the moments' 220 and of the bit features' 420: the others are such
features.

For each case of ``--cases`` (on its peers' pair, the suite's calibration), this
draws ``--train`` outputs per input (the default audit's training sample at 10^7
draws and beyond: ``mcdp.attacks.TRAIN_CAP``), pools them once
(``learning.training_sample``), then fits each of the portfolio's three scorers on
the default hinges (``learned``, ``learned-mlp``, ``learned-bits``) with every
feature and with the zero ones left out, in turn, ``--repeats`` times each after an
untimed fit per form (its compile). Each row gives the seconds of every fit, their
ratio (the medians), how many features the steps trained of all, and the largest
difference of the two forms' scores on 2 x 10^4 other outputs, relative to the
largest score.

    python benchmarks/bench_zero_features.py --cases rappor,svt34-parallel \\
        --json benchmarks/results/zero_features.json
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from _common import parse_count, print_table  # noqa: E402
from bench_floor import pair_of, setup  # noqa: E402

from mcdp import learning  # noqa: E402
from mcdp.attacks import _SCORERS, TRAIN_CAP  # noqa: E402
from mcdp.mechanisms import MECHANISMS  # noqa: E402
from mcdp.sampling import draw  # noqa: E402

SCORERS = ("learned", "learned-mlp", "learned-bits")
FORMS = {"every feature": False, "zero ones left out": True}
HELD_OUT = 10_000  # outputs per input the two forms' scores are compared on


def _trained_width(calls: list[int]):
    """``learning._train`` that records the features its steps train."""
    train = learning._train

    def recorded(y, labels, mean, *args, **kwargs):
        calls.append(int(mean.shape[0]))
        return train(y, labels, mean, *args, **kwargs)

    return recorded


def bench_case(name: str, train: int, repeats: int, seed: int) -> list[dict]:
    mechanism = MECHANISMS[name]
    pair, params = setup(name)
    key = jax.random.key(seed)
    rows = []
    with jax.enable_x64(True):
        outputs = np.asarray(draw(key, mechanism, pair, params, train))
        held = draw(jax.random.fold_in(key, 1), mechanism, pair, params, HELD_OUT)
        held = jnp.asarray(held).reshape((-1,) + held.shape[2:])
        sample = learning.training_sample(outputs[0], outputs[1])
        del outputs
        saved, real_train = learning.SKIP_ZERO_FEATURES, learning._train
        try:
            for label in SCORERS:
                model, features = _SCORERS[label]
                seconds = {form: [] for form in FORMS}
                scores, trained = {}, {}
                for rep in range(repeats + 1):
                    for form, skip in FORMS.items():
                        learning.SKIP_ZERO_FEATURES = skip
                        calls: list[int] = []
                        learning._train = _trained_width(calls)
                        start = time.perf_counter()
                        scorer = learning.fit(
                            jax.random.fold_in(key, 2), model=model,
                            feature_set=features, sample=sample,
                        )  # fmt: skip
                        jax.block_until_ready(scorer)
                        elapsed = time.perf_counter() - start
                        learning._train = real_train
                        if rep:  # the first of each form compiles
                            seconds[form].append(elapsed)
                        else:
                            score = learning.SCORES_BY_FEATURES[features][model]
                            scores[form] = np.asarray(jax.jit(score)(held, scorer))
                            trained[form] = calls[0]
                full, skipped = (scores[form] for form in FORMS)
                rows.append({
                    "case": name,
                    "pair": pair_of(name),
                    "train": train,
                    "scorer": label,
                    "seconds": seconds,
                    "ratio": statistics.median(seconds["every feature"])
                    / statistics.median(seconds["zero ones left out"]),
                    "features": trained["every feature"],
                    "features_trained": trained["zero ones left out"],
                    "max_relative_difference": float(
                        np.abs(skipped - full).max() / np.abs(full).max()
                    ),
                })  # fmt: skip
        finally:
            learning.SKIP_ZERO_FEATURES, learning._train = saved, real_train
    return rows


def _line(row: dict) -> str:
    every, left_out = (
        ", ".join(f"{s:.2f}" for s in row["seconds"][form]) for form in FORMS
    )
    return (
        f"| {row['case']} | {row['scorer']} | {row['features_trained']} of "
        f"{row['features']} | {every} | {left_out} | {row['ratio']:.2f} "
        f"| {row['max_relative_difference']:.2g} |"
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", default="rappor,svt34-parallel")
    p.add_argument("--train", type=parse_count, default=TRAIN_CAP)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    if args.repeats < 1:
        p.error(f"--repeats must be at least 1, got {args.repeats}")
    header = (
        "| case | scorer | features trained | every feature s | zero ones left "
        "out s | ratio | largest score difference |"
    )
    rows = (
        row
        for name in args.cases.split(",")
        for row in bench_case(name, args.train, args.repeats, args.seed)
    )
    print_table(header, rows, _line, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
