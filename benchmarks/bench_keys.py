"""The compiled keys of discrete outputs: compared by their bits or as floats.

The portfolio looks the values of discrete outputs up by each output's key
(``mcdp.attacks._histogram_keys``), in the selection draws and, where such a
candidate wins, in the counting loop. The keys compare each coordinate with the
training values by its bits, so that -0.0 is not 0.0. This times, for outputs of
``--rows`` rows of each shape below (integers drawn uniformly among the values, in
float64; ``--signed-zeros`` makes a tenth of each coordinate -0.0), ``--repeats``
runs of each form, alternating, after one untimed call of each (its compile):

- ``the audit's``: ``_histogram_keys`` as the audit runs it (where it compares
  each coordinate with every value: floats, and a zero output's other zero
  taken off, ``attacks._compared_keys``);
- ``floats``: the comparisons alone (the keys before 2026-11-29, which took -0.0
  for 0.0; other keys where an output is -0.0);
- ``bit order``: the comparisons of ``mcdp._bits.bit_order``'s integers (each pattern
  its own, in the floats' order);
- ``raw bits``: the comparisons of the bit patterns as they are.

The shapes: 10 coordinates of 4 values (``svt1``'s patterns), 1 coordinate of 2
values, and 4 coordinates of 80 values, past ``attacks.COMPARISONS`` values in
all, where every form is a binary search per coordinate of ``bit_order``'s
integers (``floats`` searches the floats).

    python benchmarks/bench_keys.py --rows 4194304 --repeats 9 --json F
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
from _common import environment, environment_line, parse_count, write_json  # noqa: E402

from mcdp import attacks  # noqa: E402
from mcdp._bits import bit_order  # noqa: E402

SHAPES = ((10, 4), (1, 2), (4, 80))  # (coordinates, values of each)


def _searched(flat, values, lengths, strides):
    indices = attacks._coordinate_indices(jnp, flat, values, lengths)
    return jnp.sum(indices * strides[None, :], axis=-1, dtype=jnp.int32)


def _raw(a):
    return jax.lax.bitcast_convert_type(a, jnp.int64)  # float64 outputs


def forms(compared: bool) -> dict:
    """``{form: jitted keys(y, values, lengths, strides)}``."""

    def keys(flat, values, lengths, strides):
        if not compared:
            return _searched(flat, values, lengths, strides)
        return attacks._compared_keys(jnp, flat, values, lengths, strides, zeros=False)

    def on(convert):
        def form(y, values, lengths, strides):
            flat = convert(y.reshape(y.shape[0], -1))
            return keys(flat, convert(values), lengths, strides)

        return form

    found = {
        "the audit's": lambda y, *table: attacks._histogram_keys(jnp, y, *table),
        "floats": on(lambda a: a),
    }
    if compared:
        found["bit order"] = on(lambda a: bit_order(jnp, a))
        found["raw bits"] = on(_raw)
    return {name: jax.jit(f) for name, f in found.items()}


def bench_shape(
    coordinates: int, count: int, rows: int, repeats: int, signed_zeros: bool
) -> dict:
    rng = np.random.default_rng(0)
    y = rng.integers(0, count, size=(rows, coordinates)).astype(np.float64)
    if signed_zeros:
        y[rng.random(y.shape) < 0.1] = -0.0
    training = np.stack([y[: rows // 8], y[rows // 8 : rows // 4]])
    keyed = attacks.output_keys(training)
    table = (keyed.values, keyed.lengths, keyed.strides)
    args = (jnp.asarray(y), *(jnp.asarray(a) for a in table))
    compared = keyed.values.size <= attacks.COMPARISONS
    timed = forms(compared)
    keys = {name: np.asarray(f(*args)) for name, f in timed.items()}  # compiles
    audit = keys["the audit's"]
    same = {name: bool(np.array_equal(audit, k)) for name, k in keys.items()}
    walls: dict = {name: [] for name in timed}
    for turn in range(repeats):
        order = list(timed) if turn % 2 == 0 else list(timed)[::-1]
        for name in order:
            start = time.perf_counter()
            jax.block_until_ready(timed[name](*args))
            walls[name].append(time.perf_counter() - start)
    row = {"coordinates": coordinates, "values": count, "rows": rows,
           "compared": compared, "repeats": repeats, "signed_zeros": signed_zeros,
           "same_keys_as_the_audit": same}  # fmt: skip
    for name, w in walls.items():
        row[name] = {"wall_seconds": w, "median_wall": statistics.median(w)}
    floats = row["floats"]["median_wall"]
    row["audit / floats"] = row["the audit's"]["median_wall"] / floats
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=parse_count, default=1 << 22)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--signed-zeros", action="store_true")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1, got {args.repeats}.")
    jax.config.update("jax_enable_x64", True)
    env = environment()
    print(environment_line(env))
    rows = []
    print("| coordinates x values | form | median s | / floats | the audit's keys |")
    print("|---|---|---|---|---|")
    for coordinates, count in SHAPES:
        row = bench_shape(
            coordinates, count, args.rows, args.repeats, args.signed_zeros
        )
        rows.append(row)
        floats = row["floats"]["median_wall"]
        for name in ("floats", "the audit's", "bit order", "raw bits"):
            if name in row:
                median = row[name]["median_wall"]
                same = "yes" if row["same_keys_as_the_audit"][name] else "no"
                print(f"| {coordinates} x {count} | {name} | {median:.4f} "
                      f"| {median / floats:.2f} | {same} |")  # fmt: skip
    if args.json:
        write_json(args.json, {"benchmark": "bench_keys", "environment": env,
                               "settings": vars(args), "results": rows})  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
