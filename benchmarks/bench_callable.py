"""Throughput of black-box mechanisms (``Mechanism.from_callable``) in the engine.

What is measured, in one process and one run (the baselines beside each result):

* **fn alone**: the callable in a plain loop with the engine's chunking, one call
  of ``n = HOST_BLOCK_DRAWS`` per host block and input, from one generator: what
  the function itself costs;
* **fn + generators**: the same loop with the engine's per-block generators
  (``mcdp.engines.host.block_generator``): what reproducibility costs;
* **mcdp, 1 worker**, **mcdp, 2 workers** (processes) and **mcdp, 2 threads**
  (``threads=True``): ``count_outcomes`` with the majority vote on the pair
  ``0^d`` / ``1^d``, warmed up first (compilation, and the worker processes'
  start), so that neither is timed.

The runs are interleaved in rounds, ``--repeats`` of them: fn alone, fn +
generators and mcdp with 1 worker, then (apart, so that the worker processes do
not share the cores with the next round's runs) mcdp with 1 worker, 2 processes
and 2 threads. The overhead is ``mcdp 1 worker / fn alone - 1`` (target <= 20 %)
of the fastest runs, and its median over the rounds; the speed-ups are ``mcdp 1
worker / mcdp 2 workers`` (processes) and ``/ mcdp 2 threads``, likewise. Two
callables: NumPy's vectorised Laplace (``x + rng.laplace``) and a Python loop of
one draw per value (as diffprivlib's ``randomise`` is), which holds the GIL.

Run: ``python benchmarks/bench_callable.py [--draws 8388608] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

import mcdp
from mcdp import sampling
from mcdp.attacks import MAJORITY_VOTE
from mcdp.engines import host
from mcdp.subjects import TextbookLaplace

# mcdp's runs (workers, threads): one worker, two processes, two threads
WORKERS = ((1, False), (2, False), (2, True))


def python_loop_laplace(rng, x, n):
    """One ``rng.laplace()`` per value in a Python loop (GIL-bound)."""
    draw = rng.laplace
    return np.array([[v + draw() for v in x] for _ in range(n)])


def _rounds(repeats: int, runs: dict) -> dict:
    """Seconds of every run in each of ``repeats`` rounds; a round runs each once,
    in turn, so that a ratio compares runs made under the same load."""
    times = {label: [] for label in runs}
    for _ in range(repeats):
        for label, run in runs.items():
            start = time.perf_counter()
            run()
            times[label].append(time.perf_counter() - start)
    return times


def measure(fn, dim: int, draws: int, repeats: int) -> dict:
    n = host.HOST_BLOCK_DRAWS
    blocks = -(-draws // n)
    pair = np.stack([np.zeros(dim), np.ones(dim)])
    key = sampling.key(0)
    words = host.entropy(key)

    def alone():
        rng = np.random.default_rng(0)
        for x in pair:
            for _ in range(blocks):
                fn(rng, x.copy(), n)

    def with_generators():
        for i, x in enumerate(pair):
            for h in range(blocks):
                fn(host.block_generator(words, i, h), x.copy(), n)

    engines = {}
    for workers, threads in WORKERS:
        mech = mcdp.Mechanism.from_callable(
            "bench", fn, workers=workers, threads=threads
        )

        def engine(mech=mech):
            return sampling.count_outcomes(
                key, mech, MAJORITY_VOTE, pair, None, blocks * n
            )

        engine()  # compile; start the workers
        engines[workers, threads] = engine
    # two sets of rounds: the overhead's runs, then one worker against two (whose
    # processes would otherwise share the cores with the next round's runs)
    one = engines[1, False]
    times = _rounds(
        repeats, {"fn_alone": alone, "fn_generators": with_generators, "mcdp_1": one}
    )
    pairs = _rounds(
        repeats,
        {
            "mcdp_1": one,
            "mcdp_2": engines[2, False],
            "mcdp_2_threads": engines[2, True],
        },
    )
    row = {"dim": dim, "draws_per_input": blocks * n}
    row["fn_alone_s"] = min(times["fn_alone"])
    row["fn_generators_s"] = min(times["fn_generators"])
    row["mcdp_1_workers_s"] = min(times["mcdp_1"])
    row["mcdp_2_workers_s"] = min(pairs["mcdp_2"])
    row["mcdp_2_threads_s"] = min(pairs["mcdp_2_threads"])
    row["overhead"] = row["mcdp_1_workers_s"] / row["fn_alone_s"] - 1
    row["generators_overhead"] = row["fn_generators_s"] / row["fn_alone_s"] - 1
    row["speedup_2_workers"] = min(pairs["mcdp_1"]) / row["mcdp_2_workers_s"]
    row["speedup_2_threads"] = min(pairs["mcdp_1"]) / row["mcdp_2_threads_s"]
    # the same ratios round by round: their median, less sensitive to one lucky run
    ratio = np.array(times["mcdp_1"]) / np.array(times["fn_alone"])
    row["overhead_median_round"] = float(np.median(ratio) - 1)
    speedup = np.array(pairs["mcdp_1"]) / np.array(pairs["mcdp_2"])
    row["speedup_2_workers_median_round"] = float(np.median(speedup))
    row["draws_per_s_1_worker"] = 2 * blocks * n / row["mcdp_1_workers_s"]
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--draws", type=int, default=1 << 23, help="per input (NumPy fn)")
    p.add_argument("--loop-draws", type=int, default=1 << 17, help="Python-loop fn")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    rows = []
    for label, fn, dim, draws in [
        ("numpy laplace", TextbookLaplace(1.0), 1, args.draws),
        ("numpy laplace", TextbookLaplace(1.0), 8, args.draws // 8),
        ("python loop", python_loop_laplace, 1, args.loop_draws),
    ]:
        row = {"fn": label, **measure(fn, dim, draws, args.repeats)}
        rows.append(row)
        print(
            f"{label:>13} d={dim}: {row['draws_per_input']:>9,} draws/input  "
            f"fn alone {row['fn_alone_s']:.3f} s, +generators "
            f"{row['fn_generators_s']:.3f} s, mcdp 1 worker "
            f"{row['mcdp_1_workers_s']:.3f} s (overhead "
            f"{row['overhead']:+.1%}; median round "
            f"{row['overhead_median_round']:+.1%}), 2 workers "
            f"{row['mcdp_2_workers_s']:.3f} s "
            f"(speed-up {row['speedup_2_workers']:.2f}x), 2 threads "
            f"{row['mcdp_2_threads_s']:.3f} s ({row['speedup_2_threads']:.2f}x)",
            flush=True,
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpus": os.cpu_count(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
