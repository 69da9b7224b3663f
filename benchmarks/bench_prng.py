"""Laplace noise per second for each JAX PRNG, and the engine's chunk size sweep.

What is measured
----------------
1. **PRNG implementations.** For every JAX PRNG implementation (``--impls``,
   default threefry2x32, threefry4x32, philox2x32, philox4x32, rbg, unsafe_rbg, and
   mcdp's opt-in splitmix64 of :mod:`mcdp.prng`) and dtype: standard Laplace noise
   from :func:`mcdp.mechanisms._base.standard_laplace`
   (the inverse CDF every Laplace mechanism of mcdp uses), drawn the way the engine
   draws it: one key per block of ``BLOCK_DRAWS x d`` scalars from ``fold_in``,
   ``jax.vmap`` over the blocks of a chunk of about
   :data:`mcdp.engines.device.CHUNK_SCALARS` scalars, and a jitted ``fori_loop`` over
   the chunks that only counts the draws ``> 0.5``, so no noise leaves the chunk.
   An implementation that fails to trace, compile or run (under ``vmap``) gets a
   row that says why instead of a figure.
2. **Chunk size.** The real engine, :func:`mcdp.sampling.count_outcomes` on the
   ACL 2022 sanity check (sanity check: laplace, epsilon = 1, majority vote) with the
   key :func:`mcdp.sampling.key` (PRNG :data:`mcdp.sampling.PRNG_IMPL`), with
   ``chunk_blocks`` set so that a chunk holds 2^16 ... 2^22 scalars per dataset
   (``--chunks``; at least one block).

Every figure is the best of ``--repeats`` runs after one untimed run that compiles,
in scalars per second (part 1: draws / s; part 2: ``2 datasets x draws x d / s``),
with the CPU utilisation (process CPU s / wall s). Every row names its PRNG, chunk
and dtype. As a sanity check, part 1 compares the fraction of draws above 0.5 with
its exact value ``e^{-1/2} / 2`` (``z`` in standard errors; a warning above 5).

How to run
----------
``make bench`` runs this with the defaults (about two minutes on 2 CPU cores) and
writes ``benchmarks/results/prng.json``. For example::

    python benchmarks/bench_prng.py --scalars 1e7 --chunks 16,20 --json prng.json
    python benchmarks/bench_prng.py --impls threefry4x32,philox4x32 --dtype float32
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from _common import best_of, environment, environment_line, parse_ints, write_json

from mcdp import prng
from mcdp.attacks import MAJORITY_VOTE
from mcdp.engines.device import CHUNK_SCALARS, chunk_blocks_for
from mcdp.mechanisms import get_mechanism
from mcdp.mechanisms._base import standard_laplace
from mcdp.sampling import BLOCK_DRAWS, PRNG_IMPL, count_outcomes, key

IMPLS = "threefry2x32,threefry4x32,philox2x32,philox4x32,rbg,unsafe_rbg,splitmix64"
DEFAULT_CHUNKS = "16,17,18,19,20,21,22"
DEFAULT_SCALARS = 2**27  # per measurement: ~0.3-2 s per run on 2 CPU cores
DEFAULT_SWEEP_SCALARS = 2**25  # per dataset
DEFAULT_SWEEP_DIMS = "1,32"
P_ABOVE = 0.5 * math.exp(-0.5)  # P[Lap(1) > 1/2]
CALL_SCALARS = 1 << 30  # per compiled call: the int32 count cannot overflow
SANITY_SIGMAS = 5.0


@dataclass(frozen=True)
class KernelRow:
    """One PRNG implementation in one dtype (part 1)."""

    impl: str
    dtype: str
    block_scalars: int
    chunk_scalars: int
    scalars: int
    seconds: float | None  # None: failed
    scalars_per_s: float | None
    cpu_utilisation: float | None
    fraction_above: float | None
    z: float | None
    error: str | None


@dataclass(frozen=True)
class SweepRow:
    """The engine with one chunk size, d and dtype (part 2)."""

    impl: str
    dtype: str
    dim: int
    chunk_blocks: int
    chunk_scalars: int
    draws: int  # per dataset
    seconds: float
    scalars_per_s: float
    cpu_utilisation: float
    is_default: bool  # the engine's own chunk for this d


@partial(jax.jit, static_argnames=("chunk_blocks", "block_shape", "dtype"))
def _count_above(key_, first_chunk, num_chunks, *, chunk_blocks, block_shape, dtype):
    """Draws ``num_chunks`` chunks of Lap(1) noise and counts the draws > 1/2."""
    offsets = jnp.arange(chunk_blocks, dtype=jnp.uint32)

    def block_count(block):
        noise = standard_laplace(jax.random.fold_in(key_, block), block_shape, dtype)
        return jnp.sum(noise > 0.5, dtype=jnp.int32)

    def chunk(c, total):
        blocks = (first_chunk + c).astype(jnp.uint32) * chunk_blocks + offsets
        return total + jnp.sum(jax.vmap(block_count)(blocks), dtype=jnp.int32)

    return jax.lax.fori_loop(0, num_chunks, chunk, jnp.int32(0))


def count_above(
    key_, num_chunks: int, chunk_blocks: int, block_shape: tuple[int, int], dtype
) -> int:
    """Host total of :func:`_count_above` over as many calls as the int32 allows."""
    per_call = max(1, CALL_SCALARS // (chunk_blocks * math.prod(block_shape)))
    total, done = 0, 0
    while done < num_chunks:
        n = min(per_call, num_chunks - done)
        total += int(
            _count_above(
                key_,
                jnp.int32(done),
                jnp.int32(n),
                chunk_blocks=chunk_blocks,
                block_shape=block_shape,
                dtype=dtype,
            )
        )
        done += n
    return total


def bench_kernel(
    impl: str, dtype: str, dim: int, scalars: int, repeats: int, seed: int
) -> KernelRow:
    """Part 1 for one implementation and dtype; a failure becomes the row's error."""
    block_shape = (BLOCK_DRAWS, dim)
    block_scalars = BLOCK_DRAWS * dim
    chunk_blocks = chunk_blocks_for(dim)
    chunk_scalars = chunk_blocks * block_scalars
    num_chunks = max(1, round(scalars / chunk_scalars))
    total = num_chunks * chunk_scalars
    common = dict(
        impl=impl,
        dtype=dtype,
        block_scalars=block_scalars,
        chunk_scalars=chunk_scalars,
        scalars=total,
    )
    try:
        with jax.enable_x64(dtype == "float64"):
            if impl in prng.STREAMS:  # mcdp's streams, splitmix64 among them
                key_ = prng.key(seed, impl)
            else:
                key_ = jax.random.key(seed, impl=impl)
            count_above(key_, 1, chunk_blocks, block_shape, dtype)  # compiles
            timing = best_of(
                repeats,
                lambda: count_above(key_, num_chunks, chunk_blocks, block_shape, dtype),
            )
    except Exception as err:  # a PRNG that does not work here: report why
        message = str(err).strip().splitlines()[0] if str(err).strip() else ""
        error = f"{type(err).__name__}: {message}"[:200]
        return KernelRow(
            **common,
            seconds=None,
            scalars_per_s=None,
            cpu_utilisation=None,
            fraction_above=None,
            z=None,
            error=error,
        )
    fraction = timing.result / total
    se = math.sqrt(P_ABOVE * (1 - P_ABOVE) / total)
    return KernelRow(
        **common,
        seconds=timing.seconds,
        scalars_per_s=total / timing.seconds,
        cpu_utilisation=timing.cpu_utilisation,
        fraction_above=fraction,
        z=abs(fraction - P_ABOVE) / se,
        error=None,
    )


def bench_chunk(
    dtype: str, dim: int, chunk_scalars: int, scalars: int, repeats: int, seed: int
) -> SweepRow:
    """Part 2: the engine on the sanity check (laplace), chunks of ``chunk_scalars``."""
    mechanism = get_mechanism("laplace")
    params = mechanism.calibrate_sanity_check(1.0, dim)
    xs = np.stack([np.zeros(dim), np.ones(dim)])
    chunk_blocks = max(1, chunk_scalars // (BLOCK_DRAWS * dim))
    draws = max(1, scalars // dim)

    def run(num_draws: int) -> np.ndarray:
        return count_outcomes(
            key(seed),
            mechanism,
            MAJORITY_VOTE,
            xs,
            params,
            num_draws,
            dtype=dtype,
            chunk_blocks=chunk_blocks,
        )

    run(BLOCK_DRAWS)  # compiles for this chunk size
    timing = best_of(repeats, lambda: run(draws))
    return SweepRow(
        impl=PRNG_IMPL,
        dtype=dtype,
        dim=dim,
        chunk_blocks=chunk_blocks,
        chunk_scalars=chunk_blocks * BLOCK_DRAWS * dim,
        draws=draws,
        seconds=timing.seconds,
        scalars_per_s=2 * draws * dim / timing.seconds,
        cpu_utilisation=timing.cpu_utilisation,
        is_default=chunk_blocks == chunk_blocks_for(dim),
    )


def format_tables(
    kernels: Sequence[KernelRow], sweep: Sequence[SweepRow], env: dict
) -> str:
    """The printed report: a header and the two tables."""
    columns = (
        f"{'prng':>13} {'dtype':>7} {'block':>7} {'chunk (scalars)':>15} "
        f"{'scalars':>10} {'s':>7} {'scal/s':>9} {'cpu':>4} {'P[>1/2]':>8} {'z':>5}"
    )
    lines = [
        "Part 1: Lap(1) noise (mcdp.mechanisms._base.standard_laplace), one fold_in "
        "key per block, vmap over the blocks of a chunk, fori_loop over chunks, "
        "counting draws > 1/2",
        environment_line(env),
        "",
        columns,
        "-" * len(columns),
    ]
    for r in kernels:
        head = (
            f"{r.impl:>13} {r.dtype:>7} {r.block_scalars:>7,} "
            f"{r.chunk_scalars:>15,} {r.scalars:>10.3e} "
        )
        if r.error is not None:
            lines.append(head + f"FAILED: {r.error}")
            continue
        lines.append(
            head + f"{r.seconds:>7.3f} {r.scalars_per_s:>9.3e} "
            f"{r.cpu_utilisation:>4.2f} {r.fraction_above:>8.5f} {r.z:>5.2f}"
            + ("  <-- WRONG" if r.z > SANITY_SIGMAS else "")
        )
    lines += [
        "",
        f"scal/s = draws / best-of-repeats seconds; cpu = process CPU s / wall s; "
        f"z = |P[>1/2] - {P_ABOVE:.5f}| / SE (warning above {SANITY_SIGMAS:g}).",
        "",
        "Part 2: the engine (count_outcomes, sanity check, laplace, epsilon = 1, "
        "majority vote, key = mcdp.sampling.key) against the chunk size",
    ]
    columns = (
        f"{'prng':>13} {'dtype':>7} {'d':>4} {'chunk blocks':>12} "
        f"{'chunk (scalars)':>15} {'draws/dataset':>13} {'s':>7} {'scal/s':>9} "
        f"{'cpu':>4}"
    )
    lines += [columns, "-" * len(columns)]
    fastest = {}
    for r in sweep:
        group = (r.dtype, r.dim)
        fastest[group] = max(fastest.get(group, 0.0), r.scalars_per_s)
    for r in sweep:
        marks = ("  default" if r.is_default else "") + (
            "  fastest" if r.scalars_per_s == fastest[(r.dtype, r.dim)] else ""
        )
        lines.append(
            f"{r.impl:>13} {r.dtype:>7} {r.dim:>4} {r.chunk_blocks:>12,} "
            f"{r.chunk_scalars:>15,} {r.draws:>13,} {r.seconds:>7.3f} "
            f"{r.scalars_per_s:>9.3e} {r.cpu_utilisation:>4.2f}{marks}"
        )
    lines += [
        "",
        "scal/s = 2 datasets x draws x d / best-of-repeats seconds; chunk = scalars "
        "per dataset drawn at once (at least one block of "
        f"{BLOCK_DRAWS} x d); default = the engine's own chunk for this d.",
    ]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line; see the module docstring."""
    parser = argparse.ArgumentParser(
        description="Laplace noise per second for each JAX PRNG, and the engine "
        "against its chunk size.",
    )
    parser.add_argument(
        "--impls", default=IMPLS, help=f"comma-separated PRNGs (default {IMPLS})"
    )
    parser.add_argument(
        "--dtype",
        choices=("float64", "float32", "both"),
        default="both",
        help="(default both)",
    )
    parser.add_argument(
        "--dim",
        type=int,
        default=32,
        help="part 1: blocks of BLOCK_DRAWS x dim scalars, as the engine at this d "
        "(default 32)",
    )
    parser.add_argument(
        "--scalars",
        type=float,
        default=DEFAULT_SCALARS,
        help=f"part 1: draws per measurement (default {DEFAULT_SCALARS:.3g})",
    )
    parser.add_argument(
        "--chunks",
        type=parse_ints,
        default=parse_ints(DEFAULT_CHUNKS),
        help=f"part 2: log2 of the chunk sizes in scalars (default {DEFAULT_CHUNKS})",
    )
    parser.add_argument(
        "--sweep-dims",
        type=parse_ints,
        default=parse_ints(DEFAULT_SWEEP_DIMS),
        help=f"part 2: dimensions d (default {DEFAULT_SWEEP_DIMS})",
    )
    parser.add_argument(
        "--sweep-scalars",
        type=float,
        default=DEFAULT_SWEEP_SCALARS,
        help="part 2: scalars per dataset, draws = this // d (default "
        f"{DEFAULT_SWEEP_SCALARS:.3g})",
    )
    parser.add_argument("--skip-sweep", action="store_true", help="run part 1 only")
    parser.add_argument("--repeats", type=int, default=3, help="best of (default 3)")
    parser.add_argument("--seed", type=int, default=0, help="(default 0)")
    parser.add_argument("--json", metavar="PATH", help="also write the results here")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.dim < 1:
        parser.error("--dim must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Runs both parts, prints the tables and optionally writes JSON.

    Returns:
      0; failing PRNGs and sanity warnings are reported only.
    """
    args = parse_args(argv)
    dtypes = ("float64", "float32") if args.dtype == "both" else (args.dtype,)
    impls = [v.strip() for v in args.impls.split(",") if v.strip()]
    env = environment()
    kernels = []
    for dtype in dtypes:
        for impl in impls:
            print(f"  part 1: {impl} {dtype} ...", file=sys.stderr, flush=True)
            kernels.append(
                bench_kernel(
                    impl, dtype, args.dim, int(args.scalars), args.repeats, args.seed
                )
            )
    sweep = []
    if not args.skip_sweep:
        for dtype in dtypes:
            for dim in args.sweep_dims:
                for log2 in args.chunks:
                    print(
                        f"  part 2: {PRNG_IMPL} {dtype} d={dim} chunk=2^{log2} ...",
                        file=sys.stderr,
                        flush=True,
                    )
                    sweep.append(
                        bench_chunk(
                            dtype,
                            dim,
                            1 << log2,
                            int(args.sweep_scalars),
                            args.repeats,
                            args.seed,
                        )
                    )
    print(format_tables(kernels, sweep, env), flush=True)
    if args.json:
        settings = {
            "repeats": args.repeats,
            "seed": args.seed,
            "dim": args.dim,
            "engine_chunk_scalars": CHUNK_SCALARS,
            "p_above_exact": P_ABOVE,
        }
        write_json(
            args.json,
            {
                "benchmark": "prng",
                "environment": env,
                "settings": settings,
                "kernels": [asdict(r) for r in kernels],
                "chunk_sweep": [asdict(r) for r in sweep],
            },
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
