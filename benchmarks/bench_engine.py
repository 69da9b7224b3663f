"""Throughput of the mcdp engine against a plain NumPy run of the same experiment.

What is measured
----------------
The ACL 2022 sanity check (SPEC E2) with the Laplace mechanism at epsilon = 1:
the inputs are ``D = 0^d`` and ``D' = 1^d``, the mechanism adds iid Laplace noise
of scale ``b = d / epsilon`` to every coordinate, and the majority-vote attack
rounds each output coordinate (``< 0.5`` -> 0, otherwise 1, NaN -> 1) and guesses
1 iff more than ``d / 2`` coordinates rounded to 1 (a tie guesses 0). Each input
gets ``draws`` runs of the mechanism and the guesses are counted.

The same experiment runs twice, in the same process and the same dtype:

* **mcdp**: :func:`mcdp.sampling.count_outcomes`, one compiled loop that draws,
  attacks and counts chunk by chunk. It is warmed up once with a small number of
  draws so that compilation is not timed; it returns host NumPy counts, so the
  timing includes the device-to-host synchronisation.
* **numpy**: a straightforward vectorised NumPy version, chunked with as many rows
  per chunk as the engine (so both hold about the same memory): uniforms from
  ``np.random.default_rng(seed).random``, Laplace noise by inverse CDF
  ``-b sign(u - 1/2) log(1 - 2 |u - 1/2|)``, add ``x``, round, count the ones per
  row, guess, count the guesses.

The figure of merit is *scalar draws per second*, ``2 inputs * draws * d /
seconds``, the best of ``--repeats`` runs; the table also gives the ratio
mcdp / numpy, the CPU utilisation (process CPU seconds / wall seconds, so 2.0
means both cores of a 2-core machine were busy) and the CPU nanoseconds per scalar
(the cost per core, which other processes on the machine disturb less than the
wall-clock figures). By default ``draws = scalars // d`` (``--scalars``), so that
every row of the table does about the same amount of work.

As a sanity check, the estimated ``P[guess 1 | D]`` (and ``P[guess 1 | D']``) of
the two implementations must agree within 5 standard errors of their difference;
a warning is printed otherwise, the table is still printed.

How to run
----------
``make bench`` runs ``python benchmarks/bench_engine.py`` with the defaults. For
example::

    python benchmarks/bench_engine.py --dims 1,8,32,128 --dtype both --repeats 3
    python benchmarks/bench_engine.py --dims 32 --dtype float32 --draws 1000000 \\
        --json bench.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import jax
import numpy as np

from mcdp.estimators import MAJORITY_VOTE
from mcdp.mechanisms import get_mechanism
from mcdp.sampling import BLOCK_DRAWS, chunk_blocks_for, count_outcomes

EPSILON = 1.0
MECHANISM = "laplace"
DEFAULT_DIMS = "1,8,32,128"
DEFAULT_SCALARS = 1.5e8  # per input: ~1.5-2.5 s per mcdp measurement on 2 CPU cores
SANITY_SIGMAS = 5.0
WARMUP_DRAWS = BLOCK_DRAWS


@dataclass(frozen=True)
class Timing:
    """The best of several timed runs of one implementation.

    Attributes:
      seconds: best wall-clock time.
      cpu_utilisation: process CPU seconds / wall seconds of that best run.
      counts: ``(2, 2)`` int64 counts ``[input, guess]`` of that run.
    """

    seconds: float
    cpu_utilisation: float
    counts: np.ndarray


@dataclass(frozen=True)
class Row:
    """One line of the table (and one record of ``--json``)."""

    dim: int
    dtype: str
    draws: int
    chunk_blocks: int
    chunk_rows: int
    chunk_scalars: int
    prng_impl: str
    mcdp_seconds: float
    mcdp_scalars_per_s: float
    mcdp_cpu_utilisation: float
    mcdp_cpu_ns_per_scalar: float
    numpy_seconds: float
    numpy_scalars_per_s: float
    numpy_cpu_utilisation: float
    numpy_cpu_ns_per_scalar: float
    ratio: float
    mcdp_p1_given_d: float
    numpy_p1_given_d: float
    mcdp_p1_given_d_prime: float
    numpy_p1_given_d_prime: float
    max_z: float
    sane: bool


def numpy_counts(
    xs: np.ndarray,
    scale: float,
    num_draws: int,
    dtype: np.dtype,
    chunk_rows: int,
    seed: int,
) -> np.ndarray:
    """Runs the experiment in plain NumPy, ``chunk_rows`` draws at a time.

    ``rng.random`` can return 0, where the inverse CDF gives ``-inf`` (rounds to 0);
    that happens with probability ``2^-24`` (float32) or ``2^-53`` (float64) per
    scalar and does not affect the throughput, so it is left as is.

    Args:
      xs: ``(num_inputs, d)`` inputs.
      scale: the Laplace scale ``b``.
      num_draws: draws per input.
      dtype: ``np.float32`` or ``np.float64``; all arithmetic stays in it.
      chunk_rows: draws per chunk (bounds the memory to ``chunk_rows * d`` scalars).
      seed: seed of ``np.random.default_rng``.

    Returns:
      ``(num_inputs, 2)`` int64 counts of the guesses 0 and 1.
    """
    rng = np.random.default_rng(seed)
    num_inputs, dim = xs.shape
    b = dtype.type(scale)
    half = dtype.type(0.5)
    counts = np.zeros((num_inputs, 2), dtype=np.int64)
    with np.errstate(divide="ignore"):
        for i in range(num_inputs):
            x = xs[i].astype(dtype)
            done = 0
            while done < num_draws:
                rows = min(chunk_rows, num_draws - done)
                u = rng.random((rows, dim), dtype=dtype)
                centred = u - half
                noise = -b * np.sign(centred) * np.log(1 - 2 * np.abs(centred))
                y = x + noise
                ones = np.count_nonzero(~(y < half), axis=1)
                guess_one = np.count_nonzero(2 * ones > dim)
                counts[i, 0] += rows - guess_one
                counts[i, 1] += guess_one
                done += rows
    return counts


def best_of(repeats: int, run: Callable[[], np.ndarray]) -> Timing:
    """Times ``run`` ``repeats`` times and keeps the fastest run.

    Args:
      repeats: number of timed runs (at least 1).
      run: returns host counts, so its end is a synchronisation point.

    Returns:
      The fastest run's :class:`Timing`.
    """
    best: Timing | None = None
    for _ in range(repeats):
        cpu0, wall0 = time.process_time(), time.perf_counter()
        counts = run()
        wall = time.perf_counter() - wall0
        cpu = time.process_time() - cpu0
        if best is None or wall < best.seconds:
            best = Timing(wall, cpu / wall, np.asarray(counts, dtype=np.int64))
    assert best is not None
    return best


def z_score(counts_a: np.ndarray, counts_b: np.ndarray) -> float:
    """|difference| of two estimated P[guess 1] in standard errors of the difference.

    Args:
      counts_a: ``(2,)`` counts of guesses 0 and 1 of one implementation.
      counts_b: the same for the other.

    Returns:
      ``|p_a - p_b| / sqrt(p (1 - p) (1/n_a + 1/n_b))`` with the pooled ``p``; 0 when
      both estimates are equal (including a pooled ``p`` of 0 or 1).
    """
    n_a, n_b = int(counts_a.sum()), int(counts_b.sum())
    p_a, p_b = counts_a[1] / n_a, counts_b[1] / n_b
    pooled = (counts_a[1] + counts_b[1]) / (n_a + n_b)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n_a + 1 / n_b))
    if se == 0:
        return 0.0 if p_a == p_b else math.inf
    return abs(p_a - p_b) / se


def bench_one(dim: int, dtype: str, draws: int, repeats: int, seed: int) -> Row:
    """Benchmarks mcdp and NumPy on one ``(d, dtype)`` and checks they agree.

    Args:
      dim: the dimension ``d``.
      dtype: ``"float64"`` or ``"float32"``.
      draws: draws per input.
      repeats: timed runs per implementation; the best is kept.
      seed: seed of both the JAX key and the NumPy generator.

    Returns:
      The table row.
    """
    mechanism = get_mechanism(MECHANISM)
    params = mechanism.e2_params(EPSILON, dim)
    xs = np.stack([np.zeros(dim), np.ones(dim)])
    chunk_blocks = chunk_blocks_for(dim)
    chunk_rows = chunk_blocks * BLOCK_DRAWS

    def run_mcdp(num_draws: int) -> np.ndarray:
        return count_outcomes(
            jax.random.key(seed),
            mechanism,
            MAJORITY_VOTE,
            xs,
            params,
            num_draws,
            dtype=dtype,
        )

    run_mcdp(WARMUP_DRAWS)  # compiles for this (mechanism, d, dtype)
    mcdp = best_of(repeats, lambda: run_mcdp(draws))
    np_dtype = np.dtype(dtype)
    baseline = best_of(
        repeats,
        lambda: numpy_counts(xs, params.scale, draws, np_dtype, chunk_rows, seed),
    )

    scalars = 2 * draws * dim
    z = max(z_score(mcdp.counts[i], baseline.counts[i]) for i in range(2))
    return Row(
        dim=dim,
        dtype=dtype,
        draws=draws,
        chunk_blocks=chunk_blocks,
        chunk_rows=chunk_rows,
        chunk_scalars=chunk_rows * dim,
        prng_impl=str(jax.config.jax_default_prng_impl),
        mcdp_seconds=mcdp.seconds,
        mcdp_scalars_per_s=scalars / mcdp.seconds,
        mcdp_cpu_utilisation=mcdp.cpu_utilisation,
        mcdp_cpu_ns_per_scalar=1e9 * mcdp.cpu_utilisation * mcdp.seconds / scalars,
        numpy_seconds=baseline.seconds,
        numpy_scalars_per_s=scalars / baseline.seconds,
        numpy_cpu_utilisation=baseline.cpu_utilisation,
        numpy_cpu_ns_per_scalar=(
            1e9 * baseline.cpu_utilisation * baseline.seconds / scalars
        ),
        ratio=baseline.seconds / mcdp.seconds,
        mcdp_p1_given_d=float(mcdp.counts[0, 1] / draws),
        numpy_p1_given_d=float(baseline.counts[0, 1] / draws),
        mcdp_p1_given_d_prime=float(mcdp.counts[1, 1] / draws),
        numpy_p1_given_d_prime=float(baseline.counts[1, 1] / draws),
        max_z=float(z),
        sane=bool(z <= SANITY_SIGMAS),
    )


def environment() -> dict[str, Any]:
    """What the figures depend on besides ``d`` and the dtype."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        usable = os.cpu_count()
    load = round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None
    return {
        "jax_version": jax.__version__,
        "jax_backend": jax.default_backend(),
        "jax_devices": [str(d) for d in jax.devices()],
        "prng_impl": str(jax.config.jax_default_prng_impl),
        "numpy_version": np.__version__,
        "python_version": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "usable_cpus": usable,
        "load_average_1min": load,
        "block_draws": BLOCK_DRAWS,
        "mechanism": MECHANISM,
        "epsilon": EPSILON,
    }


def format_table(rows: Sequence[Row], env: dict[str, Any]) -> str:
    """The printed report: an environment header, the table and a legend."""
    header = (
        f"mcdp engine vs NumPy: SPEC E2, mechanism={env['mechanism']}, "
        f"epsilon={env['epsilon']:g}\n"
        f"jax {env['jax_version']} backend={env['jax_backend']} "
        f"devices={','.join(env['jax_devices'])} prng={env['prng_impl']} | "
        f"numpy {env['numpy_version']} | python {env['python_version']} | "
        f"cpu cores={env['cpu_count']} (usable {env['usable_cpus']}), "
        f"load avg (1 min, before the runs)={env['load_average_1min']}"
    )
    columns = (
        f"{'d':>4} {'dtype':>7} {'prng':>11} {'draws/input':>12} "
        f"{'chunk (blocks x rows = scalars)':>32} "
        f"{'mcdp s':>7} {'mcdp scal/s':>11} {'cpu':>4} {'cpu ns':>6} "
        f"{'numpy s':>7} {'np scal/s':>10} {'cpu':>4} {'cpu ns':>6} {'ratio':>6} "
        f"{'P1|D mcdp':>10} {'P1|D np':>10} {'z':>5}"
    )
    lines = [header, "", columns, "-" * len(columns)]
    for r in rows:
        chunk = f"{r.chunk_blocks} x {BLOCK_DRAWS} = {r.chunk_scalars:,}"
        lines.append(
            f"{r.dim:>4} {r.dtype:>7} {r.prng_impl:>11} {r.draws:>12,} {chunk:>32} "
            f"{r.mcdp_seconds:>7.3f} {r.mcdp_scalars_per_s:>11.3e} "
            f"{r.mcdp_cpu_utilisation:>4.2f} {r.mcdp_cpu_ns_per_scalar:>6.2f} "
            f"{r.numpy_seconds:>7.3f} {r.numpy_scalars_per_s:>10.3e} "
            f"{r.numpy_cpu_utilisation:>4.2f} {r.numpy_cpu_ns_per_scalar:>6.2f} "
            f"{r.ratio:>5.2f}x "
            f"{r.mcdp_p1_given_d:>10.6f} {r.numpy_p1_given_d:>10.6f} {r.max_z:>5.2f}"
            + ("" if r.sane else "  <-- DISAGREE")
        )
    lines += [
        "",
        "scal/s = 2 inputs x draws x d / best-of-repeats seconds; "
        "ratio = mcdp scal/s / numpy scal/s;",
        "cpu = process CPU s / wall s (2.00 = both of 2 cores busy); "
        "cpu ns = process CPU ns per scalar (less sensitive to other load);",
        "chunk = engine chunk (numpy uses the same rows per chunk); "
        f"z = max over D, D' of |P1 mcdp - P1 numpy| / SE (warn above "
        f"{SANITY_SIGMAS:g}).",
    ]
    return "\n".join(lines)


def parse_ints(text: str) -> list[int]:
    """``"1,8,32"`` -> ``[1, 8, 32]``; each must be positive."""
    values = [int(float(v)) for v in text.split(",") if v.strip()]
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line; see the module docstring."""
    parser = argparse.ArgumentParser(
        description="Scalar draws per second of the mcdp engine vs plain NumPy "
        "(SPEC E2, Laplace, majority vote).",
    )
    parser.add_argument(
        "--dims",
        type=parse_ints,
        default=parse_ints(DEFAULT_DIMS),
        help=f"comma-separated dimensions d (default {DEFAULT_DIMS})",
    )
    parser.add_argument(
        "--draws",
        type=parse_ints,
        default=None,
        help="draws per input: one value for every d, or one per d "
        "(default: scalars // d)",
    )
    parser.add_argument(
        "--scalars",
        type=float,
        default=DEFAULT_SCALARS,
        help="scalars per input when --draws is not given: draws = scalars // d "
        f"(default {DEFAULT_SCALARS:g})",
    )
    parser.add_argument(
        "--dtype",
        choices=("float64", "float32", "both"),
        default="both",
        help="dtype of both implementations (default both)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="timed runs per measurement, the best is reported (default 3)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of both (default 0)")
    parser.add_argument("--json", metavar="PATH", help="also write the results here")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.draws is not None and len(args.draws) not in (1, len(args.dims)):
        parser.error("--draws takes one value or one per entry of --dims")
    if args.draws is None and args.scalars < max(args.dims):
        parser.error("--scalars must be at least the largest d")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the benchmark, prints the table and optionally writes JSON.

    Returns:
      0; a disagreement between the implementations is a printed warning only.
    """
    args = parse_args(argv)
    dtypes = ("float64", "float32") if args.dtype == "both" else (args.dtype,)
    if args.draws is None:
        draws = [int(args.scalars) // d for d in args.dims]
    elif len(args.draws) == 1:
        draws = args.draws * len(args.dims)
    else:
        draws = args.draws

    env = environment()
    rows: list[Row] = []
    for dtype in dtypes:
        for dim, n in zip(args.dims, draws, strict=True):
            print(f"  running d={dim} dtype={dtype} draws={n:,} ...", file=sys.stderr)
            rows.append(bench_one(dim, dtype, n, args.repeats, args.seed))

    print(format_table(rows, env), flush=True)
    for r in rows:
        if not r.sane:
            print(
                f"WARNING: d={r.dim} {r.dtype}: mcdp and numpy disagree on "
                f"P[guess 1] by {r.max_z:.1f} standard errors "
                f"(P1|D {r.mcdp_p1_given_d:.6f} vs {r.numpy_p1_given_d:.6f}, "
                f"P1|D' {r.mcdp_p1_given_d_prime:.6f} vs "
                f"{r.numpy_p1_given_d_prime:.6f})",
                file=sys.stderr,
            )
    if args.json:
        payload = {
            "environment": env,
            "settings": {"repeats": args.repeats, "seed": args.seed},
            "results": [asdict(r) for r in rows],
        }
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(payload, f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
