"""Throughput of the mcdp engine against the reference algorithm and the best NumPy.

What is measured
----------------
The ACL 2022 sanity check at epsilon = 1: the inputs are ``D = 0^d`` and
``D' = 1^d``, each is run through the mechanism ``draws`` times, and the
majority-vote attack rounds each output coordinate (``< 0.5`` -> 0, otherwise 1,
NaN -> 1) and guesses 1 iff more than ``d / 2`` coordinates rounded to 1. The
mechanisms (``--mechanisms``) are ``laplace`` (scale ``d / epsilon``), ``adept``
(scale ``1 / epsilon``, no clipping) and ``dptext`` (DPText's sampler, NaN -> 0,
scale ``d / epsilon``).

For every mechanism, ``d`` and dtype, three implementations run in the same process
and the same dtype:

* **mcdp**: :func:`mcdp.sampling.count_outcomes` with the key
  :func:`mcdp.sampling.key`, one compiled loop that draws, attacks and counts chunk
  by chunk; one row per PRNG stream (``--prng``, default both: ``threefry4x32``, the
  default of every seed, and the opt-in ``splitmix64`` of :mod:`mcdp.prng`). It is
  warmed up once with a few draws so that compilation is not timed; it returns host
  counts, so the timing includes the device-to-host transfer.
* **reference**: :func:`baselines.reference_port`, the reference code of the paper
  ported to a NumPy ``Generator``: the whole ``(N, d)`` arrays of a dataset at once,
  no chunking. It is slow and needs ~40-60 bytes of memory per scalar, so it gets
  its own, smaller number of draws (``--reference-scalars``, per dataset; the
  default 5e7 needs ~2-3 GB) and can be left out (``--skip-reference``).
* **best-numpy**: :func:`baselines.best_numpy`, the same math chunked in cache-sized
  buffers, in place, one thread and one bit generator per core (``--threads``).

The figure of merit is *scalar draws per second*, ``2 datasets * draws * d /
seconds``, the best of ``--repeats`` runs. Every line of the table gives the
implementation's PRNG, its chunk (scalars per chunk; per thread for best-numpy) and
the dtype; the header gives the JAX backend, device count and device kind. The
table also gives the CPU utilisation (process CPU seconds / wall seconds: 2.0 means
both cores of a 2-core machine were busy) and the CPU nanoseconds per scalar (the
cost per core, which other processes on the machine disturb less). A second table
gives the ratios mcdp / reference and mcdp / best-numpy per stream (scalar draws per
second, same dtype) beside the targets of the "Performance and scale" issue: mcdp /
reference >= 8 in float64, >= 10 in float32 at d = 1 and >= 15 in float32 at other
d; mcdp / best-numpy >= 1. The targets are reported, not asserted.

As a sanity check, the estimated ``P[guess 1 | D]`` and ``P[guess 1 | D']`` of each
baseline must agree with mcdp's within 5 standard errors of their difference; a
warning is printed otherwise, the tables are still printed.

How to run
----------
``make bench`` runs this with the defaults (laplace, d = 1, 8, 32, 128, both dtypes:
a few minutes on 2 CPU cores) and writes ``benchmarks/results/engine.json``. For
example::

    python benchmarks/bench_engine.py --dims 1,8,32,128 --dtype both --repeats 3
    python benchmarks/bench_engine.py --mechanisms laplace,adept,dptext --dims 32 \\
        --dtype float32 --scalars 1e7 --reference-scalars 1e7 --json engine.json
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import NamedTuple

import numpy as np
from _common import (
    Timing,
    best_of,
    environment,
    environment_line,
    parse_ints,
    write_json,
)
from baselines import (
    CHUNK_SCALARS,
    DEFAULT_BIT_GENERATOR,
    DEFAULT_UNIFORMS,
    MECHANISMS,
    best_numpy,
    reference_port,
)

from mcdp.attacks import MAJORITY_VOTE
from mcdp.engines.device import chunk_blocks_for
from mcdp.exact import exact_e2
from mcdp.mechanisms import get_mechanism
from mcdp.sampling import BLOCK_DRAWS, PRNG_IMPLS, count_outcomes, key

EPSILON = 1.0
DEFAULT_MECHANISMS = "laplace"
DEFAULT_DIMS = "1,8,32,128"
DEFAULT_SCALARS = 1.5e8  # per dataset: ~1 s per mcdp run on 2 CPU cores
DEFAULT_REFERENCE_SCALARS = 5e7  # per dataset: 400 MB per float64 array
SANITY_SIGMAS = 5.0
WARMUP_DRAWS = BLOCK_DRAWS
BEST_NUMPY_TARGET = 1.0


class Case(NamedTuple):
    """One group of the table: the same experiment for every implementation."""

    mechanism: str
    dim: int
    dtype: str


@dataclass(frozen=True)
class Row:
    """One implementation on one :class:`Case`: a line of the first table."""

    mechanism: str
    dim: int
    dtype: str
    implementation: str  # mcdp, reference or best-numpy
    prng: str
    chunk_scalars: int | None  # scalars drawn at once (per thread); None: all
    draws: int  # per dataset
    seconds: float
    scalars_per_s: float
    cpu_utilisation: float
    cpu_ns_per_scalar: float
    counts: list[list[int]]  # [dataset, guess]
    p1_given_d: float
    p1_given_d_prime: float
    z_vs_mcdp: float | None  # None for mcdp itself
    sane: bool


@dataclass(frozen=True)
class Ratio:
    """mcdp over the baselines on one :class:`Case`: a line of the second table."""

    mechanism: str
    dim: int
    dtype: str
    mcdp_over_reference: float | None  # None: the reference was skipped
    reference_target: float
    mcdp_over_best_numpy: float
    best_numpy_target: float
    exact_p1_given_d: float | None
    exact_p1_given_d_prime: float | None
    prng: str  # the stream of the mcdp row


def reference_target(dim: int, dtype: str) -> float:
    """The issue's target for mcdp / reference port (reported, not asserted)."""
    if dtype == "float64":
        return 8.0
    return 10.0 if dim == 1 else 15.0


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
    return float(abs(p_a - p_b) / se)


def _row(
    case: Case,
    implementation: str,
    prng: str,
    chunk_scalars: int | None,
    draws: int,
    timing: Timing,
    mcdp_counts: np.ndarray | None = None,
) -> Row:
    counts = np.asarray(timing.result, dtype=np.int64)
    scalars = 2 * draws * case.dim
    z = None
    if mcdp_counts is not None:
        z = max(z_score(mcdp_counts[i], counts[i]) for i in range(2))
    return Row(
        *case,
        implementation=implementation,
        prng=prng,
        chunk_scalars=chunk_scalars,
        draws=draws,
        seconds=timing.seconds,
        scalars_per_s=scalars / timing.seconds,
        cpu_utilisation=timing.cpu_utilisation,
        cpu_ns_per_scalar=1e9 * timing.cpu_utilisation * timing.seconds / scalars,
        counts=counts.tolist(),
        p1_given_d=float(counts[0, 1] / draws),
        p1_given_d_prime=float(counts[1, 1] / draws),
        z_vs_mcdp=z,
        sane=z is None or z <= SANITY_SIGMAS,
    )


def bench_case(
    case: Case,
    draws: int,
    reference_draws: int | None,
    repeats: int,
    seed: int,
    threads: int,
    streams: Sequence[str] = PRNG_IMPLS,
) -> list[Row]:
    """Benchmarks the three implementations on one :class:`Case`.

    Args:
      case: the mechanism (one of :data:`baselines.MECHANISMS`), ``d`` and dtype.
      draws: draws per dataset of mcdp and best-numpy.
      reference_draws: draws per dataset of the reference port; ``None`` skips it.
      repeats: timed runs per implementation; the best is kept.
      seed: seed of the mcdp key and of both NumPy baselines.
      threads: worker threads of best-numpy.
      streams: the PRNG streams of mcdp (:data:`mcdp.sampling.PRNG_IMPLS`), one
        mcdp row each; the baselines are checked against the first.

    Returns:
      The rows of mcdp (one per stream), the reference port (unless skipped) and
      best-numpy.
    """
    name, dim, dtype = case
    mechanism = get_mechanism(name)
    params = mechanism.calibrate_sanity_check(EPSILON, dim)
    xs = np.stack([np.zeros(dim), np.ones(dim)])

    def run_mcdp(num_draws: int, stream: str) -> np.ndarray:
        return count_outcomes(
            key(seed, stream), mechanism, MAJORITY_VOTE, xs, params, num_draws,
            dtype=dtype,
        )  # fmt: skip

    mcdp_chunk = chunk_blocks_for(dim) * BLOCK_DRAWS * dim
    rows = []
    for stream in streams:
        run_mcdp(WARMUP_DRAWS, stream)  # compiles for this (mechanism, d, dtype)
        timing = best_of(repeats, lambda s=stream: run_mcdp(draws, s))
        first = None if not rows else np.asarray(rows[0].counts)
        rows.append(_row(case, "mcdp", stream, mcdp_chunk, draws, timing, first))
    mcdp_counts = np.asarray(rows[0].counts)  # what the baselines are checked against
    if reference_draws is not None:
        reference = best_of(
            repeats,
            lambda: reference_port(
                name, EPSILON, dim, reference_draws, dtype=dtype, seed=seed
            ),
        )
        prng = "PCG64 random"
        rows.append(
            _row(case, "reference", prng, None, reference_draws, reference, mcdp_counts)
        )
    best = best_of(
        repeats,
        lambda: best_numpy(
            name, EPSILON, dim, draws, dtype=dtype, seed=seed, threads=threads
        ),
    )
    prng = f"{DEFAULT_BIT_GENERATOR} {DEFAULT_UNIFORMS[dtype]} x{threads}"
    chunk = max(1, CHUNK_SCALARS // dim) * dim
    rows.append(_row(case, "best-numpy", prng, chunk, draws, best, mcdp_counts))
    return rows


def ratios(rows: Sequence[Row]) -> list[Ratio]:
    """mcdp over the baselines, one per mcdp stream, from the rows of one
    :class:`Case`."""
    by_name = {r.implementation: r for r in rows if r.implementation != "mcdp"}
    reference, best = by_name.get("reference"), by_name["best-numpy"]
    out = []
    for mcdp in (r for r in rows if r.implementation == "mcdp"):
        mechanism = get_mechanism(mcdp.mechanism)
        exact = exact_e2(
            mechanism, mechanism.calibrate_sanity_check(EPSILON, mcdp.dim), mcdp.dim
        )
        over_reference = None
        if reference is not None:
            over_reference = mcdp.scalars_per_s / reference.scalars_per_s
        out.append(
            Ratio(
                mechanism=mcdp.mechanism,
                dim=mcdp.dim,
                dtype=mcdp.dtype,
                mcdp_over_reference=over_reference,
                reference_target=reference_target(mcdp.dim, mcdp.dtype),
                mcdp_over_best_numpy=mcdp.scalars_per_s / best.scalars_per_s,
                best_numpy_target=BEST_NUMPY_TARGET,
                exact_p1_given_d=None if exact is None else exact.p1,
                exact_p1_given_d_prime=None if exact is None else exact.q1,
                prng=mcdp.prng,
            )
        )
    return out


def format_tables(rows: Sequence[Row], ratios: Sequence[Ratio], env: dict) -> str:
    """The printed report: a header, the throughput table, the ratio table."""
    columns = (
        f"{'mechanism':>9} {'d':>4} {'dtype':>7} {'impl':>10} {'prng':>18} "
        f"{'chunk (scalars)':>17} {'draws/dataset':>13} {'s':>7} {'scal/s':>9} "
        f"{'cpu':>4} {'cpu ns':>6} {'P1|D':>9} {'P1|D`':>9} {'z':>5}"
    )
    lines = [
        f"sanity check (majority vote), epsilon={EPSILON:g}: mcdp vs the reference "
        "port vs the best NumPy, the same dtype within each group",
        environment_line(env),
        "",
        columns,
        "-" * len(columns),
    ]
    for i, r in enumerate(rows):
        if i and (r.mechanism, r.dim, r.dtype) != (
            rows[i - 1].mechanism,
            rows[i - 1].dim,
            rows[i - 1].dtype,
        ):
            lines.append("")
        chunk = "whole (N, d)" if r.chunk_scalars is None else f"{r.chunk_scalars:,}"
        if r.implementation == "best-numpy":
            chunk += "/thr"
        z = "" if r.z_vs_mcdp is None else f"{r.z_vs_mcdp:.2f}"
        lines.append(
            f"{r.mechanism:>9} {r.dim:>4} {r.dtype:>7} {r.implementation:>10} "
            f"{r.prng:>18} {chunk:>17} {r.draws:>13,} {r.seconds:>7.3f} "
            f"{r.scalars_per_s:>9.3e} {r.cpu_utilisation:>4.2f} "
            f"{r.cpu_ns_per_scalar:>6.2f} {r.p1_given_d:>9.6f} "
            f"{r.p1_given_d_prime:>9.6f} {z:>5}" + ("" if r.sane else "  <-- DISAGREE")
        )
    lines += [
        "",
        "scal/s = 2 datasets x draws x d / best-of-repeats seconds; cpu = process CPU "
        "s / wall s (2.00 = 2 cores busy);",
        "cpu ns = process CPU ns per scalar (less sensitive to other load); chunk = "
        "scalars drawn at once (/thr: per thread);",
        f"z = max over D, D' of |P1 - P1 of the first mcdp row| / SE of the "
        f"difference (warning above {SANITY_SIGMAS:g}).",
        "",
        "mcdp over the baselines, scalar draws per second in the same dtype (targets "
        "reported, not asserted):",
    ]
    columns = (
        f"{'mechanism':>9} {'d':>4} {'dtype':>7} {'mcdp prng':>13} "
        f"{'mcdp/reference':>15} {'target':>7} {'':>4} {'mcdp/best-numpy':>15} "
        f"{'target':>7} {'':>4}"
    )
    lines += [columns, "-" * len(columns)]
    for q in ratios:
        if q.mcdp_over_reference is None:
            reference, reference_met = "skipped", ""
        else:
            reference = f"{q.mcdp_over_reference:.2f}x"
            reference_met = _met(q.mcdp_over_reference, q.reference_target)
        lines.append(
            f"{q.mechanism:>9} {q.dim:>4} {q.dtype:>7} {q.prng:>13} {reference:>15} "
            f"{'>=' + format(q.reference_target, 'g'):>7} {reference_met:>4} "
            f"{q.mcdp_over_best_numpy:>14.2f}x "
            f"{'>=' + format(q.best_numpy_target, 'g'):>7} "
            f"{_met(q.mcdp_over_best_numpy, q.best_numpy_target):>4}"
        )
    return "\n".join(lines)


def _met(value: float, target: float) -> str:
    return "met" if value >= target else "NOT"


def subset_of(allowed: Sequence[str]):
    """An argparse type: ``"a,b"`` -> ``["a", "b"]``, each in ``allowed``, once."""

    def parse(text: str) -> list[str]:
        names = [v.strip() for v in text.split(",") if v.strip()]
        if not names or any(n not in allowed for n in names):
            raise argparse.ArgumentTypeError(
                f"expected a comma-separated subset of {','.join(allowed)}, "
                f"got {text!r}"
            )
        return list(dict.fromkeys(names))

    return parse


parse_mechanisms = subset_of(MECHANISMS)
parse_streams = subset_of(PRNG_IMPLS)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line; see the module docstring."""
    parser = argparse.ArgumentParser(
        description="Scalar draws per second of the mcdp engine, the reference "
        "algorithm ported to NumPy, and the best NumPy (the sanity check, majority "
        "vote).",
    )
    parser.add_argument(
        "--mechanisms",
        type=parse_mechanisms,
        default=parse_mechanisms(DEFAULT_MECHANISMS),
        help=f"comma-separated subset of {','.join(MECHANISMS)} "
        f"(default {DEFAULT_MECHANISMS})",
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
        help="draws per dataset of mcdp and best-numpy: one value for every d, or "
        "one per d (default: scalars // d)",
    )
    parser.add_argument(
        "--scalars",
        type=float,
        default=DEFAULT_SCALARS,
        help="scalars per dataset when --draws is not given: draws = scalars // d "
        f"(default {DEFAULT_SCALARS:g})",
    )
    parser.add_argument(
        "--reference-scalars",
        type=float,
        default=DEFAULT_REFERENCE_SCALARS,
        help="scalars per dataset of the reference port: draws = this // d "
        f"(default {DEFAULT_REFERENCE_SCALARS:g}; it holds 40-60 bytes per scalar "
        "in float64)",
    )
    parser.add_argument(
        "--skip-reference", action="store_true", help="do not run the reference port"
    )
    parser.add_argument(
        "--dtype",
        choices=("float64", "float32", "both"),
        default="both",
        help="dtype of all implementations (default both)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="timed runs per measurement, the best is reported (default 3)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="worker threads of best-numpy (default os.cpu_count())",
    )
    parser.add_argument(
        "--prng",
        type=parse_streams,
        default=list(PRNG_IMPLS),
        help="comma-separated PRNG streams of mcdp, one row each (default "
        f"{','.join(PRNG_IMPLS)}; the baselines are checked against the first)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of all (default 0)")
    parser.add_argument("--json", metavar="PATH", help="also write the results here")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.threads is not None and args.threads < 1:
        parser.error("--threads must be at least 1")
    if args.draws is not None and len(args.draws) not in (1, len(args.dims)):
        parser.error("--draws takes one value or one per entry of --dims")
    if args.draws is None and args.scalars < max(args.dims):
        parser.error("--scalars must be at least the largest d")
    if not args.skip_reference and args.reference_scalars < max(args.dims):
        parser.error("--reference-scalars must be at least the largest d")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the benchmark, prints the tables and optionally writes JSON.

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
    threads = args.threads or os.cpu_count() or 1

    env = environment()
    rows: list[Row] = []
    table: list[Ratio] = []
    for mechanism in args.mechanisms:
        for dtype in dtypes:
            for dim, n in zip(args.dims, draws, strict=True):
                reference_draws = None
                if not args.skip_reference:
                    reference_draws = int(args.reference_scalars) // dim
                print(
                    f"  running {mechanism} d={dim} {dtype}: draws={n:,}, reference "
                    f"draws={reference_draws or 0:,} ...",
                    file=sys.stderr,
                    flush=True,
                )
                case = Case(mechanism, dim, dtype)
                group = bench_case(
                    case,
                    n,
                    reference_draws,
                    args.repeats,
                    args.seed,
                    threads,
                    args.prng,
                )
                rows += group
                table += ratios(group)

    print(format_tables(rows, table, env), flush=True)
    for r in rows:
        if not r.sane:
            print(
                f"WARNING: {r.mechanism} d={r.dim} {r.dtype}: {r.implementation} and "
                f"mcdp disagree on P[guess 1] by {r.z_vs_mcdp:.1f} standard errors",
                file=sys.stderr,
            )
    if args.json:
        settings = {
            "epsilon": EPSILON,
            "repeats": args.repeats,
            "seed": args.seed,
            "threads": threads,
            "reference_scalars": (
                None if args.skip_reference else args.reference_scalars
            ),
            "best_numpy_chunk_scalars": CHUNK_SCALARS,
            "prng": args.prng,
        }
        write_json(
            args.json,
            {
                "benchmark": "engine",
                "environment": env,
                "settings": settings,
                "results": [asdict(r) for r in rows],
                "ratios": [asdict(q) for q in table],
            },
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
