"""The cost of wrapping a function of one release per call (``mcdp.PerCall``).

A library function such as ``diffprivlib.tools.mean`` releases one value per call;
``PerCall(f)`` makes it ``fn(rng, data, n)`` without the user's loop, and each
release is then encoded as a row (``mcdp.core.releases.encode``: a hash of its
structure, then its numbers). What is measured, per release, in one run, the runs
interleaved in ``--repeats`` rounds (the fastest and the median reported):

* **loop**: the user's own loop, ``np.array([f(rng, data) for _ in range(n)])``,
  the baseline;
* **PerCall**: ``PerCall(f)(rng, data, n)`` (the loop, with every call's exception
  caught as its release);
* **PerCall + encode**: what the engine calls (``ReleaseCall``): the releases
  encoded as rows.

Two functions: ``f`` a NumPy Laplace draw on the dataset's sum (about 2 us, so the
overhead shows) and, where installed, ``diffprivlib.tools.mean`` (about 100 us, a
real library). Run: ``python benchmarks/bench_percall.py [--draws 100000]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from mcdp.core.releases import PerCall, ReleaseCall

DATA = np.array([[0.25], [0.5], [0.75]])


def laplace_sum(rng: np.random.Generator, data: np.ndarray) -> float:
    return float(data[:, 0].sum() + rng.laplace())


def diffprivlib_mean(rng: np.random.Generator, data: np.ndarray) -> float:
    from diffprivlib.accountant import BudgetAccountant
    from diffprivlib.tools import mean

    return mean(data[:, 0], epsilon=1.0, bounds=(0, 1), accountant=BudgetAccountant())


def bench(f, draws: int, repeats: int) -> dict:
    runs = {
        "loop": lambda rng: np.array([f(rng, DATA) for _ in range(draws)]),
        "PerCall": lambda rng: PerCall(f)(rng, DATA, draws),
        "PerCall + encode": lambda rng: ReleaseCall(PerCall(f), 1)(rng, DATA, draws),
    }
    times: dict[str, list[float]] = {label: [] for label in runs}
    for r in range(repeats):
        for label, run in runs.items():
            rng = np.random.default_rng(r)
            start = time.perf_counter()
            run(rng)
            times[label].append((time.perf_counter() - start) / draws * 1e6)
    base_min, base_med = min(times["loop"]), statistics.median(times["loop"])
    return {
        label: {
            "us_per_release_min": min(t),
            "us_per_release_median": statistics.median(t),
            "over_loop_min": min(t) / base_min,
            "over_loop_median": statistics.median(t) / base_med,
        }
        for label, t in times.items()
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--draws", type=int, default=100_000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--json", default=None)
    args = p.parse_args()
    functions = {"numpy laplace on the sum": laplace_sum}
    try:
        import diffprivlib  # noqa: F401

        functions["diffprivlib.tools.mean"] = diffprivlib_mean
    except ImportError:
        pass
    out = {}
    print("| function | run | us per release (min / median) | over the loop |")
    print("|---|---|---|---|")
    for name, f in functions.items():
        draws = args.draws if f is laplace_sum else max(args.draws // 20, 1)
        out[name] = result = bench(f, draws, args.repeats)
        for label, r in result.items():
            print(
                f"| {name} | {label} | {r['us_per_release_min']:.2f} / "
                f"{r['us_per_release_median']:.2f} | {r['over_loop_min']:.3f} / "
                f"{r['over_loop_median']:.3f} |",
                flush=True,
            )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
