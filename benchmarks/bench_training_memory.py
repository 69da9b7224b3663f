"""The memory and time of a scorer's training sample, for releases of many coordinates.

A default audit (``attack="auto"``) at N >= 1e7 draws per input trains its scorers
on 1e6 outputs per input (``attacks.TRAIN_CAP``), pooled, shuffled and copied to the
device once (``learning.training_sample``) and shared by the scorers. On a CPU the
device's copy is host memory too, so a release of many coordinates (a histogram of
400 bins: 6.4 GB of training outputs in float64) holds them several times over.

One run, in a fresh process: ``--draws`` outputs per input of ``--mechanism`` with
``--dim`` coordinates (pair ``axis``, epsilon 0.1, float64), their training sample,
then a logistic scorer on its moments for ``--steps`` steps. After each stage it
records the stage's wall seconds and the process's peak resident memory so far
(``ru_maxrss``). To compare two versions of mcdp, run it at each (``PYTHONPATH`` at a
``git worktree`` of the other), in turn, on an idle machine.

    python benchmarks/bench_training_memory.py --mechanism noisy-hist1 --dim 400 \\
        --draws 1e6 --json F
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import jax  # noqa: E402
from _common import (  # noqa: E402
    environment,
    environment_line,
    own_max_rss_bytes,
    parse_count,
    write_json,
)

import mcdp  # noqa: E402
from mcdp import learning, running  # noqa: E402
from mcdp.sampling import draw  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mechanism", default="noisy-hist1")
    parser.add_argument("--dim", type=int, default=400)
    parser.add_argument("--draws", type=parse_count, default=10**6)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    env = environment()
    print(environment_line(env))

    spec = mcdp.AuditSpec(
        args.mechanism, 0.1, delta=0.0, dim=args.dim, pair="axis", seed=args.seed
    )
    plan, key = spec.plan, running.key_of(spec)
    stages = []
    start = time.perf_counter()

    def lap(stage: str, pending=None) -> None:
        nonlocal start
        jax.block_until_ready(pending)
        now = time.perf_counter()
        peak = own_max_rss_bytes()
        stages.append({"stage": stage, "seconds": now - start, "peak_rss_bytes": peak})
        print(f"{stage:16s} {now - start:7.1f} s, peak {peak / 1e9:5.2f} GB")
        start = now

    outputs = draw(key, plan.mechanism, plan.pair, plan.params, args.draws)
    lap(f"outputs {outputs.shape[1:]}")
    with jax.enable_x64(True):
        sample = learning.training_sample(outputs[0], outputs[1])
        lap("training sample", sample.y)
        scorer = learning.fit(key, sample=sample, steps=args.steps)
        lap(f"fit, {args.steps} steps", scorer)
    if args.json:
        write_json(args.json, {**vars(args), "environment": env, "stages": stages})
    return 0


if __name__ == "__main__":
    sys.exit(main())
