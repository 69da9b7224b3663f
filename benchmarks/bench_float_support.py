"""The float-support table: built on the device in pieces, against the host's scatter.

:func:`mcdp.attacks.float_support_table` records, per input, output coordinate and
binade, the most significant mantissa bits that the training outputs reach. It was
built on the host, one ``np.maximum.at`` per input over every output's (coordinate,
binade) index; it is now one scatter-max per piece of outputs on the device. This
times both on the same Laplace outputs ``(2, n, width)`` in the same run (the
fastest of ``--repeats``), checks that the tables are equal, and reports the ratio:

    python benchmarks/bench_float_support.py --shapes 1e6x10,2e5x400,1e6x100

A default audit builds it on its training outputs: 10^6 per input from 10^7
counted draws up (a 400-bin histogram's are 3.2 GB per input in float64).

``--lookup`` times the attack's guess instead, on ``n`` outputs of each shape
against the tables of ``n`` others: :func:`mcdp.attacks._float_support_guess` (one
gather of both tables' rows, whose cells are in range by construction) against
the guess as it was (each table indexed by coordinate and binade, which JAX
bounds-checks), jitted, the same guesses checked equal. A default audit computes it
on every selection and, where float-support wins, every counted output.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from mcdp import attacks, learning

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import best_of, parse_count, print_table  # noqa: E402


def host_table(outputs: np.ndarray, dtype: str) -> np.ndarray:
    """The table as it was built before: the layout on the device, the maximum per
    cell on the host (``np.maximum.at``)."""
    bins = 1 << (1 + np.finfo(dtype).nexp)
    num_inputs, _, width = outputs.shape
    table = np.full((num_inputs, width, bins), -1, dtype=np.int32)
    layout = jax.jit(lambda y: learning.float_bits(y)[:2])
    with jax.enable_x64(dtype == "float64"):
        for i in range(num_inputs):
            top, precision = map(np.asarray, layout(jnp.asarray(outputs[i])))
            coords = np.broadcast_to(np.arange(width), top.shape)
            np.maximum.at(table[i], (coords.ravel(), top.ravel()), precision.ravel())
    return table


def indexed_guess(y, tables):
    """The guess as it was: each input's ``(width, bins)`` table indexed by
    coordinate and binade."""
    top, precision, _ = learning.float_bits(y)
    coords = jnp.arange(y.shape[-1], dtype=jnp.int32)[None, :]
    out_x, out_x_prime = (
        jnp.any(precision > table[coords, top], axis=-1) for table in tables
    )
    return jnp.where(
        out_x_prime & ~out_x, 2, jnp.where(out_x & ~out_x_prime, 0, 1)
    ).astype(jnp.int32)


def bench_lookup(n: int, width: int, dtype: str, repeats: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    training = rng.laplace(size=(2, n, width)).astype(dtype)
    training[1] = np.round(training[1], 2)  # x' on a coarser grid
    table = attacks.float_support_table(training, dtype)
    aux = attacks._float_support_aux(training, dtype)
    with jax.enable_x64(dtype == "float64"):
        y = jnp.asarray(rng.laplace(size=(n, width)).astype(dtype))
        now = jax.jit(attacks._float_support_guess)
        before = jax.jit(indexed_guess)
        tables = (jnp.asarray(table[0]), jnp.asarray(table[1]))
        aux = jnp.asarray(aux)
        new = best_of(repeats, lambda: now(y, aux).block_until_ready())
        old = best_of(repeats, lambda: before(y, tables).block_until_ready())
    return {
        "n": n,
        "width": width,
        "dtype": dtype,
        "indexed_seconds": old.seconds,
        "gather_seconds": new.seconds,
        "gather_over_indexed": new.seconds / old.seconds,
        "same_guesses": bool(np.array_equal(new.result, old.result)),
    }


def parse_shape(text: str) -> tuple[int, int]:
    """``"1e6x10"`` -> ``(1000000, 10)``: outputs per input by coordinates."""
    n, _, width = text.partition("x")
    if not width:
        raise argparse.ArgumentTypeError(f"expected NxWIDTH, got {text!r}")
    return parse_count(n), parse_count(width)


def bench_shape(n: int, width: int, dtype: str, repeats: int, seed: int) -> dict:
    outputs = np.random.default_rng(seed).laplace(size=(2, n, width)).astype(dtype)
    device = best_of(repeats, lambda: attacks.float_support_table(outputs, dtype))
    host = best_of(repeats, lambda: host_table(outputs, dtype))
    return {
        "n": n,
        "width": width,
        "dtype": dtype,
        "host_seconds": host.seconds,
        "device_seconds": device.seconds,
        "device_over_host": device.seconds / host.seconds,
        "same_table": bool(np.array_equal(device.result, host.result)),
        "piece": attacks.FLOAT_SUPPORT_PIECE,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--shapes",
        type=lambda t: [parse_shape(s) for s in t.split(",") if s.strip()],
        default=[(10**6, 10), (2 * 10**5, 400)],
        help="comma-separated NxWIDTH (outputs per input by coordinates)",
    )
    p.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None)
    p.add_argument(
        "--lookup", action="store_true", help="time the guess, not the table"
    )
    args = p.parse_args()
    if args.repeats < 1:
        p.error(f"--repeats must be at least 1, got {args.repeats}")
    if args.lookup:
        rows = (
            bench_lookup(n, width, args.dtype, args.repeats, args.seed)
            for n, width in args.shapes
        )
        done = print_table(
            "| n x width | dtype | indexed s | one gather s | one gather / indexed "
            "| same guesses |",
            rows,
            lambda r: (
                f"| {r['n']:.0e} x {r['width']} | {r['dtype']} "
                f"| {r['indexed_seconds']:.4f} | {r['gather_seconds']:.4f} "
                f"| {r['gather_over_indexed']:.3f} | {r['same_guesses']} |"
            ),
            args.json,
        )
        return 0 if all(r["same_guesses"] for r in done) else 1
    rows = (
        bench_shape(n, width, args.dtype, args.repeats, args.seed)
        for n, width in args.shapes
    )
    done = print_table(
        "| n x width | dtype | host s | device s | device / host | same table |",
        rows,
        lambda r: (
            f"| {r['n']:.0e} x {r['width']} | {r['dtype']} | {r['host_seconds']:.3f} "
            f"| {r['device_seconds']:.3f} | {r['device_over_host']:.3f} "
            f"| {r['same_table']} |"
        ),
        args.json,
    )
    return 0 if all(r["same_table"] for r in done) else 1


if __name__ == "__main__":
    sys.exit(main())
